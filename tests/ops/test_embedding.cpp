// Embedding gather and its deterministic scatter-add backward (engine/ops/embedding.hpp) against the float64
// references: out-of-range ids, repeated ids, accumulation into an existing gradient, bit-identical reruns,
// size validation.
#include "engine/core/half.hpp"
#include "engine/ops/elem_support.hpp"
#include "engine/ops/embedding.hpp"
#include "support/guarded.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <functional>
#include <limits>

using namespace helios;
using Catch::Matchers::ContainsSubstring;

namespace {

using test::bitsOf;
using test::ctx;
using test::head;

// ids in [0, vocab) drawn from a small "hot" set half of the time, so ids repeat often.
std::vector<int32_t> randomIds(uint32_t tokens, uint32_t vocab) {
  std::uniform_int_distribution<int32_t> any(0, int32_t(vocab) - 1), hot(0, int32_t(std::min(vocab, 4u)) - 1);
  std::vector<int32_t> ids(tokens);
  for (auto& id : ids)
    id = (test::rng()() & 1) ? hot(test::rng()) : any(test::rng());
  return ids;
}

} // namespace

// A gather copies: bit-exact. Out-of-range ids (negative or >= vocab) give rows of zeros.
TEST_CASE("embedding gather, with out-of-range ids giving zero rows") {
  INFO("seed " << test::testSeed());
  const uint32_t tokens = GENERATE(1u, 7u, 33u, 127u, 513u, 64u);
  const uint32_t dim = GENERATE(1u, 33u, 64u, 1024u);
  const uint32_t vocab = 127;
  INFO("tokens " << tokens << " dim " << dim);
  const auto table = test::randomFloats(size_t(vocab) * dim);
  auto ids = randomIds(tokens, vocab);
  if (tokens >= 7) ids[1] = -1, ids[3] = int32_t(vocab), ids[5] = std::numeric_limits<int32_t>::min();
  auto dtable = test::guardedBuffer(table, 0.f, "table"), dids = test::guardedBuffer(ids, 0, "ids");
  auto dout = test::guardedBuffer(std::vector<float>(size_t(tokens) * dim, test::poisonF32()),
                                  test::poisonF32(), "out");
  {
    ops::ImmediateExecutor e(ctx());
    ops::embedding(e, head(dtable, size_t(vocab) * dim), head(dids, tokens), head(dout, size_t(tokens) * dim),
                   tokens, vocab, dim);
    e.flush();
  }
  const auto out = test::readGuarded(dout, size_t(tokens) * dim, test::poisonF32());
  CHECK(test::countPoisoned(out) == 0);
  size_t wrong = 0;
  for (size_t t = 0; t < tokens; ++t)
    for (size_t j = 0; j < dim; ++j) {
      const bool in = ids[t] >= 0 && ids[t] < int32_t(vocab);
      const float expect = in ? table[size_t(ids[t]) * dim + j] : 0.0f;
      wrong += bitsOf(out[t * dim + j]) != bitsOf(expect);
    }
  CHECK(wrong == 0);
  // Also the float64 reference on the in-range tokens only.
  std::vector<int32_t> inIds;
  std::vector<float> inOut;
  for (size_t t = 0; t < tokens; ++t)
    if (ids[t] >= 0 && ids[t] < int32_t(vocab)) {
      inIds.push_back(ids[t]);
      inOut.insert(inOut.end(), out.begin() + long(t * dim), out.begin() + long((t + 1) * dim));
    }
  CHECK(ref::maxAbsError(inOut, ref::embedding(table, inIds, dim)) == 0.0);
}

