// The device-ceiling kernels (helios-bench peak): the MMA loop stores what it adds up (every unit the sum
// over its accumulators of iterations x A_r B_c, against float64 with fresh random operands, outputs
// poisoned, a guard past the end), lowered on this device at two shapes, f32 and f16 accumulators, and with
// the device's own coop shape where it has one; the 16-byte copy over an odd vector count with fewer
// invocations than vectors; and the size checks.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <tuple>
#include <vector>

#include "engine/core/half.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "engine/ops/peak.hpp"
#include "support/device_io.hpp"

using namespace helios;
using codegen::MmaType;
using codegen::PeakMmaParams;
using test::ctx;

namespace {

uint32_t coopLanes() {
  const vk::Device& d = ctx().device();
  return ops::coopSubgroupSize(d.subgroupSize(), d.minSubgroupSize(), d.maxSubgroupSize(),
                               d.subgroupSizeControllable());
}

// Runs `p` for `iterations` trips on `workgroups` workgroups and checks every unit's stored sum against
// iterations x sum over r, c, k of A_r[i][k] B_c[k][j] in float64.
void checkLoop(const PeakMmaParams& p, uint32_t workgroups, uint32_t iterations) {
  INFO(p.name() << ", " << workgroups << " workgroups, " << iterations << " trips");
  const size_t aSize = size_t(p.M) * p.K, bSize = size_t(p.K) * p.N;
  // Operands in [-1, 1] rounded to f16: exact in the kernel and in the reference.
  std::vector<float> values = test::randomFloats(p.rows * aSize + p.cols * bSize);
  std::vector<uint16_t> halves(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = halfToFloat(halves[i] = floatToHalf(values[i]));
  const vk::Buffer operands = test::input(halves, "peak operands");
  const size_t tile = size_t(p.M) * p.N, units = size_t(workgroups) * p.unitsPerWorkgroup(), n = units * tile;
  const bool f16 = p.c == MmaType::F16;
  const vk::Buffer out = f16 ? test::outputHalf(n, "peak out") : test::output(n, "peak out");

  ops::ImmediateExecutor exec(ctx());
  ops::peakMma(exec, operands.range(), out.range(), p, workgroups, iterations);
  exec.flush();
  std::vector<float> got;
  if (f16) {
    for (uint16_t h : test::resultHalf(out, n))
      got.push_back(halfToFloat(h));
  } else {
    got = test::result(out, n);
  }
  // Every unit stores the sum of its accumulators: iterations x sum over (r, c) of A_r B_c. Each of the
  // K x iterations additions into an accumulator, and each accumulator added to the sum, rounds at most
  // once, relative to the magnitudes summed: the error's bound relative to iterations x sum |a b|.
  const double tol = double(p.K * iterations + p.accumulators()) * (f16 ? 0x1p-11 : 0x1p-24);
  double worst = 0;
  for (uint32_t i = 0; i < p.M; ++i)
    for (uint32_t j = 0; j < p.N; ++j) {
      double sum = 0, magnitude = 1e-30;
      for (uint32_t r = 0; r < p.rows; ++r)
        for (uint32_t c = 0; c < p.cols; ++c)
          for (uint32_t k = 0; k < p.K; ++k) {
            const double prod =
                double(values[r * aSize + i * p.K + k]) * values[p.rows * aSize + c * bSize + k * p.N + j];
            sum += prod * iterations;
            magnitude += std::abs(prod) * iterations;
          }
      for (size_t u = 0; u < units; ++u) {
        const float v = got[u * tile + i * p.N + j];
        worst = std::max(worst, std::isfinite(v) ? std::abs(v - sum) / magnitude : INFINITY);
      }
    }
  CHECK(worst <= tol);
}

} // namespace

TEST_CASE("peak mma: every unit stores what its accumulators add up (lowered)", "[peak]") {
  const uint32_t lanes = coopLanes();
  if (!lanes || !ctx().device().features().shaderFloat16)
    SKIP("no subgroup size the coop kernels can require");
  for (const auto& [m, n, k] : {std::tuple{16u, 16u, 16u}, std::tuple{16u, 8u, 16u}})
    for (MmaType c : {MmaType::F32, MmaType::F16}) {
      PeakMmaParams p{.M = m,
                      .N = n,
                      .K = k,
                      .c = c,
                      .subgroupSize = lanes,
                      .subgroups = 2,
                      .rows = 2,
                      .cols = 2,
                      .lowered = true};
      if (m * n % lanes || m * k % lanes || k * n % lanes) continue;
      checkLoop(p, 3, 5);
      p.rows = 1; // an uneven grid, one trip
      p.cols = 3;
      checkLoop(p, 2, 1);
    }
}

TEST_CASE("peak mma: the device's own cooperative matrices", "[peak][coop]") {
  const ops::CoopDeviceInfo info = ops::coopDeviceInfo(ctx().device());
  if (!info.coopMatrix || info.lowered) SKIP("the device has no cooperative matrices of its own");
  const PeakMmaParams p{.M = info.coopM, .N = info.coopN, .K = info.coopK, .subgroupSize = info.subgroupSize};
  checkLoop(p, 7, 9);
}

TEST_CASE("peak mma: sizes are checked before anything is dispatched", "[peak]") {
  const PeakMmaParams p{.subgroupSize = 8, .subgroups = 2, .rows = 2, .cols = 2, .lowered = true};
  const vk::Buffer operands = ctx().buffer(ops::peakMmaOperandBytes(p), "operands");
  const vk::Buffer out = ctx().buffer(ops::peakMmaOutBytesPerWorkgroup(p) * 2, "out");
  CHECK(ops::peakMmaOperandBytes(p) == 2 * (2 * 16 * 16 + 2 * 16 * 16));
  CHECK(ops::peakMmaOutBytesPerWorkgroup(p) == 4 * (2 * 16 * 16)); // one f32 sum per subgroup
  ops::ImmediateExecutor exec(ctx());
  CHECK_THROWS_AS(ops::peakMma(exec, operands.range(), out.range(), p, 3, 1), std::invalid_argument);
  CHECK_THROWS_AS(ops::peakMma(exec, operands.range(), out.range(), p, 0, 1), std::invalid_argument);
  PeakMmaParams bf16 = p;
  bf16.ab = MmaType::BF16;
  CHECK_THROWS_AS(bf16.validate(), std::invalid_argument);
  PeakMmaParams int8Lowered = p;
  int8Lowered.ab = MmaType::S8;
  int8Lowered.c = MmaType::S32;
  int8Lowered.K = 32;
  CHECK_THROWS_AS(int8Lowered.validate(), std::invalid_argument);
  PeakMmaParams mixed = p;
  mixed.c = MmaType::S32; // f16 products into int32: no device lists it
  CHECK_THROWS_AS(mixed.validate(), std::invalid_argument);
}

TEST_CASE("peak copy: dst = src over every vector, nothing past them", "[peak]") {
  for (uint32_t vectors : {1u, 1000u, 4099u}) {
    std::vector<uint32_t> words(4 * size_t(vectors));
    std::uniform_int_distribution<uint32_t> bits;
    for (uint32_t& w : words)
      w = bits(test::rng());
    const vk::Buffer src = test::input(words, "copy src");
    const vk::Buffer dst = test::output(words.size(), "copy dst");
    ops::ImmediateExecutor exec(ctx());
    ops::peakCopy(exec, src.range(), dst.range(), vectors,
                  3); // 768 invocations: the grid-stride loop covers the rest
    exec.flush();
    const auto got = ctx().downloadVector<uint32_t>(dst, words.size() + 1);
    CHECK(std::equal(words.begin(), words.end(), got.begin()));
    CHECK(test::isPoison(std::bit_cast<float>(got.back())));
  }
  ops::ImmediateExecutor exec(ctx());
  const vk::Buffer small = ctx().buffer(64, "small");
  CHECK_THROWS_AS(ops::peakCopy(exec, small.range(), small.range(), 5, 1), std::invalid_argument);
}
