// LoRA on the GPT (engine/model/lora_*, engine/autograd/ops_lora.cpp): the adapters' gradients (dA, dB)
// against central differences of the float64 reference (gpt_reference adds (alpha / r) x A^T B^T on each
// part's rows), for the packed q/k/v projection with grouped-query heads, partial targets, separate
// projections and the GELU MLP; the base gets no gradient or moment storage; step 0 (B = 0) is the base model
// bit for bit; an f16 base computes with f16-rounded weights; dropout's mask is the documented hash,
// recomputed in the backward.
#include "codegen/kernels/dropout.hpp"
#include "engine/core/half.hpp"
#include "engine/graph/graph_executor.hpp"
#include "engine/model/gpt.hpp"
#include "engine/model/lora_sites.hpp"
#include "engine/ops/dropout.hpp"
#include "gpt_reference.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>
#include <random>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
using model::GptConfig;

namespace {

vk::Context& ctx() {
  static auto context = vk::Context::create({.persistentPipelineCache = false});
  return *context;
}

constexpr uint32_t kBatch = 2, kT = 8;

// Llama's layout at test size: RMSNorm, SwiGLU, RoPE, 4 heads sharing 2 KV heads of 4 (an odd MLP width).
GptConfig llama(model::LoraTargets targets = model::LoraTargets::all()) {
  GptConfig c;
  c.vocab = 29;
  c.context = 10;
  c.layers = 2;
  c.dim = 16;
  c.heads = 4;
  c.kvHeads = 2;
  c.hidden = 20;
  c.norm = model::NormKind::RMSNorm;
  c.mlp = model::MlpKind::SwiGLU;
  c.rope = true;
  c.bias = model::BiasPlacement::Qkv;
  c.family = model::Family::Qwen2;
  c.lora = {2, 3.0f, 0.0f, targets, model::BaseStorage::F32};
  return c;
}

using Values = std::map<std::string, std::vector<float>>;

// Every tensor of the model (frozen and adapters) random: norm gains near 1, the rest in [-0.4, 0.4], B too
// (a zero B would leave dA zero).
Values randomValues(model::Gpt& m) {
  Values v;
  const auto fill = [&](const std::string& name, uint32_t n) {
    std::vector<float> x = test::randomFloats(n, -0.4f, 0.4f);
    if (name.find("ln") != std::string::npos && name.ends_with(".weight"))
      for (float& g : x)
        g = 1.0f + 0.5f * g;
    v[name] = x;
  };
  for (const auto& f : m.frozen())
    fill(f.name, f.elements);
  for (const auto& p : m.parameters())
    fill(p.name, p.elements);
  return v;
}

void upload(model::Gpt& m, const Values& v) {
  for (const auto& f : m.frozen())
    model::FrozenStore::upload(ctx(), f, v.at(f.name));
  for (const auto& p : m.parameters())
    ctx().uploadVector(p.data, v.at(p.name));
}

struct Inputs {
  std::vector<int32_t> tokens, targets;
};
Inputs randomInputs(uint32_t vocab) {
  Inputs in;
  std::uniform_int_distribution<int32_t> dist(0, int32_t(vocab) - 1);
  for (uint32_t i = 0; i < kBatch * kT; ++i) {
    in.tokens.push_back(dist(test::rng()));
    in.targets.push_back(dist(test::rng()));
  }
  return in;
}

struct Buffers {
  vk::Buffer tokens, targets, loss;
  explicit Buffers(const Inputs& in)
      : tokens(ctx().buffer(in.tokens.size() * 4, "tokens")),
        targets(ctx().buffer(in.targets.size() * 4, "targets")), loss(ctx().buffer(4, "loss")) {
    ctx().uploadVector(tokens, in.tokens);
    ctx().uploadVector(targets, in.targets);
  }
};

struct Result {
  float loss = 0;
  Values grads;
};

Result forwardBackward(model::Gpt& m, const Inputs& in) {
  Buffers b(in);
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  m.forwardBackward(exec, arena, b.tokens.range(), b.targets.range(), kBatch, kT, b.loss.range(), 1.0f);
  exec.flush();
  Result r;
  r.loss = ctx().downloadVector<float>(b.loss, 1)[0];
  for (auto& p : m.parameters())
    r.grads[p.name] = ctx().downloadVector<float>(p.grad, p.elements);
  return r;
}

std::vector<float> logits(model::Gpt& m, const Inputs& in) {
  Buffers b(in);
  vk::Buffer out = ctx().buffer(4ull * kBatch * kT * m.config().vocab, "logits");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  m.forward(exec, arena, b.tokens.range(), kBatch, kT, out.range());
  exec.flush();
  return ctx().downloadVector<float>(out, size_t(kBatch) * kT * m.config().vocab);
}

test::ParamMap toDouble(const Values& v) {
  test::ParamMap d;
  for (const auto& [k, x] : v)
    d[k] = std::vector<double>(x.begin(), x.end());
  return d;
}

// The loss against the reference (relative 1e-5) and 6 random entries of every adapter's gradient against
// central differences (h = 1e-4) of the float64 loss, within 1e-4 |fd| + 1e-5 max|g of the adapter|.
void gradientCheck(const GptConfig& config) {
  INFO(config.describe() << ", seed " << test::testSeed());
  model::Gpt m(ctx(), config, 3);
  const Values values = randomValues(m);
  upload(m, values);
  const Inputs in = randomInputs(config.vocab);
  const Result r = forwardBackward(m, in);
  test::ParamMap ref = toDouble(values);
  const auto loss = [&] { return test::gptReferenceLoss(config, ref, in.tokens, in.targets, kBatch, kT); };
  CHECK(std::abs(r.loss - loss()) <= 1e-5 * std::abs(loss()));
  REQUIRE_FALSE(r.grads.empty());
  for (const auto& [name, g] : r.grads) {
    CHECK(name.find(".lora_") != std::string::npos); // only adapters are trainable
    double gmax = 0;
    for (float x : g)
      gmax = std::max(gmax, double(std::abs(x)));
    REQUIRE(std::isfinite(gmax));
    REQUIRE(gmax > 0);
    std::vector<double>& v = ref.at(name);
    for (int s = 0; s < 6; ++s) {
      const size_t i = std::uniform_int_distribution<size_t>(0, v.size() - 1)(test::rng());
      const double saved = v[i], h = 1e-4;
      v[i] = saved + h;
      const double up = loss();
      v[i] = saved - h;
      const double down = loss();
      v[i] = saved;
      const double fd = (up - down) / (2 * h);
      INFO(name << "[" << i << "]: gpu " << g[i] << ", finite difference " << fd);
      CHECK(std::abs(double(g[i]) - fd) <= 1e-4 * std::abs(fd) + 1e-5 * gmax);
    }
  }
}

} // namespace