// A 16-bit table (bf16 parameters, a LoRA base frozen in f16 or bf16) is gathered widened exactly: each
// output is its row's stored value as f32, odd row lengths included (rows start mid-word); out-of-range ids
// still give zeros.
TEST_CASE("embedding gather from an f16 or bf16 table widens exactly", "[bf16]") {
  const codegen::Elem type = GENERATE(codegen::Elem::F16, codegen::Elem::BF16);
  if (!ops::supportsElem(ctx().device().features(), type)) SKIP("device lacks 16-bit storage");
  const bool bf16 = type == codegen::Elem::BF16;
  INFO("seed " << test::testSeed() << " table " << codegen::elemName(type));
  const uint32_t tokens = GENERATE(1u, 33u, 127u);
  const uint32_t dim = GENERATE(1u, 33u, 64u);
  const uint32_t vocab = 61;
  INFO("tokens " << tokens << " dim " << dim);
  const auto values = test::randomFloats(size_t(vocab) * dim, -3, 3);
  std::vector<uint16_t> table(values.size());
  std::transform(values.begin(), values.end(), table.begin(), bf16 ? floatToBf16 : floatToHalf);
  auto ids = randomIds(tokens, vocab);
  if (tokens >= 7) ids[1] = -1, ids[3] = int32_t(vocab);
  auto dtable = test::guardedBuffer(table, uint16_t(0), "table"), dids = test::guardedBuffer(ids, 0, "ids");
  auto dout = test::guardedBuffer(std::vector<float>(size_t(tokens) * dim, test::poisonF32()),
                                  test::poisonF32(), "out");
  {
    ops::ImmediateExecutor e(ctx());
    ops::embedding(e, head(dtable, size_t(vocab) * dim, 2), head(dids, tokens),
                   head(dout, size_t(tokens) * dim), tokens, vocab, dim, type);
    e.flush();
  }
  const auto out = test::readGuarded(dout, size_t(tokens) * dim, test::poisonF32());
  size_t wrong = 0;
  for (size_t t = 0; t < tokens; ++t)
    for (size_t j = 0; j < dim; ++j) {
      const bool in = ids[t] >= 0 && ids[t] < int32_t(vocab);
      const uint16_t stored = in ? table[size_t(ids[t]) * dim + j] : 0;
      const float expect = in ? (bf16 ? bf16ToFloat(stored) : halfToFloat(stored)) : 0.0f;
      wrong += bitsOf(out[t * dim + j]) != bitsOf(expect);
    }
  CHECK(wrong == 0);
}

// The backward sums each row's tokens in f32 (in token order within a segment, then the segments in order);
// with k random-sign terms per row the relative error grows like 2^-24 sqrt(k) (k up to ~1000 here):
// threshold relError < 1e-5 vs the float64 sum. 4097 tokens cut into 17 segments of chains.
TEST_CASE("embedding backward: repeated ids, accumulation, determinism") {
  INFO("seed " << test::testSeed());
  const uint32_t tokens = GENERATE(1u, 7u, 33u, 127u, 513u, 1024u, 4097u);
  const uint32_t dim = GENERATE(7u, 64u, 129u);
  const uint32_t vocab = GENERATE(5u, 300u, 1000u);
  INFO("tokens " << tokens << " dim " << dim << " vocab " << vocab);
  auto ids = randomIds(tokens, vocab);
  if (tokens >= 33) ids[2] = -5, ids[30] = int32_t(vocab) + 3; // contribute nothing
  const auto dOut = test::randomFloats(size_t(tokens) * dim);
  const size_t tableElems = size_t(vocab) * dim;
  auto dids = test::guardedBuffer(ids, 0, "ids"), ddout = test::guardedBuffer(dOut, 0.f, "dOut");
  auto ws = ctx().buffer(ops::embeddingBackwardWorkspaceBytes(tokens, vocab, dim) + 4, "ws");
  const float guard = 4321.f;
  auto dgrad = test::guardedBuffer(std::vector<float>(tableElems, test::poisonF32()), guard, "dTable");
  const auto run = [&](bool accumulate) {
    ops::ImmediateExecutor e(ctx());
    ops::embeddingBackward(e, head(dids, tokens), head(ddout, size_t(tokens) * dim), head(dgrad, tableElems),
                           ws.range(), tokens, vocab, dim, accumulate);
    e.flush();
    return test::readGuarded(dgrad, tableElems, guard);
  };

  std::vector<int32_t> inIds;
  std::vector<float> inOut;
  for (size_t t = 0; t < tokens; ++t)
    if (ids[t] >= 0 && ids[t] < int32_t(vocab)) {
      inIds.push_back(ids[t]);
      inOut.insert(inOut.end(), dOut.begin() + long(t * dim), dOut.begin() + long((t + 1) * dim));
    }
  const ref::Vec expect = ref::embeddingBackward(inOut, inIds, vocab, dim);

  const auto first = run(false); // clears the poison, then scatter-adds
  CHECK(test::countPoisoned(first) == 0);
  CHECK(ref::relError(first, expect) < 1e-5);
  const auto second = run(false);
  CHECK(std::memcmp(first.data(), second.data(), first.size() * 4) == 0); // bit-identical rerun

  // Accumulate into an existing gradient: unused rows keep their values exactly.
  const auto base = test::randomFloats(tableElems);
  ctx().uploadVector(dgrad, base);
  const auto acc = run(true);
  std::vector<bool> used(vocab, false);
  for (int32_t id : inIds)
    used[size_t(id)] = true;
  ref::Vec expectAcc(tableElems);
  size_t changedUnused = 0;
  for (size_t v = 0; v < vocab; ++v)
    for (size_t j = 0; j < dim; ++j) {
      const size_t i = v * dim + j;
      expectAcc[i] = base[i] + expect[i];
      if (!used[v]) changedUnused += bitsOf(acc[i]) != bitsOf(base[i]);
    }
  CHECK(changedUnused == 0);
  CHECK(ref::maxAbsError(acc, expectAcc) < 1e-5 * std::max<double>(1.0, double(tokens) / 16));
}

