// Softmax along the last axis (forward: dense, scaled, causal; backward) on the engine's device, against the
// float64 references, finite differences of the reference forward, and the glslang-compiled GLSL oracle.
// Thresholds (f32 storage and arithmetic): forward relative Frobenius error <= 1e-5, backward <= 2e-5
// (denominator floored at ||y * dy||), finite differences <= 1e-4, GLSL oracle (same f32 inputs, different
// summation order) <= 2e-6.
#include "engine/ops/document_positions.hpp"
#include "engine/ops/softmax.hpp"
#include "support/device_io.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"
#include "support/spirv_file.hpp"

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

// dx = y * (dy - <dy, y>) cancels where dy ~ <dy, y>; f32 rounding is relative to y * dy, so the error is
// measured against max(||dx||, ||y * dy||).
double backwardError(const std::vector<float>& dx, const ref::Vec& expect, const std::vector<float>& y,
                     const std::vector<float>& dy, double scale = 1.0) {
  double num = 0, den = 0, floor = 0;
  for (size_t i = 0; i < expect.size(); ++i) {
    if (!std::isfinite(dx[i])) return 1e30;
    num += (dx[i] - expect[i]) * (dx[i] - expect[i]);
    den += expect[i] * expect[i];
    floor += scale * scale * double(y[i]) * y[i] * dy[i] * dy[i];
  }
  return std::sqrt(num) / std::max({std::sqrt(den), std::sqrt(floor), 1e-30});
}

std::vector<float> toFloat(const ref::Vec& v) {
  return std::vector<float>(v.begin(), v.end());
}

// Reference for the scaled, causal variant: per row, softmax of scale*x over the visible prefix, 0 after.
ref::Vec causalReference(const std::vector<float>& x, uint32_t rows, uint32_t cols, float scale,
                         uint32_t queries) {
  ref::Vec y(size_t(rows) * cols, 0.0);
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t visible = queries ? std::min(cols, r % queries + cols - queries + 1) : cols;
    std::vector<float> row(visible);
    for (uint32_t j = 0; j < visible; ++j)
      row[j] = x[size_t(r) * cols + j] * scale;
    const auto yr = ref::softmax(row, 1, visible);
    for (uint32_t j = 0; j < visible; ++j)
      y[size_t(r) * cols + j] = yr[j];
  }
  return y;
}

// Positions inside documents (ops::documentPositions' contract): each sequence of T ids restarts its
// positions after every end-of-text id.
std::vector<int32_t> documentPositionsReference(const std::vector<int32_t>& ids, uint32_t T, int32_t eot) {
  std::vector<int32_t> pos(ids.size());
  for (size_t t = 0; t < ids.size(); ++t) {
    const size_t first = t / T * T;
    size_t start = first;
    for (size_t u = first; u < t; ++u)
      if (ids[u] == eot) start = u + 1;
    pos[t] = static_cast<int32_t>(t - start);
  }
  return pos;
}

// The packed causal mask: query q of sequence s sees columns [last - pos, last], last = q + cols - queries.
ref::Vec documentsReference(const std::vector<float>& x, uint32_t rows, uint32_t cols, float scale,
                            uint32_t queries, uint32_t rowsPerSequence, const std::vector<int32_t>& pos) {
  ref::Vec y(size_t(rows) * cols, 0.0);
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t q = r % queries, last = q + cols - queries;
    const uint32_t begin = last - uint32_t(pos[size_t(r / rowsPerSequence) * queries + q]);
    std::vector<float> row;
    for (uint32_t j = begin; j <= last; ++j)
      row.push_back(x[size_t(r) * cols + j] * scale);
    const auto yr = ref::softmax(row, 1, uint32_t(row.size()));
    for (uint32_t j = begin; j <= last; ++j)
      y[size_t(r) * cols + j] = yr[j - begin];
  }
  return y;
}

} // namespace

TEST_CASE("softmax forward matches the float64 reference", "[softmax]") {
  const auto [rows, cols] = GENERATE(from_range(shapes()));
  const auto strategy = GENERATE(ReduceStrategy::Subgroup, ReduceStrategy::SharedTree);
  INFO("rows " << rows << " cols " << cols << " strategy " << codegen::toString(strategy) << " seed "
               << test::testSeed());
  const size_t n = size_t(rows) * cols;
  const auto x = test::randomFloats(n, -8.0f, 8.0f);
  auto bx = input(x, "x");
  auto by = output(n, "y");
  ops::ImmediateExecutor exec(ctx());
  ops::softmax(exec, bx.range(), by.range(), rows, cols, {.kernel = {0, strategy}});
  exec.flush();
  const auto y = result(by, n);
  CHECK(ref::relError(y, ref::softmax(x, rows, cols)) <= 1e-5);
}

