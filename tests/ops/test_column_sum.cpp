// Column sums (engine/ops/column_sum.hpp, the bias gradients) against a float64 reference: odd and aligned
// shapes, outputs poisoned first, beta = 0 (overwrite) and beta != 0 (accumulate into what is there),
// repeatability to the bit, and the argument checks.
#include "codegen/kernels/column_sum.hpp"
#include "codegen/spirv/tools.hpp"
#include "engine/core/half.hpp"
#include "engine/ops/column_sum.hpp"
#include "engine/ops/elem_support.hpp"
#include "support/device_io.hpp"
#include "support/random.hpp"

#include <algorithm>
#include <bit>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <vector>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
using test::ctx;

namespace {

// xType F16 or BF16: x uploaded in that type (its values must be representable in it for the float64
// reference to see them).
std::vector<float> run(const std::vector<float>& x, uint32_t rows, uint32_t cols, float beta,
                       const std::vector<float>* start, codegen::Elem xType = codegen::Elem::F32) {
  std::vector<uint16_t> h(std::max<size_t>(x.size(), 1), 0);
  std::transform(x.begin(), x.end(), h.begin(),
                 [&](float f) { return xType == codegen::Elem::BF16 ? floatToBf16(f) : floatToHalf(f); });
  auto bx = codegen::isHalf(xType) ? test::input(h, "x")
                                   : test::input(x.empty() ? std::vector<float>{0.0f} : x, "x");
  auto out = test::output(cols, "out");
  if (start) {
    std::vector<float> init = *start;
    init.push_back(test::poisonF32()); // keep the guard
    ctx().uploadVector(out, init);
  }
  auto scratch = ctx().buffer(std::max<uint64_t>(ops::columnSumScratchBytes(rows, cols), 4), "scratch");
  {
    ops::ImmediateExecutor e(ctx());
    vk::BufferRange o = out.range();
    o.size = uint64_t(cols) * 4;
    ops::columnSum(e, bx.range(), o, scratch.range(), rows, cols, beta, xType);
    e.flush();
  }
  return test::result(out, cols);
}

// max |got - ref| / max(sum_r |x[r, j]|) over columns.
double relError(const std::vector<float>& got, const std::vector<float>& x, uint32_t rows, uint32_t cols,
                float beta, const std::vector<float>* start) {
  double worst = 0, norm = 1e-30;
  for (uint32_t j = 0; j < cols; ++j) {
    double ref = start && beta != 0.0f ? double(beta) * (*start)[j] : 0.0, mag = std::abs(ref);
    for (uint32_t r = 0; r < rows; ++r) {
      ref += x[size_t(r) * cols + j];
      mag += std::abs(x[size_t(r) * cols + j]);
    }
    worst = std::max(worst, std::isfinite(got[j]) ? std::abs(got[j] - ref) : INFINITY);
    norm = std::max(norm, mag);
  }
  return worst / norm;
}

} // namespace

TEST_CASE("column sums: every kernel of the sweep passes spirv-val", "[column_sum]") {
  codegen::KernelRegistry reg;
  codegen::registerColumnSum(reg);
  const auto ks = reg.find("columns.sum_f32")->all();
  // Both passes at two local sizes, the finish at 1024, the block pass on f16/bf16 x, the finish over planes
  // at three local sizes.
  CHECK(ks.size() == 10);
  for (const auto& k : ks) {
    INFO(k.name);
    CHECK(spv::validate(k.spirv).ok);
  }
}

TEST_CASE("column sums match float64, odd and aligned shapes, overwrite and accumulate", "[column_sum]") {
  const uint32_t rows = GENERATE(1u, 7u, 33u, 127u, 256u, 513u, 4096u);
  const uint32_t cols = GENERATE(1u, 7u, 33u, 384u, 513u);
  const float beta = GENERATE(0.0f, 1.0f, 0.5f);
  INFO("rows " << rows << " cols " << cols << " beta " << beta << " seed " << test::testSeed());
  const auto x = test::randomFloats(size_t(rows) * cols);
  const auto start = test::randomFloats(cols);
  // beta == 0 must not read the (poisoned, NaN) output; beta != 0 adds to what is there.
  const auto got = run(x, rows, cols, beta, beta != 0.0f ? &start : nullptr);
  CHECK(relError(got, x, rows, cols, beta, &start) < 1e-6);
}

TEST_CASE("column sums of f16 and bf16 x (mixed-precision gradients) match float64", "[column_sum]") {
  const codegen::Elem type = GENERATE(codegen::Elem::F16, codegen::Elem::BF16);
  if (!ops::supportsElem(ctx().device().features(), type)) SKIP("no 16-bit storage buffers");
  const uint32_t rows = GENERATE(1u, 7u, 127u, 513u, 4096u);
  const uint32_t cols = GENERATE(1u, 33u, 768u);
  const float beta = GENERATE(0.0f, 1.0f);
  INFO(codegen::elemName(type) << " rows " << rows << " cols " << cols << " beta " << beta << " seed "
                               << test::testSeed());
  auto x = test::randomFloats(size_t(rows) * cols, -4, 4);
  for (float& v : x)
    v = type == codegen::Elem::BF16 ? bf16ToFloat(floatToBf16(v)) : halfToFloat(floatToHalf(v));
  const auto start = test::randomFloats(cols);
  const auto got = run(x, rows, cols, beta, beta != 0.0f ? &start : nullptr, type);
  CHECK(relError(got, x, rows, cols, beta, &start) < 1e-6);
}

