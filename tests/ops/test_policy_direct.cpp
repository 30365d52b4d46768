// The coop policy on aligned problems (pure, on captured fixtures): the direct kernel, its staged store,
// NV coopmat2's workgroup-scope kernel first where enabled, TN read column-major.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "engine/ops/gemm_plan.hpp"
#include "matmul_policy_fixtures.hpp"

using namespace helios;
using namespace helios::ops;
using namespace helios::policy_test;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::EndsWith;

TEST_CASE("policy: aligned problems run the coop kernel directly", "[matmul_policy]") {
  const CoopPlan p = planMatmul(problem(4096, 4096, 4096), h100());
  CHECK(p.decision == CoopDecision::DirectCoop);
  CHECK(p.missKey.empty());
  CHECK(p.params.BM == 128);
  CHECK(p.params.BN == 128);
  CHECK(p.Mp == 4096);
  CHECK(p.paddingOverhead == 0.0);
  CHECK_NOTHROW(p.params.validate());
  CHECK(p.params.subgroupSize == 32);
  // A small aligned problem takes the tile that launches more workgroups.
  const CoopPlan s = planMatmul(problem(256, 256, 64), h100());
  CHECK(s.decision == CoopDecision::DirectCoop);
  CHECK(s.params.BM == 64);
  // Aligned only to the 64x64 tile: still direct.
  CHECK(planMatmul(problem(192, 320, 96), h100()).decision == CoopDecision::DirectCoop);
  // Grids of at least 16 x 16 tiles walk bands of 8 tile rows (L2 reuse of B); narrower ones row by row.
  CHECK(p.params.groupM == 8);
  CHECK(planMatmul(problem(16384, 50304, 768), h100()).params.groupM == 8);
  CHECK(planMatmul(problem(16384, 768, 768), h100()).params.groupM == 0);
}

TEST_CASE("policy: C leaves through shared memory where the kernel and C's binding allow it",
          "[matmul_policy]") {
  const CoopPlan p = planMatmul(problem(4096, 4096, 4096), h100());
  MatmulArgs args;
  args.c.offset = 256;
  CHECK(coopKernelParams(p, args).stagedStore);
  args.c.offset = 8; // row vectors of 4 floats need 16 bytes; of 4 halves, 8
  CHECK_FALSE(coopKernelParams(p, args).stagedStore);
  CoopPlan half = p;
  half.params.storedC = codegen::Elem::F16;
  CHECK(coopKernelParams(half, args).stagedStore);
  args.c.offset = 0;
  args.beta = 1.0f; // alpha/beta reads C through coop loads: the direct store stays
  CHECK_FALSE(coopKernelParams(p, args).stagedStore);
  args.beta = 0.0f;
  CHECK(coopKernelParams(p, args).name().ends_with("_ss"));
}

TEST_CASE("policy: with NV coopmat2 the workgroup-scope kernel comes first", "[matmul_policy]") {
  const CoopDeviceInfo d = h100Nv2();
  REQUIRE(d.workgroupShapes.size() == 4); // f16 x f16 -> f32 at workgroup scope only
  const CoopPlan p = planMatmul(problem(4096, 4096, 4096), d);
  CHECK(p.decision == CoopDecision::DirectCoop);
  CHECK(p.params.workgroupScope);
  CHECK(p.params.BM == 128);
  CHECK(p.params.BN == 256);
  CHECK(p.params.invocations() == 256);
  CHECK(p.params.coopM == 32); // the 256-invocation granularity, not the KHR shape
  CHECK(p.params.coopN == 32);
  CHECK(p.params.coopK == 16);
  CHECK(p.params.tensorLayouts); // tensor-layout loads, K unrolled: the fast form on the 580 driver
  CHECK(p.params.unroll == 8);
  CHECK_NOTHROW(p.params.validate());
  CHECK_THAT(p.params.name(), ContainsSubstring("gemm_coop2_nn_f32_128x256x32_wg256_g32x32x16_u8_tl"));
  // Small: the 64x64 tile on 128 invocations launches more workgroups.
  const CoopPlan s = planMatmul(problem(256, 256, 64), d);
  CHECK(s.params.workgroupScope);
  CHECK(s.params.BM == 64);
  CHECK(s.params.invocations() == 128);
  // K = 56 is a multiple of neither BK = 32 nor 64: padded to 64 (+14%), still workgroup scope.
  const CoopPlan q = planMatmul(problem(1024, 1024, 56), d, padOnly());
  CHECK(q.decision == CoopDecision::PaddedCoop);
  CHECK(q.params.workgroupScope);
  // Run as it is instead, it takes a subgroup-scope tiling: the bounded kernel is KHR only.
  const CoopPlan qb = planMatmul(problem(1024, 1024, 56), d, withBounded());
  CHECK(qb.decision == CoopDecision::Bounded);
  CHECK_FALSE(qb.params.workgroupScope);
  CHECK_NOTHROW(qb.params.validate());
  // A device whose flexible dimensions stop at 64 only gets the 64x64 tile.
  CoopDeviceInfo capped = d;
  capped.workgroupMaxDimension = 64;
  const CoopPlan c = planMatmul(problem(4096, 4096, 4096), capped);
  CHECK(c.params.workgroupScope);
  CHECK(c.params.BM == 64);
  // Without the NV2 list (the default on a live device, or another vendor): the subgroup-scope kernel.
  CoopDeviceInfo khr = d;
  khr.workgroupShapes.clear();
  CHECK_FALSE(planMatmul(problem(4096, 4096, 4096), khr).params.workgroupScope);
}

TEST_CASE("policy: TN aligned reads A column-major directly", "[matmul_policy]") {
  MatmulProblem pr = problem(1024, 2048, 512);
  pr.transA = true;
  const CoopPlan p = planMatmul(pr, h100());
  CHECK(p.decision == CoopDecision::TransposedADirect);
  CHECK(p.params.transA);
  CHECK_FALSE(p.params.transB);
  pr.transB = true;
  CHECK(planMatmul(pr, h100()).decision == CoopDecision::TransposedADirect);
  pr.transA = false;
  CHECK(planMatmul(pr, h100()).decision == CoopDecision::DirectCoop);
}
