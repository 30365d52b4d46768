// The coop policy's view of devices (pure, on captured fixtures): coop shapes, shared memory, compute units
// and the grid-fill wave, subgroup sizes and register budgets per vendor, lowered devices, bf16.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "matmul_policy_fixtures.hpp"

using namespace helios;
using namespace helios::ops;
using namespace helios::policy_test;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::EndsWith;

TEST_CASE("policy: the H100 fixture gives 16x16x16 and 48 KiB", "[matmul_policy]") {
  const CoopDeviceInfo d = h100();
  CHECK(d.coopMatrix);
  CHECK(d.coopM == 16);
  CHECK(d.coopN == 16);
  CHECK(d.coopK == 16);
  CHECK(d.subgroupSize == 32);
  CHECK(d.maxSharedBytes == 49152);
  CHECK_FALSE(noCoop().coopMatrix);
}

TEST_CASE("policy: the grid-fill target follows the device's compute units", "[matmul_policy]") {
  CHECK(h100().computeUnits == 132); // the fixture's shader_cores
  CHECK(fillWorkgroups(132) == 120); // the wave the H100 policy was measured against
  CHECK(fillWorkgroups(24) == 22);
  CHECK(fillWorkgroups(0) == 1);
  const CoopDeviceInfo small = small24();
  CHECK(small.computeUnits == 24);
  // A capture without the field (or a device without the extensions) plans as the H100 did.
  probe::DeviceCaps bare = loadFixture("nvidia-h100-580.json");
  bare.shader_cores = {};
  CHECK(coopDeviceFromCaps(bare).computeUnits == kDefaultComputeUnits);

  // 1024^3: the 128x128 tile's 64 workgroups leave the H100 under a wave, so it takes 64x64 (256); they
  // fill 24 units, which keep the larger tile.
  CHECK(planMatmul(problem(1024, 1024, 1024), h100()).params.BM == 64);
  CHECK(planMatmul(problem(1024, 1024, 1024), small).params.BM == 128);
  // Bounded 511x513x257: 72 tiles of 64x64 are under the H100's wave (twice the subgroups per tile), over
  // the small device's.
  const CoopPlan bh = planMatmul(problem(511, 513, 257), h100());
  const CoopPlan bs = planMatmul(problem(511, 513, 257), small);
  REQUIRE(bh.decision == CoopDecision::Bounded);
  REQUIRE(bs.decision == CoopDecision::Bounded);
  CHECK(bh.params.subgroups() == 2 * bs.params.subgroups());
  // 512x512x4096: the H100 needs the 64x64 tile in 2 K slices (128 workgroups) to reach its wave; 16 tiles of
  // 128x128 in 4 slices (64) fill 24 units, with twice the work per byte loaded.
  const CoopPlan kh = planMatmul(problem(512, 512, 4096), h100());
  const CoopPlan ks = planMatmul(problem(512, 512, 4096), small);
  CHECK(kh.params.BM == 64);
  CHECK(kh.params.kSlices == 2);
  CHECK(ks.params.BM == 128);
  CHECK(ks.params.kSlices == 4);
}