TEST_CASE("column sums: zero rows leave beta * out, and repeated runs give identical bits", "[column_sum]") {
  const auto start = test::randomFloats(9);
  const auto zero = run({}, 0, 9, 0.0f, nullptr);
  for (float v : zero)
    CHECK(v == 0.0f);
  const auto halved = run({}, 0, 9, 0.5f, &start);
  for (size_t j = 0; j < 9; ++j)
    CHECK(halved[j] == 0.5f * start[j]);
  const auto x = test::randomFloats(size_t(16384) * 48, -10, 10);
  const auto first = run(x, 16384, 48, 0.0f, nullptr);
  for (int r = 0; r < 3; ++r)
    CHECK(run(x, 16384, 48, 0.0f, nullptr) == first);
}

TEST_CASE("column sums: the plan covers every row with at most 256 blocks; bad arguments are named",
          "[column_sum]") {
  for (uint32_t rows : {1u, 7u, 255u, 256u, 257u, 16384u, 1000003u}) {
    const auto p = ops::columnSumPlan(rows);
    INFO("rows " << rows);
    CHECK(p.numBlocks >= 1);
    CHECK(p.numBlocks <= 256);
    CHECK(uint64_t(p.numBlocks) * p.blockRows >= rows);
    CHECK(uint64_t(p.numBlocks - 1) * p.blockRows < rows);
  }
  auto b = ctx().buffer(64, "small");
  ops::ImmediateExecutor e(ctx());
  CHECK_THROWS_WITH(ops::columnSum(e, b.range(), b.range(), b.range(), 4, 0), ContainsSubstring("cols is 0"));
  CHECK_THROWS_WITH(ops::columnSum(e, b.range(), b.range(), b.range(), 100, 4), ContainsSubstring("x"));
}

namespace {

std::vector<float> runRows(const std::vector<float>& x, uint32_t rows, uint32_t cols, float beta,
                           const std::vector<float>& start) {
  auto bx = test::input(x, "x");
  auto out = test::output(cols, "out");
  std::vector<float> init = start;
  init.push_back(test::poisonF32()); // keep the guard
  ctx().uploadVector(out, init);
  ops::ImmediateExecutor e(ctx());
  vk::BufferRange o = out.range();
  o.size = uint64_t(cols) * 4;
  ops::columnSumRows(e, bx.range(), o, rows, cols, beta);
  e.flush();
  return test::result(out, cols);
}

} // namespace

TEST_CASE("the finish pass alone (columnSumRows) matches float64, odd and aligned shapes", "[column_sum]") {
  const uint32_t rows = GENERATE(1u, 7u, 256u, 257u, 1000u, 1024u, 3001u);
  const uint32_t cols = GENERATE(1u, 33u, 384u, 513u);
  const float beta = GENERATE(0.0f, 0.5f);
  INFO("rows " << rows << " cols " << cols << " beta " << beta << " seed " << test::testSeed());
  const auto x = test::randomFloats(size_t(rows) * cols, -1.0f, 1.0f);
  const auto start =
      beta != 0.0f ? test::randomFloats(cols, -1.0f, 1.0f) : std::vector<float>(cols, test::poisonF32());
  const auto got = runRows(x, rows, cols, beta, start);
  CHECK(relError(got, x, rows, cols, beta, &start) < 1e-5);
  CHECK(runRows(x, rows, cols, beta, start) == got); // fixed order: the same bits again
}

TEST_CASE("up to 256 rows the finish pass alone gives the two-pass column sum's bits", "[column_sum]") {
  // Norm backwards used to re-block their partial planes (blocks of one row, then the finish): the one-pass
  // form adds the same numbers in the same order.
  const uint32_t rows = GENERATE(5u, 256u), cols = GENERATE(7u, 768u);
  INFO("rows " << rows << " cols " << cols << " seed " << test::testSeed());
  const auto x = test::randomFloats(size_t(rows) * cols, -1.0f, 1.0f);
  const std::vector<float> poison(cols, test::poisonF32());
  const auto one = runRows(x, rows, cols, 0.0f, poison), two = run(x, rows, cols, 0.0f, &poison);
  CHECK(std::equal(one.begin(), one.end(), two.begin(), two.end(), [](float a, float b) {
    return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
  }));
}

TEST_CASE("the finish pass widens with the rows, within the device's workgroup", "[column_sum]") {
  CHECK(ops::columnSumFinishLanes(1, 1024) == 8);
  CHECK(ops::columnSumFinishLanes(256, 1024) == 8);
  CHECK(ops::columnSumFinishLanes(257, 1024) == 16);
  CHECK(ops::columnSumFinishLanes(1024, 1024) == 32);
  CHECK(ops::columnSumFinishLanes(100000, 1024) == 32);
  CHECK(ops::columnSumFinishLanes(1024, 512) == 16);
  CHECK(ops::columnSumFinishLanes(1024, 256) == 8);
}
