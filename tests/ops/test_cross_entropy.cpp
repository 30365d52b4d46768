// Fused softmax cross-entropy (loss per row + dlogits) on the engine's device against the float64
// reference and finite differences of the reference loss, including GPT-2's vocabulary (50304) and the
// ignore-index convention (targets outside [0, vocab) give loss 0 and gradient 0).
// Thresholds: loss and dlogits relative Frobenius error <= 1e-5 with a floored denominator (see checkClose),
// finite differences <= 1e-4.
#include "engine/core/half.hpp"
#include "engine/ops/cross_entropy.hpp"
#include "support/device_io.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
using codegen::ReduceStrategy;

namespace {

using test::ctx;
using test::input;
using test::output;
using test::result;
inline std::vector<std::pair<uint32_t, uint32_t>> shapes() {
  return test::rowShapes();
}

std::vector<int32_t> randomTargets(uint32_t rows, uint32_t vocab) {
  std::uniform_int_distribution<int32_t> dist(0, int32_t(vocab) - 1);
  std::vector<int32_t> t(rows);
  for (auto& v : t)
    v = dist(test::rng());
  return t;
}

struct Result {
  std::vector<float> loss, dlogits;
};

Result run(const std::vector<float>& logits, const std::vector<int32_t>& targets, uint32_t rows,
           uint32_t vocab, float gradScale, ops::RowKernelChoice choice = {}) {
  const size_t n = size_t(rows) * vocab;
  auto bl = input(logits, "logits"), bt = input(targets, "targets");
  auto bloss = output(rows, "loss"), bd = output(n, "dlogits");
  ops::ImmediateExecutor exec(ctx());
  ops::crossEntropy(exec, bl.range(), bt.range(), bloss.range(), bd.range(), rows, vocab, gradScale, choice);
  exec.flush();
  Result r;
  r.loss = result(bloss, rows);
  r.dlogits = result(bd, n);
  return r;
}

// The reference with the ignore-index convention: rows whose target is outside [0, vocab) are zero.
ref::CrossEntropyOut reference(const std::vector<float>& logits, std::vector<int32_t> targets, uint32_t rows,
                               uint32_t vocab, double gradScale) {
  std::vector<bool> ignored(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    ignored[r] = targets[r] < 0 || targets[r] >= int32_t(vocab);
    if (ignored[r]) targets[r] = 0;
  }
  auto o = ref::crossEntropy(logits, targets, rows, vocab, gradScale);
  for (uint32_t r = 0; r < rows; ++r)
    if (ignored[r]) {
      o.loss[r] = 0;
      std::fill_n(o.dlogits.begin() + std::ptrdiff_t(size_t(r) * vocab), vocab, 0.0);
    }
  return o;
}

// Relative error with a floor on the denominator: a loss near 0 (the target dominates) is log(1 + tiny),
// and its f32 error is relative to 1, not to the loss; likewise dlogits = (p - onehot) * scale has terms of
// size |scale| in every row. So loss errors are relative to max(||loss||, sqrt(rows)) and gradient errors
// to max(||dlogits||, |scale| * sqrt(rows)).
void checkClose(const Result& out, const ref::CrossEntropyOut& expect, uint32_t rows, double scale) {
  const auto err = [](const std::vector<float>& o, const ref::Vec& e, double floor) {
    double num = 0, den = 0;
    for (size_t i = 0; i < e.size(); ++i) {
      if (!std::isfinite(o[i])) return 1e30;
      num += (o[i] - e[i]) * (o[i] - e[i]);
      den += e[i] * e[i];
    }
    return std::sqrt(num) / std::max(std::sqrt(den), floor);
  };
  CHECK(err(out.loss, expect.loss, std::sqrt(double(rows))) <= 1e-5);
  CHECK(err(out.dlogits, expect.dlogits, std::abs(scale) * std::sqrt(double(rows))) <= 1e-5);
}

} // namespace

TEST_CASE("cross-entropy matches the float64 reference", "[cross_entropy]") {
  const auto [rows, vocab] = GENERATE(from_range(shapes()));
  const auto strategy = GENERATE(ReduceStrategy::Subgroup, ReduceStrategy::SharedTree);
  INFO("rows " << rows << " vocab " << vocab << " strategy " << codegen::toString(strategy) << " seed "
               << test::testSeed());
  const auto logits = test::randomFloats(size_t(rows) * vocab, -8.0f, 8.0f);
  const auto targets = randomTargets(rows, vocab);
  const float scale = 1.0f / float(rows);
  const auto out = run(logits, targets, rows, vocab, scale, {0, strategy});
  const auto expect = reference(logits, targets, rows, vocab, scale);
  checkClose(out, expect, rows, scale);
}