TEST_CASE("softmax backward matches the float64 reference", "[softmax]") {
  const auto [rows, cols] = GENERATE(from_range(shapes()));
  const auto strategy = GENERATE(ReduceStrategy::Subgroup, ReduceStrategy::SharedTree);
  INFO("rows " << rows << " cols " << cols << " strategy " << codegen::toString(strategy) << " seed "
               << test::testSeed());
  const size_t n = size_t(rows) * cols;
  const auto y = toFloat(ref::softmax(test::randomFloats(n, -4.0f, 4.0f), rows, cols));
  const auto dy = test::randomFloats(n);
  auto byy = input(y, "y"), bdy = input(dy, "dy");
  auto bdx = output(n, "dx");
  ops::ImmediateExecutor exec(ctx());
  ops::softmaxBackward(exec, byy.range(), bdy.range(), bdx.range(), rows, cols, 1.0f, {0, strategy});
  exec.flush();
  const auto dx = result(bdx, n);
  CHECK(backwardError(dx, ref::softmaxBackward(y, dy, rows, cols), y, dy) <= 2e-5);
}

TEST_CASE("softmax with scale and causal mask matches the reference", "[softmax]") {
  // Attention-like: blocks of `queries` rows (batch*heads of them) over `cols` keys.
  const auto [queries, cols] = GENERATE(std::pair{1u, 1u}, std::pair{7u, 7u}, std::pair{33u, 40u},
                                        std::pair{64u, 64u}, std::pair{127u, 513u});
  const uint32_t rows = queries * 3;
  const float scale = 0.125f;
  INFO("queries " << queries << " cols " << cols << " seed " << test::testSeed());
  const size_t n = size_t(rows) * cols;
  const auto x = test::randomFloats(n, -8.0f, 8.0f);
  auto bx = input(x, "x");
  auto by = output(n, "y"), bdx = output(n, "dx");
  ops::ImmediateExecutor exec(ctx());
  ops::softmax(exec, bx.range(), by.range(), rows, cols, {.scale = scale, .causalQueries = queries});
  exec.flush();
  const auto y = result(by, n);
  const auto expect = causalReference(x, rows, cols, scale, queries);
  CHECK(ref::relError(y, expect) <= 1e-5);
  for (size_t i = 0; i < n; ++i)
    if (expect[i] == 0.0) REQUIRE(y[i] == 0.0f); // masked entries are exactly zero

  // Backward of the scaled forward: dx = scale * y * (dy - <dy, y>).
  const auto dy = test::randomFloats(n);
  auto bdy = input(dy, "dy");
  ops::softmaxBackward(exec, by.range(), bdy.range(), bdx.range(), rows, cols, scale);
  exec.flush();
  const auto dx = result(bdx, n);
  auto expectDx = ref::softmaxBackward(y, dy, rows, cols);
  for (auto& v : expectDx)
    v *= scale;
  CHECK(backwardError(dx, expectDx, y, dy, scale) <= 2e-5);
}

TEST_CASE("softmax backward matches finite differences of the reference forward", "[softmax]") {
  const auto [rows, cols] = GENERATE(std::pair{2u, 7u}, std::pair{3u, 33u});
  INFO("rows " << rows << " cols " << cols << " seed " << test::testSeed());
  const size_t n = size_t(rows) * cols;
  auto x = test::randomFloats(n, -2.0f, 2.0f);
  const auto dy = test::randomFloats(n);
  auto bx = input(x, "x"), bdy = input(dy, "dy");
  auto by = output(n, "y"), bdx = output(n, "dx");
  ops::ImmediateExecutor exec(ctx());
  ops::softmax(exec, bx.range(), by.range(), rows, cols);
  ops::softmaxBackward(exec, by.range(), bdy.range(), bdx.range(), rows, cols);
  exec.flush();
  result(by, n);
  const auto dx = result(bdx, n);

  // L(x) = sum dy * softmax(x); central differences with the step actually representable in float.
  const auto loss = [&](const std::vector<float>& xs) {
    const auto y = ref::softmax(xs, rows, cols);
    double l = 0;
    for (size_t i = 0; i < n; ++i)
      l += dy[i] * y[i];
    return l;
  };
  ref::Vec fd(n);
  for (size_t i = 0; i < n; ++i) {
    const float x0 = x[i];
    x[i] = x0 + 1e-2f;
    const double up = loss(x), hUp = double(x[i]) - x0;
    x[i] = x0 - 1e-2f;
    const double down = loss(x), hDown = double(x0) - x[i];
    x[i] = x0;
    fd[i] = (up - down) / (hUp + hDown);
  }
  CHECK(ref::relError(dx, fd) <= 1e-4);
}

