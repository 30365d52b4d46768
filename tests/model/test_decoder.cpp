// KV-cache decoding (engine/model/decoder): the logits after a prompt fed at once and after each further
// token fed alone match the float64 reference GPT (gpt_reference) over the whole prefix, for GPT-2's
// architecture, for separate Q/K/V with grouped-query heads, RMSNorm and SwiGLU, and for a Qwen2-like RoPE
// model (rotations at the cached positions); feeds past the window and windows past the context are refused.
#include "engine/graph/graph_executor.hpp"
#include "engine/model/decoder.hpp"
#include "gpt_reference.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <random>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
using model::GptConfig;

namespace {

vk::Context& ctx() {
  static auto context = vk::Context::create({.persistentPipelineCache = false});
  return *context;
}

test::ParamMap randomize(model::Gpt& m) {
  test::ParamMap params;
  for (const auto& p : m.parameters()) {
    const bool gain = p.name.find("ln") != std::string::npos && p.name.ends_with(".weight");
    std::vector<float> v = test::randomFloats(p.elements, -0.4f, 0.4f);
    if (gain)
      for (float& x : v)
        x = 1.0f + 0.5f * x;
    ctx().uploadVector(p.data, v);
    params[p.name] = std::vector<double>(v.begin(), v.end());
  }
  return params;
}

// The reference's logits of the last position after `prefix`.
std::vector<double> lastRow(const GptConfig& c, const test::ParamMap& params,
                            const std::vector<int32_t>& prefix) {
  const uint32_t T = static_cast<uint32_t>(prefix.size());
  const auto all = test::gptReferenceLogits(c, params, prefix, 1, T);
  return std::vector<double>(all.end() - c.vocab, all.end());
}

} // namespace

TEST_CASE("GptDecoder: prompt and single-token feeds match the float64 reference", "[model][decoder]") {
  GptConfig c;
  c.vocab = 37;
  c.context = 12;
  c.layers = 2;
  c.dim = 16;
  c.heads = 2;
  SECTION("GPT-2 (packed QKV, LayerNorm, GELU)") {}
  SECTION("separate Q, K, V; grouped-query heads; RMSNorm; SwiGLU") {
    c.packedQkv = false;
    c.heads = 4;
    c.kvHeads = 2;
    c.norm = model::NormKind::RMSNorm;
    c.mlp = model::MlpKind::SwiGLU;
  }
  SECTION("RoPE with llama3 scaling, head dim 8 of 4 heads, q/k/v biases only, an untied head") {
    c.heads = 4;
    c.kvHeads = 2;
    c.headDim = 8;
    c.hidden = 20;
    c.norm = model::NormKind::RMSNorm;
    c.mlp = model::MlpKind::SwiGLU;
    c.rope = true;
    c.ropeTheta = 500;
    c.ropeScaling = {model::RopeScalingKind::Llama3, 4.0, 1.0, 4.0, 16};
    c.bias = model::BiasPlacement::Qkv;
    c.tiedHead = false;
  }
  model::Gpt gpt(ctx(), c, 2);
  const test::ParamMap params = randomize(gpt);
  const uint32_t window = 11; // one short of the context: the cache need not span it
  model::GptDecoder dec(ctx(), gpt, window);
  std::uniform_int_distribution<int32_t> dist(0, int32_t(c.vocab) - 1);
  std::vector<int32_t> ids(5);
  for (auto& t : ids)
    t = dist(test::rng());
  vk::Buffer tokens = ctx().buffer(4ull * window, "tokens"), logits = ctx().buffer(4ull * c.vocab, "logits");
  graph::GraphExecutor exec(ctx());
  graph::StepArena arena(ctx());
  size_t fed = 0;
  while (ids.size() <= window) {
    const uint32_t n = static_cast<uint32_t>(ids.size() - fed);
    ctx().upload(tokens, std::as_bytes(std::span<const int32_t>(ids.data() + fed, n)));
    ctx().uploadVector(logits, std::vector<float>(c.vocab, test::poisonF32()));
    arena.reset();
    dec.feed(exec, arena, tokens.range(), n, logits.range());
    exec.flush();
    fed = ids.size();
    CHECK(dec.length() == fed);
    INFO("prefix of " << fed << " tokens, " << n << " fed");
    CHECK(ref::relError(ctx().downloadVector<float>(logits, c.vocab), lastRow(c, params, ids)) < 1e-5);
    ids.push_back(dist(test::rng()));
  }
  CHECK_THROWS_WITH(dec.feed(exec, arena, tokens.range(), 1, logits.range()),
                    ContainsSubstring("exceed the window"));
  dec.reset();
  CHECK(dec.length() == 0);
}

TEST_CASE("GptDecoder: windows beyond the context are refused", "[model][decoder]") {
  GptConfig c;
  c.vocab = 16;
  c.context = 8;
  c.layers = 1;
  c.dim = 8;
  c.heads = 2;
  c.rope = true;
  model::Gpt rope(ctx(), c, 1);
  CHECK(model::GptDecoder::unsupported(c).empty());
  CHECK_THROWS_WITH(model::GptDecoder(ctx(), rope, 9), ContainsSubstring("window 9"));
}