TEST_CASE(
    "policy: Intel subgroups run at the matrix engine's width, accumulators within an eighth of the file",
    "[matmul_policy]") {
  const CoopDeviceInfo dg2 = shimFixture("intel-dg2-anv-shim.json"),
                       lnl = shimFixture("intel-lnl-anv-shim.json"),
                       navi31 = shimFixture("amd-navi31-radv-shim.json");
  // 128 registers of coopN 32-bit lanes: 4 KiB on DG2 (8x8x16), 8 KiB on LNL (8x16x16).
  CHECK(dg2.accumulatorBytes == 512);
  CHECK(lnl.accumulatorBytes == 1024);
  CHECK(dg2.subgroupSize == 8);
  CHECK(lnl.subgroupSize == 16);
  CHECK(navi31.accumulatorBytes == 0);
  CHECK(navi31.subgroupSize == 64);
  CHECK(h100().accumulatorBytes == 0);
  // Coop attention only where its passes compiled without spills: none on Intel, D <= 64 on NAVI31's 64
  // lanes.
  CHECK(dg2.attentionMaxHeadDim == 0);
  CHECK(lnl.attentionMaxHeadDim == 0);
  CHECK(navi31.attentionMaxHeadDim == 64);
  CHECK(h100().attentionMaxHeadDim == 128);
  for (const auto& [dev, budget] : {std::pair{dg2, 512u}, std::pair{lnl, 1024u}})
    for (const auto& pr : {problem(1024, 1024, 1024), problem(16384, 2304, 768), problem(16384, 768, 3072),
                           problem(768, 3072, 16384)}) {
      const CoopPlan p = planMatmul(pr, dev);
      REQUIRE(isCoop(p.decision));
      CHECK(coopAccumulatorBytes(p.params) <= budget);
      CHECK(p.params.biasOnVectors);
      CHECK_NOTHROW(p.params.validate());
    }
  // Without a budget the default tile stays (64 x 64 f32 per subgroup on NAVI31).
  CHECK(coopAccumulatorBytes(planMatmul(problem(4096, 4096, 4096), navi31).params) == 16384);
  // A native width outside the device's subgroup range keeps the default width (and the budget).
  const CoopRegisterPlan narrow = coopRegisterPlan(0x8086, 8, 16, 32, 32);
  CHECK(narrow.subgroupSize == 32);
  CHECK(narrow.accumulatorBytes == 512);
  const CoopRegisterPlan other = coopRegisterPlan(0x10de, 16, 32, 32, 32);
  CHECK(other.subgroupSize == 32);
  CHECK(other.accumulatorBytes == 0);
  CHECK_FALSE(other.biasOnVectors);
  CHECK_FALSE(planMatmul(problem(4096, 4096, 4096), h100()).params.biasOnVectors);
  CHECK_FALSE(planMatmul(problem(4096, 4096, 4096), navi31).params.biasOnVectors);
}

TEST_CASE("policy: the coop kernels' subgroup size and the vendors' shapes", "[matmul_policy]") {
  // Controllable: the default where the kernels take it, else the largest supported size in range.
  CHECK(coopSubgroupSize(32, 32, 32, false) == 32);
  CHECK(coopSubgroupSize(64, 32, 64, true) == 64);
  CHECK(coopSubgroupSize(32, 8, 32, true) == 32);
  CHECK(coopSubgroupSize(128, 8, 128, true) == 64);
  CHECK(coopSubgroupSize(8, 8, 8, false) == 8);
  CHECK(coopSubgroupSize(32, 8, 32, false) == 0); // varies per pipeline and cannot be fixed
  CHECK(coopSubgroupSize(128, 128, 128, true) == 0);
  // AMD RDNA3 (RADV): 16x16x16 on its default 64 lanes; Intel Arc A770 (ANV): 8x8x16 on the matrix engine's
  // 8 lanes (coopRegisterPlan; 8 to 32 allowed).
  const CoopDeviceInfo amd = shimFixture("amd-rdna3-radv.json");
  CHECK(amd.coopMatrix);
  CHECK(amd.coopM == 16);
  CHECK(amd.coopN == 16);
  CHECK(amd.coopK == 16);
  CHECK(amd.subgroupSize == 64);
  const CoopDeviceInfo arc = shimFixture("intel-arc-a770-anv.json");
  CHECK(arc.coopMatrix);
  CHECK(arc.coopM == 8);
  CHECK(arc.coopN == 8);
  CHECK(arc.coopK == 16);
  CHECK(arc.subgroupSize == 8);
  // Both plan coop GEMMs on tilings valid at their shape and subgroup size.
  for (const CoopDeviceInfo& d : {amd, arc}) {
    const CoopPlan p = planMatmul(problem(1024, 1024, 1024), d, {});
    REQUIRE(p.decision == CoopDecision::DirectCoop);
    CHECK(p.params.coopM == d.coopM);
    CHECK(p.params.subgroupSize == d.subgroupSize);
    CHECK_NOTHROW(p.params.validate());
  }
}

