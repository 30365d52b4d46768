#include "engine/train/config.hpp"

#include "engine/model/lora_sites.hpp"
#include "engine/train/architecture_json.hpp"
#include "engine/train/json_keys.hpp"
#include "engine/train/lora_json.hpp"

#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <set>
#include <stdexcept>
#include <type_traits>

namespace helios::train {

namespace {

using json_keys::readKey;
using json_keys::refuseUnknown;

// Floats as their shortest decimal form (0.9, not 0.8999999761581421); read back, they give the same bits.
double shortest(float v) {
  return std::stod(fmt::format("{}", v));
}

} // namespace

const char* precisionName(model::Precision p) {
  switch (p) {
  case model::Precision::F32:
    return "f32";
  case model::Precision::Mixed:
    return "mixed";
  case model::Precision::BF16:
    return "bf16";
  }
  return "?";
}

model::Precision parsePrecision(const std::string& name) {
  for (model::Precision p : {model::Precision::F32, model::Precision::Mixed, model::Precision::BF16})
    if (name == precisionName(p)) return p;
  throw std::invalid_argument(fmt::format("precision '{}' (f32, mixed or bf16)", name));
}

codegen::Elem parseParamDtype(const std::string& name) {
  if (name == "f32") return codegen::Elem::F32;
  if (name == "bf16") return codegen::Elem::BF16;
  throw std::invalid_argument(fmt::format("parameter dtype '{}' (f32 or bf16)", name));
}

nlohmann::json toJson(const model::GptConfig& c) {
  nlohmann::json j{{"vocab", c.vocab},
                   {"context", c.context},
                   {"layers", c.layers},
                   {"dim", c.dim},
                   {"heads", c.heads},
                   {"kv_heads", c.kvHeads},
                   {"mlp_mult", c.mlpMult},
                   {"norm", c.norm == model::NormKind::LayerNorm ? "layernorm" : "rmsnorm"},
                   {"mlp", c.mlp == model::MlpKind::Gelu ? "gelu" : "swiglu"},
                   {"rope", c.rope},
                   {"packed_qkv", c.packedQkv},
                   {"fused_attention", c.fusedAttention},
                   {"pack", c.pack},
                   {"end_of_text", c.endOfText},
                   {"packed_attention", c.packedAttention},
                   {"fused_casts", c.fusedCasts},
                   {"group_casts", c.groupCasts},
                   {"norm_half_grads", c.normHalfGrads},
                   {"residual_norms", c.residualNorms},
                   {"f16_logits", c.f16Logits},
                   {"f16_grads", c.f16Grads},
                   {"f16_hidden", c.f16Hidden},
                   {"chunked_loss", c.chunkedLoss},
                   {"norm_eps", shortest(c.normEps)},
                   {"checkpoint_activations", c.checkpointActivations},
                   {"checkpoint_attention", c.checkpointAttention},
                   {"precision", precisionName(c.precision)},
                   {"param_dtype", codegen::elemName(c.paramDtype)}};
  architectureToJson(c, j);
  if (c.lora.enabled()) j["lora"] = loraToJson(c.lora);
  return j;
}

void fromJson(const nlohmann::json& j, model::GptConfig& c) {
  std::set<std::string> known = architectureKeys();
  known.insert({"vocab",
                "context",
                "layers",
                "dim",
                "heads",
                "kv_heads",
                "mlp_mult",
                "norm",
                "mlp",
                "rope",
                "packed_qkv",
                "fused_attention",
                "pack",
                "end_of_text",
                "packed_attention",
                "fused_casts",
                "group_casts",
                "norm_half_grads",
                "residual_norms",
                "f16_logits",
                "f16_grads",
                "f16_hidden",
                "chunked_loss",
                "norm_eps",
                "checkpoint_activations",
                "checkpoint_attention",
                "precision",
                "param_dtype",
                "lora"});
  refuseUnknown(j, known, "gpt config");
  architectureFromJson(j, c);
  if (j.contains("lora")) c.lora = loraFromJson(j.at("lora"));
  readKey(j, "vocab", c.vocab);
  readKey(j, "context", c.context);
  readKey(j, "layers", c.layers);
  readKey(j, "dim", c.dim);
  readKey(j, "heads", c.heads);
  readKey(j, "kv_heads", c.kvHeads);
  readKey(j, "mlp_mult", c.mlpMult);
  readKey(j, "rope", c.rope);
  readKey(j, "packed_qkv", c.packedQkv);
  readKey(j, "fused_attention", c.fusedAttention);
  readKey(j, "pack", c.pack);
  readKey(j, "end_of_text", c.endOfText);
  readKey(j, "packed_attention", c.packedAttention);
  readKey(j, "fused_casts", c.fusedCasts);
  readKey(j, "group_casts", c.groupCasts);
  readKey(j, "norm_half_grads", c.normHalfGrads);
  readKey(j, "residual_norms", c.residualNorms);
  readKey(j, "f16_logits", c.f16Logits);
  readKey(j, "f16_grads", c.f16Grads);
  readKey(j, "f16_hidden", c.f16Hidden);
  readKey(j, "chunked_loss", c.chunkedLoss);
  readKey(j, "norm_eps", c.normEps);
  readKey(j, "checkpoint_activations", c.checkpointActivations);
  readKey(j, "checkpoint_attention", c.checkpointAttention);
  std::string s;
  if (j.contains("norm")) {
    readKey(j, "norm", s);
    if (s == "layernorm")
      c.norm = model::NormKind::LayerNorm;
    else if (s == "rmsnorm")
      c.norm = model::NormKind::RMSNorm;
    else
      throw std::invalid_argument(fmt::format("gpt config: norm '{}' (layernorm or rmsnorm)", s));
  }
  if (j.contains("mlp")) {
    readKey(j, "mlp", s);
    if (s == "gelu")
      c.mlp = model::MlpKind::Gelu;
    else if (s == "swiglu")
      c.mlp = model::MlpKind::SwiGLU;
    else
      throw std::invalid_argument(fmt::format("gpt config: mlp '{}' (gelu or swiglu)", s));
  }
  if (j.contains("precision")) {
    readKey(j, "precision", s);
    c.precision = parsePrecision(s);
  }
  if (j.contains("param_dtype")) {
    readKey(j, "param_dtype", s);
    c.paramDtype = parseParamDtype(s);
  }
}

std::string describeGpt(const model::GptConfig& c) {
  return fmt::format("{}L {}d {}h T{} V{} {} {}{} {}{}{}", c.layers, c.dim, c.heads, c.context, c.vocab,
                     c.norm == model::NormKind::LayerNorm ? "layernorm" : "rmsnorm",
                     c.mlp == model::MlpKind::Gelu ? "gelu" : "swiglu", c.rope ? " rope" : "",
                     precisionName(c.precision),
                     c.family == model::Family::Gpt2 ? "" : std::string(" ") + model::familyName(c.family),
                     c.paramDtype == codegen::Elem::BF16 ? " bf16-params" : "");
}

nlohmann::json toJson(const TrainConfig& c) {
  return {{"model", c.model},
          {"gpt", toJson(c.gpt)},
          {"tokenizer", c.tokenizer},
          {"data", c.data},
          {"data_dir", c.dataDir},
          {"chat_data", c.chatData},
          {"chat_eval_data", c.chatEvalData},
          {"chat_template", c.chatTemplate},
          {"eval_fraction", shortest(c.evalFraction)},
          {"skip_bad_lines", c.skipBadLines},
          {"batch", c.batch},
          {"seq_len", c.seqLen},
          {"grad_accum", c.gradAccum},
          {"steps", c.steps},
          {"lr", shortest(c.lr)},
          {"min_lr_frac", shortest(c.minLrFrac)},
          {"warmup", c.warmup},
          {"beta1", shortest(c.beta1)},
          {"beta2", shortest(c.beta2)},
          {"eps", shortest(c.eps)},
          {"weight_decay", shortest(c.weightDecay)},
          {"grad_clip", shortest(c.gradClip)},
          {"loss_scale", shortest(c.lossScale)},
          {"scale_growth_interval", c.scaleGrowthInterval},
          {"seed", c.seed},
          {"eval_every", c.evalEvery},
          {"eval_batches", c.evalBatches},
          {"checkpoint_every", c.checkpointEvery},
          {"log_every", c.logEvery},
          {"time_every", c.timeEvery},
          {"sync_every", c.syncEvery},
          {"profile", c.profile},
          {"memory_plan", c.memoryPlan},
          {"keep", c.keepCheckpoints},
          {"nonfinite_limit", c.nonFiniteLimit}};
}

void fromJson(const nlohmann::json& j, TrainConfig& c) {
  refuseUnknown(j,
                {"model",
                 "gpt",
                 "tokenizer",
                 "data",
                 "batch",
                 "seq_len",
                 "grad_accum",
                 "steps",
                 "lr",
                 "min_lr_frac",
                 "warmup",
                 "beta1",
                 "beta2",
                 "eps",
                 "weight_decay",
                 "grad_clip",
                 "loss_scale",
                 "scale_growth_interval",
                 "seed",
                 "eval_every",
                 "eval_batches",
                 "checkpoint_every",
                 "log_every",
                 "time_every",
                 "sync_every",
                 "profile",
                 "memory_plan",
                 "keep",
                 "nonfinite_limit",
                 "data_dir",
                 "chat_data",
                 "chat_eval_data",
                 "chat_template",
                 "eval_fraction",
                 "skip_bad_lines"},
                "training config");
  readKey(j, "model", c.model);
  if (j.contains("gpt")) fromJson(j.at("gpt"), c.gpt);
  readKey(j, "tokenizer", c.tokenizer);
  readKey(j, "data", c.data);
  readKey(j, "data_dir", c.dataDir);
  readKey(j, "chat_data", c.chatData);
  readKey(j, "chat_eval_data", c.chatEvalData);
  readKey(j, "chat_template", c.chatTemplate);
  readKey(j, "eval_fraction", c.evalFraction);
  readKey(j, "skip_bad_lines", c.skipBadLines);
  readKey(j, "batch", c.batch);
  readKey(j, "seq_len", c.seqLen);
  readKey(j, "grad_accum", c.gradAccum);
  readKey(j, "steps", c.steps);
  readKey(j, "lr", c.lr);
  readKey(j, "min_lr_frac", c.minLrFrac);
  readKey(j, "warmup", c.warmup);
  readKey(j, "beta1", c.beta1);
  readKey(j, "beta2", c.beta2);
  readKey(j, "eps", c.eps);
  readKey(j, "weight_decay", c.weightDecay);
  readKey(j, "grad_clip", c.gradClip);
  readKey(j, "loss_scale", c.lossScale);
  readKey(j, "scale_growth_interval", c.scaleGrowthInterval);
  readKey(j, "seed", c.seed);
  readKey(j, "eval_every", c.evalEvery);
  readKey(j, "eval_batches", c.evalBatches);
  readKey(j, "checkpoint_every", c.checkpointEvery);
  readKey(j, "log_every", c.logEvery);
  readKey(j, "time_every", c.timeEvery);
  readKey(j, "sync_every", c.syncEvery);
  readKey(j, "profile", c.profile);
  readKey(j, "memory_plan", c.memoryPlan);
  readKey(j, "keep", c.keepCheckpoints);
  readKey(j, "nonfinite_limit", c.nonFiniteLimit);
}

namespace {

[[noreturn]] void refuse(const std::string& m) {
  throw std::invalid_argument(m);
}

void atLeastOne(const char* key, uint64_t v) {
  if (v == 0) refuse(fmt::format("{} must be at least 1, got 0", key));
}

// Finite and within [lo, hi] (an open end where `openHi`); nan and inf never pass.
void inRange(const char* key, float v, double lo, double hi, bool openHi, const char* range) {
  if (!std::isfinite(v) || v < lo || v > hi || (openHi && v >= hi))
    refuse(fmt::format("{} must be a finite number in {}, got {}", key, range, v));
}

void positive(const char* key, float v) {
  if (!std::isfinite(v) || !(v > 0)) refuse(fmt::format("{} must be a finite number > 0, got {}", key, v));
}

void validateRopeScaling(const model::GptConfig& g) {
  const model::RopeScaling& r = g.ropeScaling;
  if (r.kind == model::RopeScalingKind::None) return;
  if (!g.rope) refuse("rope_scaling is set but the model has no RoPE");
  if (!std::isfinite(r.factor) || !(r.factor >= 1))
    refuse(fmt::format("rope_scaling factor must be a finite number >= 1, got {}", r.factor));
  if (!std::isfinite(r.lowFreqFactor) || !std::isfinite(r.highFreqFactor) || !(r.lowFreqFactor > 0) ||
      !(r.highFreqFactor > r.lowFreqFactor))
    refuse(fmt::format("rope_scaling needs 0 < low_freq_factor < high_freq_factor, got {} and {}",
                       r.lowFreqFactor, r.highFreqFactor));
  atLeastOne("rope_scaling original_context", r.originalContext);
}

void validateGpt(const model::GptConfig& g, uint32_t seqLen) {
  atLeastOne("layers", g.layers);
  atLeastOne("dim", g.dim);
  atLeastOne("heads", g.heads);
  atLeastOne("mlp_mult", g.mlpMult);
  if (g.headDim == 0 && g.dim % g.heads != 0)
    refuse(fmt::format("dim {} is not a multiple of heads {} (or give head_dim)", g.dim, g.heads));
  if (g.kvHeads != 0 && g.heads % g.kvHeads != 0)
    refuse(fmt::format("heads {} is not a multiple of kv_heads {}", g.heads, g.kvHeads));
  if (g.rope && g.headSize() % 2 != 0)
    refuse(fmt::format("RoPE needs an even head dim, not {}", g.headSize()));
  positive("norm_eps", g.normEps);
  if (!std::isfinite(g.ropeTheta) || !(g.ropeTheta > 1))
    refuse(fmt::format("rope_theta must be a finite number > 1, got {}", g.ropeTheta));
  validateRopeScaling(g);
  if (g.context != 0 && seqLen > g.context)
    refuse(fmt::format("seq_len {} exceeds the model context {} (set the context too: --context or "
                       "gpt.context)",
                       seqLen, g.context));
  if (g.slidingWindow != 0 && seqLen > g.slidingWindow)
    refuse(fmt::format("seq_len {} exceeds the model's sliding_window {}: sliding-window attention is not "
                       "supported (train with --seq-len {} or less)",
                       seqLen, g.slidingWindow, g.slidingWindow));
}

void validateChat(const TrainConfig& c) {
  inRange("eval_fraction", c.evalFraction, 0, 1, true, "[0, 1)");
  if (!c.chatTemplate.empty() && c.chatTemplate != "chatml" && c.chatTemplate != "llama3")
    refuse(fmt::format("chat_template '{}' (chatml, llama3, or empty for the tokenizer's)", c.chatTemplate));
  if (c.chat()) {
    if (!c.dataDir.empty()) refuse("chat_data and data_dir exclude each other");
    if (c.evalEvery > 0 && c.chatEvalData.empty() && c.evalFraction == 0)
      refuse(
          "chat data with evaluations (eval_every > 0) needs an evaluation set: chat_eval_data (--eval-data "
          "FILE) or eval_fraction > 0 (--eval-fraction)");
  } else if (!c.chatEvalData.empty() || !c.chatTemplate.empty() || c.skipBadLines) {
    refuse("chat_eval_data, chat_template and skip_bad_lines are for chat data (chat_data, --chat-data)");
  }
}

} // namespace

void TrainConfig::validate() const {
  if (model != "gpt" && model != "bigram") refuse(fmt::format("model '{}' (gpt or bigram)", model));
  if (tokenizer != "byte" && tokenizer != "char")
    refuse(fmt::format("tokenizer '{}' (byte or char)", tokenizer));
  atLeastOne("steps", steps);
  atLeastOne("batch", batch);
  atLeastOne("seq_len", seqLen);
  atLeastOne("grad_accum", gradAccum);
  atLeastOne("eval_batches", evalBatches);
  atLeastOne("log_every", logEvery);
  atLeastOne("scale_growth_interval", scaleGrowthInterval);
  positive("lr", lr);
  inRange("min_lr_frac", minLrFrac, 0, 1, false, "[0, 1]");
  inRange("beta1", beta1, 0, 1, true, "[0, 1)");
  inRange("beta2", beta2, 0, 1, true, "[0, 1)");
  positive("eps", eps);
  inRange("weight_decay", weightDecay, 0, std::numeric_limits<float>::max(), false, "[0, inf)");
  inRange("grad_clip", gradClip, 0, std::numeric_limits<float>::max(), false, "[0, inf) (0 = off)");
  inRange("loss_scale", lossScale, 0, std::numeric_limits<float>::max(), false, "[0, inf) (0 = automatic)");
  if (keepCheckpoints == 0 || keepCheckpoints > 1000000)
    refuse(fmt::format("keep must be in [1, 1000000], got {}", keepCheckpoints));
  atLeastOne("nonfinite_limit", nonFiniteLimit);
  validateChat(*this);
  if (model == "gpt") validateGpt(gpt, seqLen);
  if (model == "bigram" && gpt.lora.enabled())
    refuse("LoRA adapts a GPT's linear layers: the bigram model has none (--model gpt)");
  if (model == "gpt") {
    if (const std::string why = model::loraIncompatibility(gpt); !why.empty()) refuse(why);
  }
}

const char* presetNames() {
  return "tiny, char, gpt2-small";
}

void applyPreset(TrainConfig& c, const std::string& name) {
  if (name == "tiny") { // byte-level, small enough for lavapipe
    c.model = "gpt";
    c.tokenizer = "byte";
    c.gpt.vocab = 256;
    c.gpt.layers = 4;
    c.gpt.dim = 128;
    c.gpt.heads = 4;
    c.gpt.context = 128;
    c.seqLen = 128;
    c.batch = 8;
    c.lr = 1e-3f;
    c.warmup = 20;
    c.steps = 200;
    c.evalEvery = 50;
  } else if (name == "char") { // the benchmark configuration (nanoGPT's shakespeare-char shape)
    c.model = "gpt";
    c.tokenizer = "char";
    c.gpt.vocab = 0;
    c.gpt.layers = 6;
    c.gpt.dim = 384;
    c.gpt.heads = 6;
    c.gpt.context = 256;
    c.seqLen = 256;
    c.batch = 64;
    c.lr = 1e-3f;
    c.warmup = 100;
    c.steps = 5000;
    c.beta2 = 0.99f;
    c.evalEvery = 250;
  } else if (name == "gpt2-small") { // for GPUs: byte-level data in GPT-2's padded 50304 vocabulary
    c.model = "gpt";
    c.tokenizer = "byte";
    c.gpt.vocab = 50304;
    c.gpt.layers = 12;
    c.gpt.dim = 768;
    c.gpt.heads = 12;
    c.gpt.context = 1024;
    c.seqLen = 1024;
    c.batch = 16;
    c.lr = 6e-4f;
    c.warmup = 700;
    c.steps = 20000;
    c.evalEvery = 500;
    c.gpt.precision = model::Precision::Mixed;
  } else {
    throw std::invalid_argument(fmt::format("unknown preset '{}' ({})", name, presetNames()));
  }
}

} // namespace helios::train