TEST_CASE("embedding ops reject buffers smaller than the sizes they are given") {
  const uint32_t tokens = 10, vocab = 20, dim = 8;
  auto table = ctx().buffer(4 * vocab * dim, "table"), ids = ctx().buffer(4 * tokens, "ids");
  auto out = ctx().buffer(4 * tokens * dim, "out"), shortBuf = ctx().buffer(4 * tokens * dim - 4, "short");
  auto ws = ctx().buffer(ops::embeddingBackwardWorkspaceBytes(tokens, vocab, dim), "ws");
  ops::ImmediateExecutor e(ctx());
  CHECK_THROWS_WITH(ops::embedding(e, table.range(), ids.range(), shortBuf.range(), tokens, vocab, dim),
                    ContainsSubstring("out holds"));
  CHECK_THROWS_WITH(ops::embedding(e, shortBuf.range(), ids.range(), out.range(), tokens, vocab, dim),
                    ContainsSubstring("table holds"));
  CHECK_THROWS_WITH(ops::embedding(e, table.range(), ids.range(), out.range(), tokens + 1, vocab, dim),
                    ContainsSubstring("ids holds"));
  CHECK_THROWS_WITH(
      ops::embeddingBackward(e, ids.range(), out.range(), table.range(), ids.range(), tokens, vocab, dim),
      ContainsSubstring("workspace holds"));
  CHECK_THROWS_WITH(
      ops::embeddingBackward(e, ids.range(), shortBuf.range(), table.range(), ws.range(), tokens, vocab, dim),
      ContainsSubstring("dOut holds"));
  CHECK(e.dispatches() == 0);
}

// GPT-2-sized timing (hidden: run with `test_embedding "[bench]"`): V=50304, T=16384, D=768, Zipf-like ids,
// and the worst case for the chain walk (every token the same id). Host wall time around submit + wait.
TEST_CASE("embedding backward at GPT-2 size", "[.][bench]") {
  const uint32_t vocab = 50304, tokens = 16384, dim = 768;
  std::vector<double> cdf(vocab);
  double acc = 0;
  for (uint32_t r = 0; r < vocab; ++r)
    cdf[r] = acc += 1.0 / (r + 1);
  std::uniform_real_distribution<double> u(0, acc);
  std::vector<int32_t> zipf(tokens), same(tokens, 42);
  for (auto& id : zipf)
    id = int32_t(std::lower_bound(cdf.begin(), cdf.end(), u(test::rng())) - cdf.begin());
  const auto dOut = test::randomFloats(size_t(tokens) * dim);
  auto ddout = test::guardedBuffer(dOut, 0.f, "dOut"), dtable = ctx().buffer(4ull * vocab * dim, "table");
  auto dout = ctx().buffer(4ull * tokens * dim, "out");
  auto ws = ctx().buffer(ops::embeddingBackwardWorkspaceBytes(tokens, vocab, dim), "ws");
  const auto timeMs = [&](const std::function<void(ops::Executor&)>& fn) {
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      ops::ImmediateExecutor e(ctx());
      const auto t0 = std::chrono::steady_clock::now();
      fn(e);
      e.flush();
      best = std::min(
          best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  for (const auto* ids : {&zipf, &same}) {
    auto dids = test::guardedBuffer(*ids, 0, "ids");
    const double fwd = timeMs([&](ops::Executor& e) {
      ops::embedding(e, dtable.range(), head(dids, tokens), dout.range(), tokens, vocab, dim);
    });
    const double bwdAcc = timeMs([&](ops::Executor& e) {
      ops::embeddingBackward(e, head(dids, tokens), head(ddout, size_t(tokens) * dim), dtable.range(),
                             ws.range(), tokens, vocab, dim, true);
    });
    const double bwd = timeMs([&](ops::Executor& e) {
      ops::embeddingBackward(e, head(dids, tokens), head(ddout, size_t(tokens) * dim), dtable.range(),
                             ws.range(), tokens, vocab, dim, false);
    });
    const auto got = ctx().downloadVector<float>(dtable, size_t(vocab) * dim);
    CHECK(ref::relError(got, ref::embeddingBackward(dOut, *ids, vocab, dim)) < 1e-4);
    WARN((ids == &zipf ? "zipf ids" : "one id")
         << ": gather " << fwd << " ms, backward (accumulate) " << bwdAcc
         << " ms, backward (clear + accumulate) " << bwd << " ms");
  }
}