TEST_CASE("LoRA gradient check: every projection, q/k/v parts of a packed grouped-query projection",
          "[model][lora][gradcheck]") {
  gradientCheck(llama());
}

TEST_CASE("LoRA gradient check: q and v only (two parts of the packed projection), and down",
          "[model][lora][gradcheck]") {
  gradientCheck(llama(model::parseLoraTargets("q_proj,v_proj,down_proj")));
}

TEST_CASE("LoRA gradient check: separate q, k, v projections; k and o", "[model][lora][gradcheck]") {
  GptConfig c = llama(model::parseLoraTargets("k,o,up"));
  c.packedQkv = false;
  gradientCheck(c);
}

TEST_CASE("LoRA gradient check: GPT-2 layout (LayerNorm, GELU MLP as up and down, learned positions)",
          "[model][lora][gradcheck]") {
  GptConfig c = llama(model::parseLoraTargets("q,v,up,down"));
  c.norm = model::NormKind::LayerNorm;
  c.mlp = model::MlpKind::Gelu;
  c.rope = false;
  c.bias = model::BiasPlacement::All;
  c.family = model::Family::Gpt2;
  c.kvHeads = 0;
  c.hidden = 0;
  gradientCheck(c);
}

TEST_CASE(
    "LoRA: the base is frozen (no gradient or moments), and with B = 0 the model is the base bit for bit",
    "[model][lora]") {
  GptConfig base = llama();
  base.lora = {};
  GptConfig adapted = llama();
  model::Gpt full(ctx(), base, 5), lora(ctx(), adapted, 5);
  // The trainable parameters are the adapters, two per site and layer; the base holds every tensor of the
  // full model by name and shape.
  const auto sites = model::loraSites(adapted);
  REQUIRE(lora.parameters().size() == 2 * sites.size() * adapted.layers);
  uint64_t trainable = 0;
  for (const auto& p : lora.parameters())
    trainable += p.elements;
  uint64_t grouped = 0;
  for (const auto& g : lora.parameterGroups())
    grouped += g.elements;
  CHECK(grouped < trainable + 64 * lora.parameters().size()); // padding only: nothing of the base
  REQUIRE(lora.frozen().size() == full.parameters().size());
  for (size_t i = 0; i < full.parameters().size(); ++i) {
    CHECK(lora.frozen()[i].name == full.parameters()[i].name);
    CHECK(lora.frozen()[i].shape == full.parameters()[i].shape);
  }
  // Same base values; the adapters as initialised (A uniform, B zero).
  Values values;
  for (const auto& p : full.parameters())
    values[p.name] = test::randomFloats(p.elements, -0.3f, 0.3f);
  for (const auto& p : full.parameters())
    ctx().uploadVector(p.data, values.at(p.name));
  for (const auto& f : lora.frozen())
    model::FrozenStore::upload(ctx(), f, values.at(f.name));
  for (const auto& p : lora.parameters()) {
    const std::vector<float> a = ctx().downloadVector<float>(p.data, p.elements);
    const float bound = 1.0f / std::sqrt(float(p.shape[1]));
    for (float x : a)
      CHECK((p.name.find("lora_B") != std::string::npos ? x == 0.0f : (std::abs(x) <= bound && x != 0.0f)));
  }
  const Inputs in = randomInputs(base.vocab);
  const std::vector<float> a = logits(full, in), b = logits(lora, in);
  CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
  // A backward touches no base tensor.
  forwardBackward(lora, in);
  for (const auto& f : lora.frozen())
    CHECK(ctx().downloadVector<float>(f.data, f.elements) == values.at(f.name));
}