TEST_CASE("generated softmax agrees with the GLSL oracle", "[softmax][oracle]") {
  const auto [rows, cols] =
      GENERATE(std::pair{1u, 1u}, std::pair{7u, 33u}, std::pair{33u, 513u}, std::pair{64u, 1024u});
  INFO("rows " << rows << " cols " << cols << " seed " << test::testSeed());
  const size_t n = size_t(rows) * cols;
  const auto x = test::randomFloats(n, -8.0f, 8.0f);
  auto bx = input(x, "x");
  auto by = output(n, "y"), bo = output(n, "oracle y");
  ops::ImmediateExecutor exec(ctx());
  ops::softmax(exec, bx.range(), by.range(), rows, cols, {.kernel = {128, ReduceStrategy::Subgroup}});
  const auto& oracle = ctx().pipelines().get(test::glslOracle("softmax", 2, 8, {128, 1, 1}));
  struct {
    uint32_t rows, cols;
  } push{rows, cols};
  static_cast<ops::Executor&>(exec).dispatch(
      oracle, {{bx.range(), ops::Access::Read}, {bo.range(), ops::Access::Write}}, push, {rows, 1, 1});
  exec.flush();
  const auto y = result(by, n), o = result(bo, n);
  CHECK(ref::relError(y, ref::Vec(o.begin(), o.end())) <= 2e-6);
  CHECK(ref::relError(o, ref::softmax(x, rows, cols)) <= 1e-5);
}

TEST_CASE("softmax works for every workgroup size and reduction strategy", "[softmax]") {
  const uint32_t wg = GENERATE(32u, 64u, 128u, 256u, 512u, 1024u);
  const auto strategy = GENERATE(ReduceStrategy::Subgroup, ReduceStrategy::SharedTree);
  const uint32_t rows = 5, cols = 1500;
  INFO("wg " << wg << " strategy " << codegen::toString(strategy) << " seed " << test::testSeed());
  const size_t n = size_t(rows) * cols;
  const auto x = test::randomFloats(n, -8.0f, 8.0f);
  const auto dy = test::randomFloats(n);
  auto bx = input(x, "x"), bdy = input(dy, "dy");
  auto by = output(n, "y"), bdx = output(n, "dx");
  ops::ImmediateExecutor exec(ctx());
  ops::softmax(exec, bx.range(), by.range(), rows, cols, {.kernel = {wg, strategy}});
  ops::softmaxBackward(exec, by.range(), bdy.range(), bdx.range(), rows, cols, 1.0f, {wg, strategy});
  exec.flush();
  const auto y = result(by, n);
  const auto dx = result(bdx, n);
  CHECK(ref::relError(y, ref::softmax(x, rows, cols)) <= 1e-5);
  CHECK(backwardError(dx, ref::softmaxBackward(y, dy, rows, cols), y, dy) <= 2e-5);
}

TEST_CASE("softmax is deterministic: same inputs, bit-identical outputs", "[softmax][determinism]") {
  const uint32_t rows = 33, cols = 1024;
  const size_t n = size_t(rows) * cols;
  const auto x = test::randomFloats(n, -8.0f, 8.0f);
  const auto dy = test::randomFloats(n);
  auto bx = input(x, "x"), bdy = input(dy, "dy");
  std::vector<float> first[2];
  for (int run = 0; run < 2; ++run) {
    auto by = output(n, "y"), bdx = output(n, "dx");
    ops::ImmediateExecutor exec(ctx());
    ops::softmax(exec, bx.range(), by.range(), rows, cols);
    ops::softmaxBackward(exec, by.range(), bdy.range(), bdx.range(), rows, cols);
    exec.flush();
    auto y = result(by, n), dx = result(bdx, n);
    if (run == 0) {
      first[0] = std::move(y);
      first[1] = std::move(dx);
    } else {
      CHECK(std::memcmp(first[0].data(), y.data(), n * 4) == 0);
      CHECK(std::memcmp(first[1].data(), dx.data(), n * 4) == 0);
    }
  }
}

TEST_CASE("softmax rejects mismatched sizes", "[softmax][errors]") {
  auto small = ctx().buffer(4 * 10, "small"), big = ctx().buffer(4 * 12, "big");
  ops::ImmediateExecutor exec(ctx());
  CHECK_THROWS_WITH(ops::softmax(exec, big.range(), small.range(), 3, 4),
                    ContainsSubstring("softmax: y holds 10"));
  CHECK_THROWS_WITH(ops::softmax(exec, small.range(), big.range(), 3, 4),
                    ContainsSubstring("softmax: x holds 10"));
  CHECK_THROWS_WITH(ops::softmax(exec, big.range(), big.range(), 3, 0), ContainsSubstring("cols is 0"));
  CHECK_THROWS_WITH(ops::softmax(exec, big.range(), big.range(), 3, 4, {.causalQueries = 5}),
                    ContainsSubstring("causalQueries"));
  CHECK_THROWS_WITH(ops::softmaxBackward(exec, big.range(), small.range(), big.range(), 3, 4),
                    ContainsSubstring("softmaxBackward: dy holds 10"));
  CHECK(exec.dispatches() == 0);
}