TEST_CASE("cross-entropy handles the GPT-2 vocabulary: 3 rows of 50304", "[cross_entropy]") {
  const uint32_t rows = 3, vocab = 50304;
  const auto strategy = GENERATE(ReduceStrategy::Subgroup, ReduceStrategy::SharedTree);
  INFO("strategy " << codegen::toString(strategy) << " seed " << test::testSeed());
  auto logits = test::randomFloats(size_t(rows) * vocab, -10.0f, 10.0f);
  auto targets = randomTargets(rows, vocab);
  targets[1] = int32_t(vocab) - 1;           // the last column
  logits[size_t(2) * vocab + 12345] = 30.0f; // a dominant logit
  const auto out = run(logits, targets, rows, vocab, 1.0f / 3.0f, {0, strategy});
  const auto expect = reference(logits, targets, rows, vocab, 1.0 / 3.0);
  checkClose(out, expect, rows, 1.0 / 3.0);
}

TEST_CASE("cross-entropy ignores targets outside 0..vocab-1 (ignore index)", "[cross_entropy]") {
  const uint32_t rows = 6, vocab = 100;
  const auto logits = test::randomFloats(size_t(rows) * vocab, -8.0f, 8.0f);
  const std::vector<int32_t> targets{5, -1, 99, 100, -100, 2147483647};
  const auto out = run(logits, targets, rows, vocab, 0.5f);
  const auto expect = reference(logits, targets, rows, vocab, 0.5);
  checkClose(out, expect, rows, 0.5);
  for (uint32_t r : {1u, 3u, 4u, 5u}) {
    INFO("ignored row " << r);
    CHECK(out.loss[r] == 0.0f);
    for (uint32_t j = 0; j < vocab; ++j)
      REQUIRE(out.dlogits[size_t(r) * vocab + j] == 0.0f);
  }
  CHECK(out.loss[0] > 0.0f);
  CHECK(out.loss[2] > 0.0f);
}

TEST_CASE("cross-entropy gradient matches finite differences of the reference loss", "[cross_entropy]") {
  const auto [rows, vocab] = GENERATE(std::pair{3u, 7u}, std::pair{2u, 33u});
  INFO("rows " << rows << " vocab " << vocab << " seed " << test::testSeed());
  auto logits = test::randomFloats(size_t(rows) * vocab, -3.0f, 3.0f);
  const auto targets = randomTargets(rows, vocab);
  const double scale = 1.0 / rows;
  const auto out = run(logits, targets, rows, vocab, float(scale));
  // L = scale * sum of per-row losses; dlogits = dL/dlogits.
  const auto loss = [&] {
    double l = 0;
    for (double v : ref::crossEntropy(logits, targets, rows, vocab, scale).loss)
      l += v;
    return l * scale;
  };
  ref::Vec fd(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v0 = logits[i];
    logits[i] = v0 + 1e-2f;
    const double up = loss(), hUp = double(logits[i]) - v0;
    logits[i] = v0 - 1e-2f;
    const double down = loss(), hDown = double(v0) - logits[i];
    logits[i] = v0;
    fd[i] = (up - down) / (hUp + hDown);
  }
  CHECK(ref::relError(out.dlogits, fd) <= 1e-4);
}

TEST_CASE("cross-entropy works for every workgroup size and strategy", "[cross_entropy]") {
  const uint32_t wg = GENERATE(32u, 64u, 128u, 256u, 512u, 1024u);
  const auto strategy = GENERATE(ReduceStrategy::Subgroup, ReduceStrategy::SharedTree);
  INFO("wg " << wg << " strategy " << codegen::toString(strategy) << " seed " << test::testSeed());
  const uint32_t rows = 4, vocab = 3001;
  const auto logits = test::randomFloats(size_t(rows) * vocab, -8.0f, 8.0f);
  const auto targets = randomTargets(rows, vocab);
  const auto out = run(logits, targets, rows, vocab, 0.25f, {wg, strategy});
  const auto expect = reference(logits, targets, rows, vocab, 0.25);
  checkClose(out, expect, rows, 0.25);
}

TEST_CASE("cross-entropy is deterministic", "[cross_entropy][determinism]") {
  const uint32_t rows = 16, vocab = 5000;
  const auto logits = test::randomFloats(size_t(rows) * vocab, -8.0f, 8.0f);
  const auto targets = randomTargets(rows, vocab);
  const auto a = run(logits, targets, rows, vocab, 1.0f / 16),
             b = run(logits, targets, rows, vocab, 1.0f / 16);
  CHECK(std::memcmp(a.loss.data(), b.loss.data(), rows * 4) == 0);
  CHECK(std::memcmp(a.dlogits.data(), b.dlogits.data(), a.dlogits.size() * 4) == 0);
}