TEST_CASE("LoRA: an f16 base computes with its f16-rounded weights", "[model][lora]") {
  GptConfig c = llama();
  c.lora.base = model::BaseStorage::F16;
  model::Gpt m(ctx(), c, 9);
  Values values = randomValues(m);
  upload(m, values);
  for (const auto& f : m.frozen()) {
    const bool matrix = f.shape.size() == 2;
    CHECK(f.storage == (matrix ? model::BaseStorage::F16 : model::BaseStorage::F32));
    if (matrix)
      for (float& x : values[f.name])
        x = halfToFloat(floatToHalf(x));
  }
  const Inputs in = randomInputs(c.vocab);
  const Result r = forwardBackward(m, in);
  const double ref = test::gptReferenceLoss(c, toDouble(values), in.tokens, in.targets, kBatch, kT);
  CHECK(std::abs(r.loss - ref) <= 1e-5 * std::abs(ref));
}

TEST_CASE("LoRA dropout: the mask is the documented hash, scaled by 1 / (1 - p), and the backward reuses it",
          "[model][lora]") {
  const uint32_t n = 3001, stream = 7, step = 41;
  const float p = 0.3f;
  vk::Buffer counter = ctx().buffer(4, "counter"), x = ctx().buffer(4 * n, "x"), y = ctx().buffer(4 * n, "y"),
             dx = ctx().buffer(4 * n, "dx");
  const std::vector<float> xs = test::randomFloats(n), dys = test::randomFloats(n),
                           dx0 = test::randomFloats(n);
  ctx().uploadVector(counter, std::vector<uint32_t>{step - 1});
  ctx().uploadVector(x, xs);
  ctx().uploadVector(y, std::vector<float>(n, test::poisonF32()));
  ctx().uploadVector(dx, dx0);
  ops::ImmediateExecutor exec(ctx());
  ops::dropoutAdvance(exec, counter.range());
  const ops::DropoutArgs args{counter.range(), stream, p};
  ops::dropoutForward(exec, args, x.range(), y.range(), n, codegen::Elem::F32);
  vk::Buffer dy = ctx().buffer(4 * n, "dy");
  ctx().uploadVector(dy, dys);
  ops::dropoutBackward(exec, args, dy.range(), dx.range(), n, true);
  exec.flush();
  const std::vector<float> got = ctx().downloadVector<float>(y, n), grad = ctx().downloadVector<float>(dx, n);
  const uint32_t threshold = ops::dropoutThreshold(p);
  const float scale = float(1.0 / (1.0 - double(p)));
  uint32_t kept = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const bool keep = codegen::dropoutHash(i, step, stream) >= threshold;
    kept += keep ? 1 : 0;
    CHECK(got[i] == (keep ? xs[i] * scale : 0.0f));
    CHECK(grad[i] == dx0[i] + (keep ? dys[i] * scale : 0.0f));
  }
  CHECK(std::abs(double(kept) / n - (1.0 - p)) < 0.04);
  CHECK(codegen::dropoutHash(5, step, stream) != codegen::dropoutHash(5, step + 1, stream));
}