TEST_CASE("policy: a lowered device takes small tiles only, at every emulated shape and subgroup size",
          "[matmul_policy]") {
  const uint32_t shapes[][3] = {{16, 16, 16}, {16, 8, 16}, {16, 8, 8}, {8, 8, 16}, {8, 16, 16}};
  for (const uint32_t sg : {4u, 8u, 16u})
    for (const auto& s : shapes) {
      CoopDeviceInfo d = noCoop();
      d.subgroupSize = sg;
      d.coopMatrix = d.lowered = true;
      d.coopM = s[0], d.coopN = s[1], d.coopK = s[2];
      INFO(s[0] << "x" << s[1] << "x" << s[2] << " at " << sg << " lanes");
      for (const MatmulProblem& pr :
           {problem(256, 128, 128), problem(1024, 768, 768), problem(511, 513, 257)}) {
        const CoopPlan p = planMatmul(pr, d);
        REQUIRE(isCoop(p.decision));
        CHECK(p.params.lowered);
        CHECK(loweredTilingFits(p.params));
        CHECK_NOTHROW(p.params.validate());
      }
    }
  // The H100's tiles are not a lowered device's.
  CHECK_FALSE(loweredTilingFits(planMatmul(problem(4096, 4096, 4096), h100()).params));
}

// bf16 problems take the coop kernels where the device lists bf16 x bf16 -> f32 at its f16 shape (with
// VK_KHR_shader_bfloat16's coop feature): the same tilings, operands bf16; elsewhere, and for mixed or
// mismatched types, the fallback with the reason named.
TEST_CASE("policy: bf16 operands on bf16 cooperative matrices, else the fallback", "[matmul_policy][bf16]") {
  using codegen::Elem;
  const CoopDeviceInfo h200 = coopDeviceFromCaps(loadFixture("nvidia-h200-580-bf16.json"));
  CHECK(h200.bf16);
  CHECK(h100().bf16); // a capture predating the feature fields: its bf16 entry counts
  probe::DeviceCaps off = loadFixture("nvidia-h200-580-bf16.json");
  off.shader_bfloat16.cooperativeMatrix = false;
  CHECK_FALSE(coopDeviceFromCaps(off).bf16);
  const CoopDeviceInfo amd = coopDeviceFromCaps(loadFixture("amd-rdna3-radv.json"));
  CHECK(amd.coopMatrix);
  CHECK_FALSE(amd.bf16);

  MatmulProblem bf = problem(4096, 4096, 4096);
  bf.a = bf.b = Elem::BF16;
  CoopPlan p = planMatmul(bf, h200);
  REQUIRE(p.decision == CoopDecision::DirectCoop);
  CHECK(p.params.operands == Elem::BF16);
  CHECK(p.params.storedA == Elem::BF16);
  CHECK(p.params.storedC == Elem::F32);
  CHECK(p.params == [&] { // the f16 plan's tiling, on bf16
    MatmulProblem f16 = bf;
    f16.a = f16.b = Elem::F16;
    codegen::GemmCoopParams t = planMatmul(f16, h200).params;
    t.operands = t.storedA = t.storedB = Elem::BF16;
    return t;
  }());
  bf.c = Elem::BF16;
  CHECK(planMatmul(bf, h200).params.storedC == Elem::BF16);
  MatmulProblem odd = problem(1000, 1000, 1000); // bounded (or padded) on bf16 too
  odd.a = odd.b = Elem::BF16;
  CHECK(isCoop(planMatmul(odd, h200).decision));
  CHECK(planMatmul(odd, h200).params.operands == Elem::BF16);

  CHECK(planMatmul(bf, amd).decision == CoopDecision::Fallback);
  CHECK_THAT(planMatmul(bf, amd).reason, ContainsSubstring("bf16 inputs (no bf16 cooperative matrices"));
  MatmulProblem mixed = problem(4096, 4096, 4096);
  mixed.a = Elem::F16;
  mixed.b = Elem::BF16;
  CHECK(planMatmul(mixed, h200).reason == "type not supported: f16 x bf16 inputs");
  MatmulProblem f16Out = problem(4096, 4096, 4096);
  f16Out.a = f16Out.b = Elem::BF16;
  f16Out.c = Elem::F16;
  CHECK(planMatmul(f16Out, h200).reason == "type not supported: f16 output");
}

// The K-sliced kernel hands partial tiles between workgroups at device scope, which the Vulkan memory
// model coop kernels use allows only with vulkanMemoryModelDeviceScope: without it, no K slices.