TEST_CASE("cross-entropy rejects mismatched sizes", "[cross_entropy][errors]") {
  auto logits = ctx().buffer(4 * 12, "logits"), small = ctx().buffer(4 * 2, "small"),
       rows3 = ctx().buffer(4 * 3, "r");
  ops::ImmediateExecutor exec(ctx());
  CHECK_THROWS_WITH(
      ops::crossEntropy(exec, logits.range(), small.range(), rows3.range(), logits.range(), 3, 4, 1.0f),
      ContainsSubstring("crossEntropy: targets holds 2"));
  CHECK_THROWS_WITH(
      ops::crossEntropy(exec, logits.range(), rows3.range(), small.range(), logits.range(), 3, 4, 1.0f),
      ContainsSubstring("crossEntropy: loss holds 2"));
  CHECK_THROWS_WITH(
      ops::crossEntropy(exec, logits.range(), rows3.range(), rows3.range(), rows3.range(), 3, 4, 1.0f),
      ContainsSubstring("crossEntropy: dlogits holds 3 elements (12 bytes) but needs 12"));
  CHECK_THROWS_WITH(
      ops::crossEntropy(exec, logits.range(), rows3.range(), rows3.range(), logits.range(), 3, 5, 1.0f),
      ContainsSubstring("crossEntropy: logits holds 12"));
  CHECK(exec.dispatches() == 0);
}

// f16 logits in, f16 dlogits out, f32 math: against the float64 reference on the f16 values the kernel
// reads, the loss is as close as the f32 path's (<= 1e-5) and dlogits within its one f16 rounding
// (relative Frobenius <= 1e-3), with the ignore index and GPT-2's vocabulary among the shapes.
TEST_CASE("cross-entropy on f16 logits matches the float64 reference", "[cross_entropy]") {
  const auto& f = ctx().device().features();
  if (!(f.shaderFloat16 && f.storageBuffer16BitAccess)) SKIP("device lacks 16-bit storage");
  auto cases = shapes();
  cases.emplace_back(3u, 50304u);
  for (auto [rows, vocab] : cases) {
    INFO("rows " << rows << " vocab " << vocab << " seed " << test::testSeed());
    const size_t n = size_t(rows) * vocab;
    std::vector<uint16_t> half(n);
    std::vector<float> logits(n);
    const auto raw = test::randomFloats(n, -8.0f, 8.0f);
    for (size_t i = 0; i < n; ++i) {
      half[i] = floatToHalf(raw[i]);
      logits[i] = halfToFloat(half[i]);
    }
    auto targets = randomTargets(rows, vocab);
    if (rows > 2) targets[1] = -100; // ignored
    const float scale = 1.0f / float(rows);
    constexpr uint16_t kPoison16 = 0x7e5b;
    auto bl = input(half, "logits16"), bt = input(targets, "targets");
    auto bd = input(std::vector<uint16_t>(n + 1, kPoison16), "dlogits16");
    auto bloss = output(rows, "loss");
    vk::BufferRange d16 = bd.range();
    d16.size = n * 2;
    ops::ImmediateExecutor exec(ctx());
    ops::crossEntropy(exec, bl.range(), bt.range(), bloss.range(), d16, rows, vocab, scale, {},
                      codegen::Elem::F16);
    exec.flush();
    Result out;
    out.loss = result(bloss, rows);
    const auto got = ctx().downloadVector<uint16_t>(bd, n + 1);
    CHECK(got[n] == kPoison16);
    size_t unwritten = 0;
    for (size_t i = 0; i < n; ++i) {
      unwritten += got[i] == kPoison16;
      out.dlogits.push_back(halfToFloat(got[i]));
    }
    CHECK(unwritten == 0);
    const auto expect = reference(logits, targets, rows, vocab, scale);
    double num = 0, den = 0;
    for (size_t i = 0; i < n; ++i) {
      num += (out.dlogits[i] - expect.dlogits[i]) * (out.dlogits[i] - expect.dlogits[i]);
      den += expect.dlogits[i] * expect.dlogits[i];
    }
    CHECK(std::sqrt(num) / std::max(std::sqrt(den), scale * std::sqrt(double(rows))) <= 1e-3);
    double lnum = 0, lden = 0;
    for (uint32_t r = 0; r < rows; ++r) {
      lnum += (out.loss[r] - expect.loss[r]) * (out.loss[r] - expect.loss[r]);
      lden += expect.loss[r] * expect.loss[r];
    }
    CHECK(std::sqrt(lnum) / std::max(std::sqrt(lden), std::sqrt(double(rows))) <= 1e-5);
    if (rows > 2) CHECK(out.loss[1] == 0.0f);
  }
}
