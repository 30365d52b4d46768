// Row reductions (sum, max, mean along the last axis) on the engine's device against the float64 reference.
// Thresholds: sum and mean relative Frobenius error (over all rows, denominator floored at the norm of the
// same reduction of |x|) <= 1e-5; max is exact (== the f32 max).
#include "engine/ops/reduce.hpp"
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
using codegen::RowReduceOp;

namespace {

using test::ctx;
using test::input;
using test::output;
using test::result;
inline std::vector<std::pair<uint32_t, uint32_t>> shapes() {
  return test::rowShapes();
}

ref::Reduce refOp(RowReduceOp op) {
  return op == RowReduceOp::Sum   ? ref::Reduce::Sum
         : op == RowReduceOp::Max ? ref::Reduce::Max
                                  : ref::Reduce::Mean;
}

std::vector<float> run(const vk::Buffer& bx, uint32_t rows, uint32_t cols, RowReduceOp op,
                       ops::RowKernelChoice choice = {}) {
  auto bo = output(rows, "out");
  ops::ImmediateExecutor exec(ctx());
  ops::reduceRows(exec, bx.range(), bo.range(), rows, cols, op, choice);
  exec.flush();
  return result(bo, rows);
}

void checkAgainstReference(const std::vector<float>& out, const std::vector<float>& x, uint32_t rows,
                           uint32_t cols, RowReduceOp op) {
  const auto expect = ref::reduceRows(x, rows, cols, refOp(op));
  if (op == RowReduceOp::Max) {
    for (uint32_t r = 0; r < rows; ++r)
      REQUIRE(double(out[r]) == expect[r]);
  } else {
    // A sum or mean near 0 has no relative accuracy: floor the denominator at the same reduction of |x|.
    std::vector<float> absX(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      absX[i] = std::abs(x[i]);
    const auto scale = ref::reduceRows(absX, rows, cols, refOp(op));
    double num = 0, den = 0, floor = 0;
    for (uint32_t r = 0; r < rows; ++r) {
      num += (out[r] - expect[r]) * (out[r] - expect[r]);
      den += expect[r] * expect[r];
      floor += scale[r] * scale[r];
    }
    CHECK(std::sqrt(num) / std::max({std::sqrt(den), std::sqrt(floor), 1e-30}) <= 1e-5);
  }
}

} // namespace

TEST_CASE("row reductions match the float64 reference", "[reduce]") {
  const auto [rows, cols] = GENERATE(from_range(shapes()));
  const auto op = GENERATE(RowReduceOp::Sum, RowReduceOp::Max, RowReduceOp::Mean);
  const auto strategy = GENERATE(ReduceStrategy::Subgroup, ReduceStrategy::SharedTree);
  INFO("rows " << rows << " cols " << cols << " op " << codegen::toString(op) << " strategy "
               << codegen::toString(strategy) << " seed " << test::testSeed());
  // Sums of values of one sign (no cancellation to hide errors in) for Sum, mixed signs otherwise.
  const auto x = op == RowReduceOp::Sum ? test::randomFloats(size_t(rows) * cols, 0.0f, 2.0f)
                                        : test::randomFloats(size_t(rows) * cols, -4.0f, 4.0f);
  auto bx = input(x, "x");
  checkAgainstReference(run(bx, rows, cols, op, {0, strategy}), x, rows, cols, op);
}

TEST_CASE("row reductions work for every workgroup size and strategy", "[reduce]") {
  const uint32_t wg = GENERATE(32u, 64u, 128u, 256u, 512u, 1024u);
  const auto strategy = GENERATE(ReduceStrategy::Subgroup, ReduceStrategy::SharedTree);
  const uint32_t rows = 9, cols = 3000;
  INFO("wg " << wg << " strategy " << codegen::toString(strategy) << " seed " << test::testSeed());
  const auto x = test::randomFloats(size_t(rows) * cols, -4.0f, 4.0f);
  auto bx = input(x, "x");
  for (auto op : {RowReduceOp::Sum, RowReduceOp::Max, RowReduceOp::Mean})
    checkAgainstReference(run(bx, rows, cols, op, {wg, strategy}), x, rows, cols, op);
}

TEST_CASE("row max finds the maximum wherever it is, negative rows included", "[reduce]") {
  const uint32_t rows = 40, cols = 300;
  std::vector<float> x = test::randomFloats(size_t(rows) * cols, -100.0f, -1.0f);
  for (uint32_t r = 0; r < rows; ++r)
    x[size_t(r) * cols + (r * 37) % cols] = -0.5f; // max at varying columns
  auto bx = input(x, "x");
  const auto out = run(bx, rows, cols, RowReduceOp::Max);
  for (uint32_t r = 0; r < rows; ++r)
    REQUIRE(out[r] == -0.5f);
}

TEST_CASE("more rows than one grid dimension holds use the second one", "[reduce]") {
  const uint32_t rows = 70000, cols = 3;
  const auto x = test::randomFloats(size_t(rows) * cols);
  auto bx = input(x, "x");
  checkAgainstReference(run(bx, rows, cols, RowReduceOp::Sum), x, rows, cols, RowReduceOp::Sum);
}

TEST_CASE("row reductions are deterministic", "[reduce][determinism]") {
  const uint32_t rows = 17, cols = 5000;
  const auto x = test::randomFloats(size_t(rows) * cols);
  auto bx = input(x, "x");
  const auto a = run(bx, rows, cols, RowReduceOp::Sum), b = run(bx, rows, cols, RowReduceOp::Sum);
  CHECK(std::memcmp(a.data(), b.data(), rows * 4) == 0);
}

TEST_CASE("row reductions reject mismatched sizes", "[reduce][errors]") {
  auto small = ctx().buffer(4 * 10, "small"), big = ctx().buffer(4 * 12, "big");
  ops::ImmediateExecutor exec(ctx());
  CHECK_THROWS_WITH(ops::reduceRows(exec, small.range(), big.range(), 3, 4, RowReduceOp::Sum),
                    ContainsSubstring("reduceRows: x holds 10 elements (40 bytes) but needs 12"));
  CHECK_THROWS_WITH(ops::reduceRows(exec, big.range(), small.range(), 11, 1, RowReduceOp::Max),
                    ContainsSubstring("reduceRows: out holds 10"));
  CHECK_THROWS_WITH(ops::reduceRows(exec, big.range(), big.range(), 1, 0, RowReduceOp::Mean),
                    ContainsSubstring("cols is 0"));
  CHECK_THROWS_WITH(ops::reduceRows(exec, big.range(), big.range(), 1u << 20, 1u << 13, RowReduceOp::Mean),
                    ContainsSubstring("exceeds 2^32-1"));
  CHECK(exec.dispatches() == 0);
}