TEST_CASE("document positions restart after each end-of-text id, per sequence", "[softmax][documents]") {
  const auto [sequences, T] = GENERATE(std::pair{1u, 1u}, std::pair{3u, 7u}, std::pair{2u, 37u},
                                       std::pair{5u, 130u}, std::pair{1u, 1025u});
  INFO("sequences " << sequences << " T " << T << " seed " << test::testSeed());
  const int32_t eot = 5;
  std::vector<int32_t> ids(size_t(sequences) * T);
  std::uniform_int_distribution<int32_t> id(0, 9); // one id in ten ends a document
  for (auto& v : ids)
    v = id(test::rng());
  if (T > 2) ids[1] = ids[T - 1] = eot; // a document of one token, one ending the sequence
  const auto expect = documentPositionsReference(ids, T, eot);
  auto bids = input(ids, "ids");
  auto bpos = output(ids.size(), "pos");
  ops::ImmediateExecutor exec(ctx());
  ops::documentPositions(exec, bids.range(), bpos.range(), sequences, T, eot);
  exec.flush();
  const auto raw = result(bpos, ids.size());
  std::vector<int32_t> pos(raw.size());
  std::memcpy(pos.data(), raw.data(), raw.size() * 4);
  CHECK(pos == expect);
  CHECK_THROWS_WITH(ops::documentPositions(exec, bids.range(), bpos.range(), sequences + 1, T, eot),
                    ContainsSubstring("ids holds"));
}

TEST_CASE("softmax with the causal mask inside documents matches the reference", "[softmax][documents]") {
  // Packed attention scores: `sequences` x `heads` blocks of `queries` rows over `cols` keys.
  const auto [queries, cols] = GENERATE(std::pair{1u, 1u}, std::pair{7u, 7u}, std::pair{37u, 37u},
                                        std::pair{33u, 40u}, std::pair{130u, 130u});
  const auto strategy = GENERATE(ReduceStrategy::Subgroup, ReduceStrategy::SharedTree);
  const uint32_t sequences = 2, heads = 3, rows = sequences * heads * queries;
  const float scale = 0.3f;
  INFO("queries " << queries << " cols " << cols << " seed " << test::testSeed());
  std::vector<int32_t> ids(size_t(sequences) * queries);
  std::uniform_int_distribution<int32_t> id(0, 6);
  for (auto& v : ids)
    v = id(test::rng());
  if (queries > 2) ids[queries / 2] = 0; // at least one end-of-text with queries after it
  const auto pos = documentPositionsReference(ids, queries, 0);
  const size_t n = size_t(rows) * cols;
  const auto x = test::randomFloats(n, -8.0f, 8.0f);
  auto bx = input(x, "x"), bpos = input(pos, "pos");
  auto by = output(n, "y");
  ops::ImmediateExecutor exec(ctx());
  ops::SoftmaxOptions o{.scale = scale, .causalQueries = queries, .kernel = {0, strategy}};
  o.documentPositions = bpos.range();
  o.rowsPerSequence = heads * queries;
  ops::softmax(exec, bx.range(), by.range(), rows, cols, o);
  exec.flush();
  const auto y = result(by, n);
  const auto expect = documentsReference(x, rows, cols, scale, queries, heads * queries, pos);
  CHECK(ref::relError(y, expect) <= 1e-5);
  size_t masked = 0;
  for (size_t i = 0; i < n; ++i)
    if (expect[i] == 0.0) {
      REQUIRE(y[i] == 0.0f); // other documents' keys and future keys are exactly zero
      ++masked;
    }
  // Beyond the causal mask, documents hid keys (a query follows the planted end-of-text id).
  if (queries > 1) CHECK(masked > size_t(sequences) * heads * queries * (queries - 1) / 2);

  o.rowsPerSequence = 4 * queries; // not a whole number of sequences
  CHECK_THROWS_WITH(ops::softmax(exec, bx.range(), by.range(), rows, cols, o),
                    ContainsSubstring("rowsPerSequence"));
  o.causalQueries = 0;
  CHECK_THROWS_WITH(ops::softmax(exec, bx.range(), by.range(), rows, cols, o), ContainsSubstring("causal"));
}
