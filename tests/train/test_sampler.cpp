// Sampling (engine/train/sampler): the next-token distribution under temperature, top-k and top-p on known
// logits, and KV-cache decoding (engine/model/decoder) picking exactly the tokens of full-window forwards.
#include "common.hpp"
#include "engine/train/sampler.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>

using namespace helios;
using Catch::Matchers::ContainsSubstring;

namespace {

// Logits whose softmax at temperature 1 is exactly `probs` (up to rounding).
std::vector<float> logitsOf(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs)
    l.push_back(static_cast<float>(std::log(p)));
  return l;
}

void checkDistribution(const std::vector<std::pair<int32_t, double>>& got,
                       const std::vector<std::pair<int32_t, double>>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].first == want[i].first);
    CHECK(std::abs(got[i].second - want[i].second) < 1e-6);
  }
}

} // namespace

TEST_CASE("sampler: temperature, top-k and top-p on known distributions", "[train][sample]") {
  // Ids 0..5 with probabilities 0.05, 0.4, 0.1, 0.25, 0.15, 0.05.
  const std::vector<float> logits = logitsOf({0.05, 0.4, 0.1, 0.25, 0.15, 0.05});
  checkDistribution(train::nextTokenDistribution(logits, 0.0f, 0, 1.0f), {{1, 1.0}});
  checkDistribution(train::nextTokenDistribution(logits, 1.0f, 0, 1.0f),
                    {{1, 0.4}, {3, 0.25}, {4, 0.15}, {2, 0.1}, {0, 0.05}, {5, 0.05}});
  // top-k 3 renormalises the three largest: 0.4, 0.25, 0.15 over 0.8.
  checkDistribution(train::nextTokenDistribution(logits, 1.0f, 3, 1.0f),
                    {{1, 0.5}, {3, 0.3125}, {4, 0.1875}});
  // top-p 0.7: 0.4 + 0.25 = 0.65 < 0.7, so the third (0.15) joins; 0.8 renormalised.
  checkDistribution(train::nextTokenDistribution(logits, 1.0f, 0, 0.7f),
                    {{1, 0.5}, {3, 0.3125}, {4, 0.1875}});
  // top-p 0.6: the two most likely tokens (0.65) are enough.
  checkDistribution(train::nextTokenDistribution(logits, 1.0f, 0, 0.6f), {{1, 0.4 / 0.65}, {3, 0.25 / 0.65}});
  // A tiny top-p keeps the most likely token alone; top-k 2 then top-p 0.9 keeps both of the two.
  checkDistribution(train::nextTokenDistribution(logits, 1.0f, 0, 0.01f), {{1, 1.0}});
  checkDistribution(train::nextTokenDistribution(logits, 1.0f, 2, 0.9f), {{1, 0.4 / 0.65}, {3, 0.25 / 0.65}});
  // Temperature 2 takes square roots of the probabilities before normalising.
  const auto hot = train::nextTokenDistribution(logits, 2.0f, 2, 1.0f);
  const double a = std::sqrt(0.4), b = std::sqrt(0.25);
  checkDistribution(hot, {{1, a / (a + b)}, {3, b / (a + b)}});
}

TEST_CASE("sampler: greedy KV-cache decoding picks the full-window path's tokens", "[train][sample]") {
  model::GptConfig c;
  c.vocab = 256;
  c.context = 24;
  c.layers = 2;
  c.dim = 32;
  c.heads = 2;
  SECTION("packed QKV") {}
  SECTION("separate Q, K, V and grouped-query attention") {
    c.packedQkv = false;
    c.heads = 4;
    c.kvHeads = 2;
  }
  SECTION("RMSNorm and SwiGLU") {
    c.norm = model::NormKind::RMSNorm;
    c.mlp = model::MlpKind::SwiGLU;
  }
  nlohmann::json j = train::toJson(c);
  j["kind"] = "gpt";
  auto m = train::makeModel(test::trainCtx(), j, 5);
  for (auto& p : m->parameters()) // large weights: confident, varied next tokens
    test::trainCtx().uploadVector(p.data, test::randomFloats(p.elements, -0.5f, 0.5f));
  const train::Tokenizer tok = train::Tokenizer::byteLevel();
  train::SampleOptions o;
  o.prompt = "In the beginning";
  o.tokens = 30; // 16 + 30 > 24: past the window, both paths start over from the last 24 tokens
  o.temperature = 0;
  o.window = c.context;
  train::SampleStats cached, full;
  o.kvCache = true;
  const std::string a = train::generate(test::trainCtx(), *m, tok, o, {}, &cached);
  o.kvCache = false;
  const std::string b = train::generate(test::trainCtx(), *m, tok, o, {}, &full);
  CHECK(cached.kvCache);
  CHECK_FALSE(full.kvCache);
  CHECK(cached.tokens == 30);
  CHECK(a == b);
  CHECK(a.size() == 30);
}

TEST_CASE("sampler: stopping at end-of-text needs a tokenizer that has one", "[train][sample]") {
  auto m = train::makeModel(test::trainCtx(), {{"kind", "bigram"}, {"vocab", 256}}, 1);
  train::SampleOptions o;
  o.stopAtEot = true;
  CHECK_THROWS_WITH(train::generate(test::trainCtx(), *m, train::Tokenizer::byteLevel(), o),
                    ContainsSubstring("no end-of-text token"));
  o.stopAtEot = false;
  o.topP = 0;
  CHECK_THROWS_WITH(train::generate(test::trainCtx(), *m, train::Tokenizer::byteLevel(), o),
                    ContainsSubstring("top-p"));
}
