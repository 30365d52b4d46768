#include "engine/train/config.hpp"

#include "engine/model/lora_sites.hpp"
#include "engine/train/architecture_json.hpp"
#include "engine/train/config_fields.hpp"
#include "engine/train/lora_json.hpp"

#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <set>
#include <stdexcept>

namespace helios::train {

namespace {

using json_keys::readEnum;
using json_keys::refuseUnknown;
using G = model::GptConfig;
using T = TrainConfig;

// GptConfig::paramDtype's spellings (f16 parameters are not supported).
constexpr EnumName<codegen::Elem> kParamDtypeNames[] = {{codegen::Elem::F32, "f32"},
                                                        {codegen::Elem::BF16, "bf16"}};

// Every plain key once: the "gpt" object's (G) and the training configuration's (T), in the order they are
// read. The enums, the architecture's keys (architecture_json), "lora" and "gpt" itself are apart.
const config_fields::Field<G, T> kFields[] = {
    {"vocab", &G::vocab},
    {"context", &G::context},
    {"layers", &G::layers},
    {"dim", &G::dim},
    {"heads", &G::heads},
    {"kv_heads", &G::kvHeads},
    {"mlp_mult", &G::mlpMult},
    {"rope", &G::rope},
    {"packed_qkv", &G::packedQkv},
    {"fused_attention", &G::fusedAttention},
    {"pack", &G::pack},
    {"end_of_text", &G::endOfText},
    {"packed_attention", &G::packedAttention},
    {"fused_casts", &G::fusedCasts},
    {"group_casts", &G::groupCasts},
    {"norm_half_grads", &G::normHalfGrads},
    {"residual_norms", &G::residualNorms},
    {"f16_logits", &G::f16Logits},
    {"f16_grads", &G::f16Grads},
    {"f16_hidden", &G::f16Hidden},
    {"chunked_loss", &G::chunkedLoss},
    {"norm_eps", &G::normEps},
    {"checkpoint_activations", &G::checkpointActivations},
    {"checkpoint_attention", &G::checkpointAttention},
    {"model", &T::model},
    {"tokenizer", &T::tokenizer},
    {"data", &T::data},
    {"data_dir", &T::dataDir},
    {"chat_data", &T::chatData},
    {"chat_eval_data", &T::chatEvalData},
    {"chat_template", &T::chatTemplate},
    {"eval_fraction", &T::evalFraction},
    {"skip_bad_lines", &T::skipBadLines},
    {"batch", &T::batch},
    {"seq_len", &T::seqLen},
    {"grad_accum", &T::gradAccum},
    {"steps", &T::steps},
    {"lr", &T::lr},
    {"min_lr_frac", &T::minLrFrac},
    {"warmup", &T::warmup},
    {"beta1", &T::beta1},
    {"beta2", &T::beta2},
    {"eps", &T::eps},
    {"weight_decay", &T::weightDecay},
    {"grad_clip", &T::gradClip},
    {"loss_scale", &T::lossScale},
    {"scale_growth_interval", &T::scaleGrowthInterval},
    {"seed", &T::seed},
    {"eval_every", &T::evalEvery},
    {"eval_batches", &T::evalBatches},
    {"checkpoint_every", &T::checkpointEvery},
    {"log_every", &T::logEvery},
    {"time_every", &T::timeEvery},
    {"sync_every", &T::syncEvery},
    {"profile", &T::profile},
    {"memory_plan", &T::memoryPlan},
    {"keep", &T::keepCheckpoints},
    {"nonfinite_limit", &T::nonFiniteLimit},
};

} // namespace

const char* precisionName(model::Precision p) {
  return enumName(model::kPrecisionNames, p);
}

model::Precision parsePrecision(const std::string& name) {
  return parseEnum(model::kPrecisionNames, name, "precision");
}

codegen::Elem parseParamDtype(const std::string& name) {
  return parseEnum(kParamDtypeNames, name, "parameter dtype");
}

nlohmann::json toJson(const model::GptConfig& c) {
  nlohmann::json j{{"norm", enumName(model::kNormNames, c.norm)},
                   {"mlp", enumName(model::kMlpNames, c.mlp)},
                   {"precision", enumName(model::kPrecisionNames, c.precision)},
                   {"param_dtype", enumName(kParamDtypeNames, c.paramDtype)}};
  config_fields::writeFields(kFields, c, j);
  architectureToJson(c, j);
  if (c.lora.enabled()) j["lora"] = loraToJson(c.lora);
  return j;
}

void fromJson(const nlohmann::json& j, model::GptConfig& c) {
  std::set<std::string> known = architectureKeys();
  known.merge(config_fields::fieldKeys<G>(kFields));
  known.insert({"norm", "mlp", "precision", "param_dtype", "lora"});
  refuseUnknown(j, known, "gpt config");
  architectureFromJson(j, c);
  if (j.contains("lora")) c.lora = loraFromJson(j.at("lora"));
  config_fields::readFields(kFields, j, c);
  readEnum(j, "norm", model::kNormNames, c.norm);
  readEnum(j, "mlp", model::kMlpNames, c.mlp);
  readEnum(j, "precision", model::kPrecisionNames, c.precision);
  readEnum(j, "param_dtype", kParamDtypeNames, c.paramDtype);
}

std::string describeGpt(const model::GptConfig& c) {
  return fmt::format("{}L {}d {}h T{} V{} {} {}{} {}{}{}", c.layers, c.dim, c.heads, c.context, c.vocab,
                     enumName(model::kNormNames, c.norm), enumName(model::kMlpNames, c.mlp),
                     c.rope ? " rope" : "", enumName(model::kPrecisionNames, c.precision),
                     c.family == model::Family::Gpt2 ? "" : std::string(" ") + model::familyName(c.family),
                     c.paramDtype == codegen::Elem::BF16 ? " bf16-params" : "");
}

nlohmann::json toJson(const TrainConfig& c) {
  nlohmann::json j{{"gpt", toJson(c.gpt)}};
  config_fields::writeFields(kFields, c, j);
  return j;
}

void fromJson(const nlohmann::json& j, TrainConfig& c) {
  std::set<std::string> known = config_fields::fieldKeys<T>(kFields);
  known.insert("gpt");
  refuseUnknown(j, known, "training config");
  config_fields::readFields(kFields, j, c);
  if (j.contains("gpt")) fromJson(j.at("gpt"), c.gpt);
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

namespace {

// A preset: the configuration keys it sets, as a --config file would set them.
struct Preset {
  const char* name;
  const char* keys;
};
constexpr Preset kPresets[] = {
    // byte-level, small enough for lavapipe
    {"tiny",
     R"({"model": "gpt", "tokenizer": "byte", "seq_len": 128, "batch": 8, "lr": 1e-3, "warmup": 20, "steps": 200, "eval_every": 50, "gpt": {"vocab": 256, "layers": 4, "dim": 128, "heads": 4, "context": 128}})"},
    // the benchmark configuration (nanoGPT's shakespeare-char shape)
    {"char",
     R"({"model": "gpt", "tokenizer": "char", "seq_len": 256, "batch": 64, "lr": 1e-3, "warmup": 100, "steps": 5000, "beta2": 0.99, "eval_every": 250, "gpt": {"vocab": 0, "layers": 6, "dim": 384, "heads": 6, "context": 256}})"},
    // for GPUs: byte-level data in GPT-2's padded 50304 vocabulary
    {"gpt2-small",
     R"({"model": "gpt", "tokenizer": "byte", "seq_len": 1024, "batch": 16, "lr": 6e-4, "warmup": 700, "steps": 20000, "eval_every": 500, "gpt": {"vocab": 50304, "layers": 12, "dim": 768, "heads": 12, "context": 1024, "precision": "mixed"}})"},
};

} // namespace

const char* presetNames() {
  static const std::string names = [] {
    std::string s;
    for (const Preset& p : kPresets)
      s += std::string(s.empty() ? "" : ", ") + p.name;
    return s;
  }();
  return names.c_str();
}

void applyPreset(TrainConfig& c, const std::string& name) {
  for (const Preset& p : kPresets)
    if (name == p.name) return fromJson(nlohmann::json::parse(p.keys), c);
  throw std::invalid_argument(fmt::format("unknown preset '{}' ({})", name, presetNames()));
}

} // namespace helios::train