TEST_CASE("LoRA dropout in the model: training runs draw new masks, evaluation has none", "[model][lora]") {
  GptConfig c = llama();
  c.lora.dropout = 0.5f;
  model::Gpt m(ctx(), c, 11);
  upload(m, randomValues(m));
  const Inputs in = randomInputs(c.vocab);
  const float first = forwardBackward(m, in).loss, second = forwardBackward(m, in).loss;
  CHECK(m.dropoutStep() == 2);
  CHECK(first != second);
  m.setDropoutStep(0);
  CHECK(forwardBackward(m, in).loss == first); // the same counter draws the same mask
  GptConfig plain = c;
  plain.lora.dropout = 0;
  model::Gpt n(ctx(), plain, 11);
  Values v;
  for (const auto& f : m.frozen())
    v[f.name] = ctx().downloadVector<float>(f.data, f.elements);
  for (const auto& p : m.parameters())
    v[p.name] = ctx().downloadVector<float>(p.data, p.elements);
  upload(n, v);
  const std::vector<float> a = logits(m, in), b = logits(n, in);
  CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

TEST_CASE("LoRA configurations the model cannot build are refused naming why", "[model][lora]") {
  GptConfig c = llama();
  c.lora.rank = 9; // k_proj is 2 kv heads x 4 = 8 rows
  CHECK_THAT(model::loraIncompatibility(c),
             ContainsSubstring("LoRA rank 9 is above the width of k_proj ([8, 16])"));
  CHECK_THROWS_WITH(model::Gpt(ctx(), c, 1), ContainsSubstring("rank 9"));
  c = llama();
  c.mlp = model::MlpKind::Gelu;
  c.hidden = 0;
  CHECK_THAT(model::loraIncompatibility(c), ContainsSubstring("LoRA target 'gate' (gate_proj)"));
  c = llama();
  c.lora.alpha = 0;
  CHECK_THAT(model::loraIncompatibility(c), ContainsSubstring("alpha 0 must be above 0"));
  c = llama();
  c.lora.dropout = 1;
  CHECK_THAT(model::loraIncompatibility(c), ContainsSubstring("dropout 1 is outside [0, 1)"));
  c = llama();
  c.precision = model::Precision::BF16;
  c.lora.base = codegen::Elem::F16;
  CHECK_THAT(model::loraIncompatibility(c),
             ContainsSubstring("a LoRA base stored in f16 under bf16 GEMM operands"));
  c.lora.base = codegen::Elem::BF16;
  CHECK(model::loraIncompatibility(c).empty());
  c.paramDtype = codegen::Elem::BF16;
  CHECK_THAT(model::loraIncompatibility(c), ContainsSubstring("the parameter dtype is for full training"));
  CHECK(model::defaultBaseStorage(model::Precision::BF16) == codegen::Elem::BF16);
  CHECK(model::defaultBaseStorage(model::Precision::Mixed) == codegen::Elem::F16);
  CHECK(model::defaultBaseStorage(model::Precision::F32) == codegen::Elem::F32);
  CHECK_THROWS_WITH(model::parseLoraTargets("q,attn"), ContainsSubstring("LoRA target 'attn' is none of"));
  CHECK_THROWS_WITH(model::parseLoraTargets("q,q_proj"), ContainsSubstring("named twice"));
  CHECK(model::formatLoraTargets(model::parseLoraTargets("down_proj,q")) == "q,down");
}
