// KV-cache decoding (engine/model/decoder): the logits after a prompt fed at once and after each further
// token fed alone match the float64 reference GPT (gpt_reference) over the whole prefix, for GPT-2's
// architecture and for separate Q/K/V with grouped-query heads, RMSNorm and SwiGLU; feeds past the window
// and RoPE models are refused.
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

TEST_CASE("GptDecoder: RoPE models and windows beyond the context are refused", "[model][decoder]") {
  GptConfig c;
  c.vocab = 16;
  c.context = 8;
  c.layers = 1;
  c.dim = 8;
  c.heads = 2;
  model::Gpt plain(ctx(), c, 1);
  CHECK_THROWS_WITH(model::GptDecoder(ctx(), plain, 9), ContainsSubstring("window 9"));
  c.rope = true;
  model::Gpt rope(ctx(), c, 1);
  CHECK_THAT(model::GptDecoder::unsupported(c), ContainsSubstring("RoPE"));
  CHECK_THROWS_WITH(model::GptDecoder(ctx(), rope, 8), ContainsSubstring("RoPE"));
}
