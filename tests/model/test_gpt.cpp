// The GPT model end to end on a tiny configuration: loss against the float64 reference forward
// (gpt_reference.*), every parameter's gradient against central finite differences of that reference, for the
// GPT-2 layout and the option variants; activation checkpointing bit-identical to no checkpointing; mixed
// precision close to f32; forward() logits; steady-state steps allocate nothing.
#include "engine/graph/graph_executor.hpp"
#include "engine/model/gpt.hpp"
#include "engine/model/rope_frequencies.hpp"
#include "engine/ops/elem_support.hpp"
#include "gpt_reference.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>
#include <random>

using namespace helios;
using model::GptConfig;

namespace {

vk::Context& ctx() {
  static auto context = vk::Context::create({.persistentPipelineCache = false});
  return *context;
}

bool f16Supported() {
  const auto& f = ctx().device().features();
  return f.shaderFloat16 && f.storageBuffer16BitAccess;
}

constexpr uint32_t kBatch = 2, kT = 8;

GptConfig tiny() {
  GptConfig c;
  c.vocab = 32;
  c.context = 10; // T = 8 < context: only the first T rows of wpe are used
  c.layers = 2;
  c.dim = 16;
  c.heads = 2;
  c.mlpMult = 4;
  return c;
}

GptConfig llamaLike() {
  GptConfig c = tiny();
  c.heads = 4; // head dim 4
  c.kvHeads = 2;
  c.norm = model::NormKind::RMSNorm;
  c.mlp = model::MlpKind::SwiGLU;
  c.rope = true;
  return c;
}

// Qwen2's layout (q/k/v biases only, an untied head) at an explicit head dim that is not dim / heads, an MLP
// width of its own and Llama 3's rescaled RoPE frequencies (a factor that moves the low frequencies within
// the 8 positions used: original context 16, so wavelengths above 16 / lowFreqFactor are divided).
GptConfig openModel() {
  GptConfig c = llamaLike();
  c.family = model::Family::Qwen2;
  c.headDim = 8; // 4 heads x 8 = 32 != dim 16
  c.hidden = 20;
  c.bias = model::BiasPlacement::Qkv;
  c.tiedHead = false;
  c.ropeTheta = 500.0;
  c.ropeScaling = {model::RopeScalingKind::Llama3, 4.0, 1.0, 4.0, 16};
  return c;
}

using FloatParams = std::map<std::string, std::vector<float>>;

// Random parameter values (norm gains near 1, everything else uniform), so that biases and norms matter.
FloatParams randomParams(model::Gpt& m) {
  FloatParams p;
  for (const auto& param : m.parameters()) {
    const bool gain = param.name.find("ln") != std::string::npos && param.name.ends_with(".weight");
    std::vector<float> v = test::randomFloats(param.elements, -0.4f, 0.4f);
    if (gain)
      for (float& x : v)
        x = 1.0f + 0.5f * x;
    p[param.name] = v;
  }
  return p;
}

test::ParamMap toDouble(const FloatParams& p) {
  test::ParamMap d;
  for (const auto& [k, v] : p)
    d[k] = std::vector<double>(v.begin(), v.end());
  return d;
}

struct Inputs {
  std::vector<int32_t> tokens, targets;
  std::vector<int32_t> positions; // given positions inside packed documents (empty: none)
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

struct Result {
  float loss = 0;
  FloatParams grads;
  uint32_t dispatches = 0; // of the forward and backward
};

// A fresh model with `params` uploaded, one forwardBackward of `batch` x `T` with ImmediateExecutor, grads
// read back.
Result run(const GptConfig& config, const FloatParams& params, const Inputs& in, float gradScale = 1.0f,
           uint32_t batch = kBatch, uint32_t T = kT) {
  model::Gpt m(ctx(), config, 7);
  for (auto& p : m.parameters())
    ctx().uploadVector(p.data, params.at(p.name));
  vk::Buffer tokens = ctx().buffer(in.tokens.size() * 4, "tokens"),
             targets = ctx().buffer(in.targets.size() * 4, "targets"),
             positions = ctx().buffer(std::max<size_t>(in.positions.size(), 1) * 4, "positions");
  ctx().uploadVector(tokens, in.tokens);
  ctx().uploadVector(targets, in.targets);
  if (!in.positions.empty()) ctx().uploadVector(positions, in.positions);
  vk::Buffer loss = ctx().buffer(4, "loss");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  m.forwardBackward(exec, arena, tokens.range(), targets.range(), batch, T, loss.range(), gradScale,
                    in.positions.empty() ? vk::BufferRange{} : positions.range());
  exec.flush();
  Result r;
  r.dispatches = exec.dispatches();
  r.loss = ctx().downloadVector<float>(loss, 1)[0];
  for (auto& p : m.parameters())
    r.grads[p.name] = ctx().downloadVector<float>(p.grad, p.elements);
  return r;
}

// Loss vs the reference (relative 1e-5) and, for every parameter, 4 random entries of the gradient vs central
// differences (h = 1e-4, float64) of the reference loss:
//   |g - fd| <= 1e-4 |fd| + 1e-5 max|g of that parameter| + 1e-6 max|g of the model|
// (the last term covers gradients that are exactly zero, e.g. the key bias under softmax shift invariance,
// where the GPU's f32 sums leave rounding residue: 1.1e-7 of the model's largest gradient with seed
// 13236590311788930983, over the 1e-7 this floor once was).
void gradientCheckWith(const GptConfig& config, const FloatParams& params, const Inputs& in) {
  INFO(config.describe() << ", seed " << test::testSeed());
  const Result r = run(config, params, in);
  test::ParamMap ref = toDouble(params);
  const double refLoss = test::gptReferenceLoss(config, ref, in.tokens, in.targets, kBatch, kT, in.positions);
  CHECK(std::abs(r.loss - refLoss) <= 1e-5 * std::abs(refLoss));
  const double h = 1e-4;
  double gall = 0; // the largest gradient entry of the model: an absolute floor for exactly-zero gradients
  for (const auto& [name, g] : r.grads)
    for (float x : g)
      gall = std::max(gall, double(std::abs(x)));
  for (auto& [name, values] : ref) {
    const std::vector<float>& g = r.grads.at(name);
    double gmax = 0;
    for (float x : g)
      gmax = std::max(gmax, double(std::abs(x)));
    REQUIRE(std::isfinite(gmax));
    for (int s = 0; s < 4; ++s) {
      const size_t i = std::uniform_int_distribution<size_t>(0, values.size() - 1)(test::rng());
      const double saved = values[i];
      values[i] = saved + h;
      const double up = test::gptReferenceLoss(config, ref, in.tokens, in.targets, kBatch, kT, in.positions);
      values[i] = saved - h;
      const double down =
          test::gptReferenceLoss(config, ref, in.tokens, in.targets, kBatch, kT, in.positions);
      values[i] = saved;
      const double fd = (up - down) / (2 * h);
      INFO(name << "[" << i << "]: gpu " << g[i] << ", finite difference " << fd);
      CHECK(std::abs(double(g[i]) - fd) <= 1e-4 * std::abs(fd) + 1e-5 * gmax + 1e-6 * gall);
    }
  }
}

void gradientCheck(const GptConfig& config) {
  model::Gpt shapeOnly(ctx(), config, 1);
  const FloatParams params = randomParams(shapeOnly);
  gradientCheckWith(config, params, randomInputs(config.vocab));
}

bool bitIdentical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

} // namespace

TEST_CASE("GptConfig: names, shapes and parameter count", "[model]") {
  GptConfig c = tiny();
  CHECK(c.describe() == "2L 16d 2h T10 V32 layernorm gelu");
  model::Gpt m(ctx(), c, 1);
  uint64_t total = 0;
  for (const auto& p : m.parameters())
    total += p.elements;
  CHECK(total == c.parameterCount());
  CHECK(m.parameters().front().name == "wte.weight");
  CHECK(m.parameters()[1].name == "wpe.weight");
  CHECK(m.parameters()[2].name == "blocks.0.ln1.weight");
  CHECK(m.parameters().back().name == "ln_f.bias");
  bool found = false;
  for (const auto& p : m.parameters())
    if (p.name == "blocks.1.attn.qkv.weight") {
      found = true;
      CHECK(p.shape == std::vector<uint32_t>{48, 16});
      CHECK(p.decay);
    }
  CHECK(found);
  for (GptConfig v : {llamaLike(), [] {
                        GptConfig u = tiny();
                        u.packedQkv = false;
                        u.kvHeads = 1;
                        return u;
                      }()}) {
    model::Gpt mv(ctx(), v, 1);
    uint64_t t = 0;
    for (const auto& p : mv.parameters())
      t += p.elements;
    CHECK(t == v.parameterCount());
  }
  // Deterministic init from the seed.
  model::Gpt a(ctx(), c, 42), b(ctx(), c, 42);
  CHECK(bitIdentical(ctx().downloadVector<float>(a.parameters()[0].data, a.parameters()[0].elements),
                     ctx().downloadVector<float>(b.parameters()[0].data, b.parameters()[0].elements)));
}

TEST_CASE("Gpt gradient check: LayerNorm, GELU, packed QKV, learned positions", "[model][gradcheck]") {
  gradientCheck(tiny());
}

TEST_CASE("Gpt gradient check: RMSNorm, SwiGLU, RoPE, grouped-query attention", "[model][gradcheck]") {
  gradientCheck(llamaLike());
}

TEST_CASE("Gpt gradient check: explicit head dim and MLP width, q/k/v-only biases, untied head, llama3 RoPE",
          "[model][gradcheck]") {
  gradientCheck(openModel());
}

TEST_CASE("Gpt gradient check: Llama without biases, separate Q/K/V", "[model][gradcheck]") {
  GptConfig c = llamaLike();
  c.bias = model::BiasPlacement::None;
  c.packedQkv = false;
  gradientCheck(c);
}

TEST_CASE("GptConfig: bias placements, untied heads and explicit widths make the parameters they name",
          "[model]") {
  const GptConfig c = openModel();
  model::Gpt m(ctx(), c, 1);
  std::map<std::string, std::vector<uint32_t>> shapes;
  uint64_t total = 0;
  for (const auto& p : m.parameters()) {
    shapes[p.name] = p.shape;
    total += p.elements;
  }
  CHECK(total == c.parameterCount());
  CHECK(shapes.at("blocks.0.attn.qkv.weight") == std::vector<uint32_t>{(4 + 2 * 2) * 8, 16});
  CHECK(shapes.at("blocks.0.attn.qkv.bias") == std::vector<uint32_t>{64});
  CHECK(shapes.at("blocks.0.attn.proj.weight") == std::vector<uint32_t>{16, 32});
  CHECK(shapes.at("blocks.1.mlp.gate.weight") == std::vector<uint32_t>{20, 16});
  CHECK(shapes.at("blocks.1.mlp.proj.weight") == std::vector<uint32_t>{16, 20});
  CHECK(shapes.at("lm_head.weight") == std::vector<uint32_t>{32, 16});
  for (const char* absent : {"blocks.0.attn.proj.bias", "blocks.0.mlp.gate.bias", "blocks.0.mlp.up.bias",
                             "blocks.0.mlp.proj.bias", "blocks.0.ln1.bias", "wpe.weight"})
    CHECK_FALSE(shapes.count(absent));
  CHECK(c.describe() == "2L 16d 4h T10 V32 rmsnorm swiglu kv2 D8 hidden20 bias-qkv untied-head rope theta500 "
                        "llama3-scaling x4 qwen2");
  using model::BiasPlacement, model::LinearGroup;
  CHECK(model::hasBias(BiasPlacement::Attention, LinearGroup::AttentionOut));
  CHECK_FALSE(model::hasBias(BiasPlacement::Attention, LinearGroup::Mlp));
  CHECK(model::hasBias(BiasPlacement::Mlp, LinearGroup::Mlp));
  CHECK_FALSE(model::hasBias(BiasPlacement::Mlp, LinearGroup::Qkv));
  CHECK_FALSE(model::hasBias(BiasPlacement::Qkv, LinearGroup::AttentionOut));
}

TEST_CASE("RoPE frequencies: base^(-2i/D), and Llama 3's rescaling in its three bands", "[model]") {
  // Llama-3.2-1B: head dim 64, base 500000, factor 32, low 1, high 4, original context 8192.
  const model::RopeScaling llama3{model::RopeScalingKind::Llama3, 32.0, 1.0, 4.0, 8192};
  const std::vector<double> plain = model::ropeInverseFrequencies(64, 500000.0, {});
  const std::vector<double> scaled = model::ropeInverseFrequencies(64, 500000.0, llama3);
  REQUIRE(plain.size() == 32);
  for (uint32_t i = 0; i < 32; ++i)
    CHECK(plain[i] == std::pow(500000.0, -2.0 * i / 64.0));
  CHECK(scaled[0] == plain[0]);                   // wavelength 2 pi < 8192 / 4: kept
  CHECK(scaled[31] == plain[31] / 32.0);          // wavelength ~2.7e5 > 8192: divided by the factor
  const double wavelength = 2 * M_PI / plain[16]; // 500000^(-1/2): wavelength 4443, between 2048 and 8192
  REQUIRE(wavelength > 2048);
  REQUIRE(wavelength < 8192);
  const double smooth = (8192 / wavelength - 1.0) / (4.0 - 1.0);
  CHECK(std::abs(scaled[16] - ((1 - smooth) * plain[16] / 32.0 + smooth * plain[16])) < 1e-18);
  CHECK_THROWS(model::ropeInverseFrequencies(7, 10000.0, {}));
}

TEST_CASE("Gpt: a sequence longer than the sliding window is refused by name", "[model]") {
  GptConfig c = llamaLike();
  c.slidingWindow = 4;
  model::Gpt m(ctx(), c, 1);
  const Inputs in = randomInputs(c.vocab);
  vk::Buffer tokens = ctx().buffer(in.tokens.size() * 4, "tokens"),
             logits = ctx().buffer(size_t(kBatch) * kT * c.vocab * 4, "logits");
  ctx().uploadVector(tokens, in.tokens);
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  CHECK_THROWS_WITH(m.forward(exec, arena, tokens.range(), kBatch, kT, logits.range()),
                    Catch::Matchers::ContainsSubstring("exceeds the sliding window of 4"));
  CHECK_NOTHROW(m.forward(exec, arena, tokens.range(), kBatch, 4, logits.range()));
}

TEST_CASE("Gpt gradient check: separate Q/K/V projections, one KV head", "[model][gradcheck]") {
  GptConfig c = tiny();
  c.packedQkv = false;
  c.kvHeads = 1;
  gradientCheck(c);
}

TEST_CASE("Gpt gradient check: unfused attention (GEMM, softmax, GEMM)", "[model][gradcheck]") {
  GptConfig c = tiny();
  c.fusedAttention = false;
  gradientCheck(c);
}

// Packed sequences: documents end with token 0, several per sequence (one of a single token), one sequence
// ending mid-document.
GptConfig packed(GptConfig c) {
  c.fusedAttention = false;
  c.pack = true;
  c.endOfText = 0;
  return c;
}

Inputs packedInputs(uint32_t vocab) {
  Inputs in = randomInputs(vocab);
  for (int32_t& t : in.tokens)
    t = std::max(t, 1);
  in.tokens[2] = in.tokens[3] = in.tokens[kT + 5] = 0;
  return in;
}

TEST_CASE("Gpt gradient check: packed sequences (attention inside documents, positions restart)",
          "[model][gradcheck][pack]") {
  // The reference restarts positions and masks per document as well (gpt_reference.cpp), so the loss and
  // gradients of the packed step are checked against an independent float64 computation.
  GptConfig c = packed(tiny());
  INFO(c.describe() << ", seed " << test::testSeed());
  model::Gpt shapeOnly(ctx(), c, 1);
  const FloatParams params = randomParams(shapeOnly);
  const Inputs in = packedInputs(c.vocab);
  const test::ParamMap ref = toDouble(params);
  GptConfig plain = c;
  plain.pack = false; // the same tokens unpacked give other logits: the packing did something (the losses
                      // alone may differ by less than any fixed share on some draws)
  const std::vector<double> packedLogits = test::gptReferenceLogits(c, ref, in.tokens, kBatch, kT),
                            plainLogits = test::gptReferenceLogits(plain, ref, in.tokens, kBatch, kT);
  double moved = 0;
  for (size_t i = 0; i < packedLogits.size(); ++i)
    moved = std::max(moved, std::abs(packedLogits[i] - plainLogits[i]));
  CHECK(moved > 1e-2);
  gradientCheckWith(c, params, in);
}

TEST_CASE("Gpt packed: each document's logits equal the document run alone", "[model][pack]") {
  // Sequence 0 packs documents A (ending with the end-of-text token) and B; sequence 1 is B alone at the
  // start of its own sequence (padded after it: causal attention keeps the padding out of B's rows).
  const GptConfig c = packed(tiny());
  model::Gpt m(ctx(), c, 5);
  const FloatParams params = randomParams(m);
  for (auto& p : m.parameters())
    ctx().uploadVector(p.data, params.at(p.name));
  const uint32_t a = 3; // A: tokens 0..2, the last the end-of-text id
  std::vector<int32_t> tokens(size_t(kBatch) * kT);
  std::uniform_int_distribution<int32_t> id(1, int32_t(c.vocab) - 1);
  for (auto& t : tokens)
    t = id(test::rng());
  tokens[a - 1] = 0;
  for (uint32_t i = a; i < kT; ++i)
    tokens[kT + i - a] = tokens[i];
  vk::Buffer tb = ctx().buffer(tokens.size() * 4, "tokens"),
             logits = ctx().buffer(tokens.size() * c.vocab * 4, "logits");
  ctx().uploadVector(tb, tokens);
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  m.forward(exec, arena, tb.range(), kBatch, kT, logits.range());
  exec.flush();
  const auto l = ctx().downloadVector<float>(logits, tokens.size() * c.vocab);
  const size_t V = c.vocab, n = size_t(kT - a) * V;
  const std::vector<float> packedB(l.begin() + a * V, l.begin() + a * V + n),
      aloneB(l.begin() + kT * V, l.begin() + kT * V + n);
  CHECK(ref::relError(packedB, ref::Vec(aloneB.begin(), aloneB.end())) < 1e-5);
  // Without packing, B's rows in sequence 0 see A: different logits.
  GptConfig plain = c;
  plain.pack = false;
  const auto unpacked = test::gptReferenceLogits(plain, toDouble(params), tokens, kBatch, kT);
  CHECK(ref::relError(packedB, ref::Vec(unpacked.begin() + a * V, unpacked.begin() + a * V + n)) > 1e-3);
}

TEST_CASE("Gpt gradient check: packed sequences on the fused attention, learned positions and RoPE",
          "[model][gradcheck][pack]") {
  // The fused kernels mask by document and RoPE restarts its positions (the reference does both).
  for (GptConfig c : {packed(tiny()), packed(llamaLike())}) {
    c.fusedAttention = true;
    model::Gpt shapeOnly(ctx(), c, 1);
    gradientCheckWith(c, randomParams(shapeOnly), packedInputs(c.vocab));
  }
}

// Chat data packs examples by given positions (no end-of-text token needed) and ignores the targets of
// prompt tokens and of each document's last token (-100, -1, vocab).
Inputs givenDocuments(uint32_t vocab) {
  Inputs in = randomInputs(vocab);
  in.positions = {0, 1, 2, 0, 1, 2, 3, 4, /**/ 0, 1, 2, 3, 4, 5, 0, 0};
  for (size_t i : {2u, 3u, 7u, 13u})
    in.targets[i] = -100;
  in.targets[8] = -1;
  in.targets[14] = int32_t(vocab);
  return in;
}

TEST_CASE("Gpt gradient check: documents by given positions, ignored targets (chat packing)",
          "[model][gradcheck][pack]") {
  // openModel: a head dim apart from dim / heads and Llama 3's rescaled RoPE frequencies at the positions.
  for (GptConfig c : {tiny(), llamaLike(), openModel()}) {
    for (bool fused : {true, false}) {
      c.fusedAttention = fused;
      model::Gpt shapeOnly(ctx(), c, 1);
      gradientCheckWith(c, randomParams(shapeOnly), givenDocuments(c.vocab));
    }
  }
}

TEST_CASE("Gpt packed by given positions: the documents run one by one give the same loss and gradients",
          "[model][pack]") {
  // Loss sum over the packed batch = the sum of each document's loss sum, run alone at batch 1 and its own
  // length; the gradients (sums too, gradScale = rows) add up the same way.
  for (GptConfig c : {tiny(), llamaLike(), openModel()}) {
    INFO(c.describe());
    model::Gpt shapeOnly(ctx(), c, 1);
    const FloatParams params = randomParams(shapeOnly);
    const Inputs packedIn = givenDocuments(c.vocab);
    const Result packedRun = run(c, params, packedIn, float(kBatch * kT));
    double sum = 0;
    FloatParams grads;
    for (size_t at = 0; at < packedIn.tokens.size();) {
      size_t end = at + 1;
      while (end < packedIn.tokens.size() && packedIn.positions[end] != 0)
        ++end;
      const uint32_t n = uint32_t(end - at);
      Inputs alone{{packedIn.tokens.begin() + at, packedIn.tokens.begin() + end},
                   {packedIn.targets.begin() + at, packedIn.targets.begin() + end},
                   {}};
      const Result r = run(c, params, alone, float(n), 1, n);
      sum += double(r.loss) * n;
      for (const auto& [name, g] : r.grads) {
        auto& total = grads[name];
        total.resize(g.size());
        for (size_t i = 0; i < g.size(); ++i)
          total[i] += g[i];
      }
      at = end;
    }
    CHECK(std::abs(double(packedRun.loss) * kBatch * kT - sum) <= 1e-5 * std::abs(sum));
    for (const auto& [name, g] : grads) {
      INFO(name);
      CHECK(ref::relError(packedRun.grads.at(name), ref::Vec(g.begin(), g.end())) < 5e-5);
    }
  }
}

TEST_CASE("Gpt fused and unfused attention give the same loss and gradients", "[model][attention]") {
  for (GptConfig c : {tiny(), llamaLike()}) {
    INFO(c.describe());
    model::Gpt shapeOnly(ctx(), c, 1);
    const FloatParams params = randomParams(shapeOnly);
    const Inputs in = randomInputs(c.vocab);
    c.fusedAttention = true;
    const Result fused = run(c, params, in);
    c.fusedAttention = false;
    const Result unfused = run(c, params, in);
    CHECK(std::abs(fused.loss - unfused.loss) <= 1e-5 * std::abs(unfused.loss));
    for (const auto& [name, g] : unfused.grads) {
      INFO(name);
      CHECK(ref::relError(fused.grads.at(name), ref::Vec(g.begin(), g.end())) < 1e-4);
    }
  }
}

TEST_CASE("Gpt activation checkpointing gives bit-identical loss and gradients", "[model][checkpoint]") {
  for (GptConfig c : {tiny(), llamaLike()}) {
    INFO(c.describe());
    model::Gpt shapeOnly(ctx(), c, 1);
    const FloatParams params = randomParams(shapeOnly);
    const Inputs in = randomInputs(c.vocab);
    const Result plain = run(c, params, in, 0.5f);
    c.checkpointActivations = true;
    const Result ckpt = run(c, params, in, 0.5f);
    CHECK(std::memcmp(&plain.loss, &ckpt.loss, 4) == 0);
    for (const auto& [name, g] : plain.grads) {
      INFO(name);
      CHECK(bitIdentical(g, ckpt.grads.at(name)));
    }
  }
}

// The step fusions that only regroup work (GptConfig::groupCasts, normHalfGrads, residualNorms) leave every
// value as it was: the same loss and gradients bit for bit as the unfused step, in f32, mixed and bf16, for
// the GPT-2 and the Llama layout; each one removes its dispatches (2 per block: the residual adds into the
// norms, the casts of the residual stream's gradient; one per GEMM weight and 16-bit bias but the one cast
// per parameter group).
TEST_CASE("Gpt step fusions give bit-identical loss and gradients with fewer dispatches", "[model][fused]") {
  using model::Precision;
  GptConfig wide = tiny(); // head dim 32: the coop attention's packed path where the device has it
  wide.dim = 64;
  for (Precision p : {Precision::F32, Precision::Mixed, Precision::BF16})
    for (GptConfig c : {tiny(), llamaLike(), wide}) {
      if (p != Precision::F32 && !ops::supportsElem(ctx().device().features(), model::halfOf(p))) continue;
      c.precision = p;
      INFO(c.describe() << ", precision " << int(p) << ", seed " << test::testSeed());
      model::Gpt shapeOnly(ctx(), c, 1);
      const FloatParams params = randomParams(shapeOnly);
      const Inputs in = randomInputs(c.vocab);
      const Result fused = run(c, params, in, 0.5f);
      const auto unfusedBy = [&](bool GptConfig::*flag) {
        GptConfig u = c;
        u.*flag = false;
        const Result r = run(u, params, in, 0.5f);
        CHECK(std::memcmp(&fused.loss, &r.loss, 4) == 0);
        for (const auto& [name, g] : r.grads) {
          INFO(name);
          CHECK(bitIdentical(g, fused.grads.at(name)));
        }
        return r.dispatches - fused.dispatches;
      };
      const bool half = p != Precision::F32;
      CHECK(unfusedBy(&GptConfig::residualNorms) == 2 * c.layers);
      CHECK(unfusedBy(&GptConfig::normHalfGrads) == (half ? 2 * c.layers : 0));
      const uint32_t grouped = unfusedBy(&GptConfig::groupCasts);
      if (half)
        CHECK(grouped >= 4 * c.layers - 1);
      else
        CHECK(grouped == 0);
    }
}

TEST_CASE("Gpt mixed precision stays close to f32", "[model][mixed]") {
  if (!f16Supported()) SKIP("device lacks f16 storage/arithmetic");
  for (GptConfig c : {tiny(), llamaLike(), openModel()}) {
    INFO(c.describe());
    model::Gpt shapeOnly(ctx(), c, 1);
    const FloatParams params = randomParams(shapeOnly);
    const Inputs in = randomInputs(c.vocab);
    const Result f32 = run(c, params, in);
    c.precision = model::Precision::Mixed;
    const Result mixed = run(c, params, in);
    // f16 GEMM inputs (11-bit mantissa): loss within 2e-3 relative, each gradient within 3e-2 relative
    // (Frobenius).
    CHECK(std::abs(mixed.loss - f32.loss) <= 2e-3 * std::abs(f32.loss));
    for (const auto& [name, g] : f32.grads) {
      INFO(name);
      CHECK(ref::relError(mixed.grads.at(name), ref::Vec(g.begin(), g.end())) < 3e-2);
    }
  }
}

TEST_CASE("Gpt forward: logits and loss match the reference; repeated steps allocate nothing", "[model]") {
  const GptConfig c = llamaLike();
  model::Gpt m(ctx(), c, 3);
  const FloatParams params = randomParams(m);
  for (auto& p : m.parameters())
    ctx().uploadVector(p.data, params.at(p.name));
  const Inputs in = randomInputs(c.vocab);
  vk::Buffer tokens = ctx().buffer(in.tokens.size() * 4, "tokens"),
             targets = ctx().buffer(in.targets.size() * 4, "targets");
  ctx().uploadVector(tokens, in.tokens);
  ctx().uploadVector(targets, in.targets);
  vk::Buffer logits = ctx().buffer(size_t(kBatch) * kT * c.vocab * 4, "logits"),
             loss = ctx().buffer(4, "loss");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  const vk::BufferRange tr = targets.range(), lr = loss.range();
  m.forward(exec, arena, tokens.range(), kBatch, kT, logits.range(), &tr, &lr);
  exec.flush();
  const auto ref = test::gptReferenceLogits(c, toDouble(params), in.tokens, kBatch, kT);
  CHECK(ref::relError(ctx().downloadVector<float>(logits, ref.size()), ref) < 1e-5);
  const double refLoss = test::gptReferenceLoss(c, toDouble(params), in.tokens, in.targets, kBatch, kT);
  CHECK(std::abs(ctx().downloadVector<float>(loss, 1)[0] - refLoss) <= 1e-5 * refLoss);

  // Steps: same arena reservation after the first; gradients accumulate across calls.
  arena.reset();
  m.forwardBackward(exec, arena, tokens.range(), targets.range(), kBatch, kT, loss.range(), 1.0f);
  exec.flush();
  const auto reserved = arena.reservedBytes();
  const auto g1 = ctx().downloadVector<float>(m.parameters()[0].grad, m.parameters()[0].elements);
  arena.reset();
  m.forwardBackward(exec, arena, tokens.range(), targets.range(), kBatch, kT, loss.range(), 1.0f);
  exec.flush();
  CHECK(arena.reservedBytes() == reserved);
  const auto g2 = ctx().downloadVector<float>(m.parameters()[0].grad, m.parameters()[0].elements);
  ref::Vec twice(g1.size());
  for (size_t i = 0; i < g1.size(); ++i)
    twice[i] = 2.0 * g1[i];
  CHECK(ref::relError(g2, twice) < 1e-6);
}

TEST_CASE("Gpt forwardBackward replays through the graph executor", "[model][graph]") {
  GptConfig c = llamaLike();
  c.checkpointActivations = true;
  model::Gpt m(ctx(), c, 5);
  const Inputs in = randomInputs(c.vocab);
  vk::Buffer tokens = ctx().buffer(in.tokens.size() * 4, "tokens"),
             targets = ctx().buffer(in.targets.size() * 4, "targets");
  ctx().uploadVector(tokens, in.tokens);
  ctx().uploadVector(targets, in.targets);
  vk::Buffer loss = ctx().buffer(4, "loss");
  graph::GraphExecutor graph(ctx());
  graph::StepArena arena(ctx());
  std::vector<std::vector<float>> first;
  for (int step = 0; step < 2; ++step) {
    for (auto& p : m.parameters())
      ctx().uploadVector(p.grad, std::vector<float>(p.elements, 0.0f));
    graph.beginStep();
    graph.replayable("gpt.fb", [&] {
      arena.reset();
      m.forwardBackward(graph, arena, tokens.range(), targets.range(), kBatch, kT, loss.range(), 1.0f);
    });
    const graph::StepStats stats = graph.endStep();
    graph.flush();
    CHECK(stats.replayedSegments == (step == 0 ? 0u : 1u));
    for (size_t i = 0; i < m.parameters().size(); ++i) {
      const auto& p = m.parameters()[i];
      auto g = ctx().downloadVector<float>(p.grad, p.elements);
      if (step == 0) {
        first.push_back(std::move(g));
      } else {
        INFO(p.name);
        CHECK(bitIdentical(g, first[i]));
      }
    }
  }
  float maxAbs = 0;
  for (const auto& g : first)
    for (float x : g)
      maxAbs = std::max(maxAbs, std::abs(x));
  CHECK(maxAbs > 0.0f);
}
