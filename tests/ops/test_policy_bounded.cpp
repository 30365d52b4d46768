// The coop policy's bounded kernel (pure, on captured fixtures): unaligned problems run as they are unless
// padding is cheap enough, with vector or crosswise copies, more subgroups under a wave, edge tiles shifted.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "matmul_policy_fixtures.hpp"

using namespace helios;
using namespace helios::ops;
using namespace helios::policy_test;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::EndsWith;

TEST_CASE("policy: allowed, unaligned problems run bounded unless padding is cheap enough",
          "[matmul_policy]") {
  // By default over the padding cap from 30 MFLOP: 511x513x257 (135 MFLOP, +26% padded) and 300^3
  // (54 MFLOP, +21%) run bounded, 127x513x33 (4 MFLOP) takes the tiled fallback; within the cap up to
  // 1.1 GFLOP: 511x513x513 (269 MFLOP, +12%) and 511x513x32 bounded, 1000^3 (2 GFLOP, +5%) padded unless
  // its copies can read vectors.
  CHECK(planMatmul(problem(511, 513, 257), h100()).decision == CoopDecision::Bounded);
  CHECK(planMatmul(problem(300, 300, 300), h100()).decision == CoopDecision::Bounded);
  const CoopPlan smallOver = planMatmul(problem(127, 513, 33), h100());
  CHECK(smallOver.decision == CoopDecision::Fallback);
  CHECK(smallOver.missKey == "unaligned and over the 20% padding cap");
  CHECK(planMatmul(problem(511, 513, 513), h100()).decision == CoopDecision::Bounded);
  CHECK(planMatmul(problem(511, 513, 32), h100()).decision == CoopDecision::Bounded);
  MatmulProblem scalarRows = problem(1000, 1000, 1000);
  scalarRows.vectorRows = false; // e.g. A at an offset that is not 16-byte aligned
  CHECK(planMatmul(scalarRows, h100()).decision == CoopDecision::PaddedCoop);
  // Every size a multiple of 8 (and vectorRows): bounded with vector copies at any size within the cap.
  for (const uint32_t n : {1000u, 2040u, 4000u}) {
    const CoopPlan vp = planMatmul(problem(n, n, n), h100());
    CHECK(vp.decision == CoopDecision::Bounded);
    CHECK(vp.params.boundedVectors);
  }
  CHECK(planMatmul(problem(511, 513, 257), h100(), padOnly()).decision == CoopDecision::Fallback);
  const tuning::GemmTuning on = withBounded();
  // Over the padding cap: the bounded kernel on the tiling that fills the GPU (64x64: 72 workgroups).
  const CoopPlan p = planMatmul(problem(511, 513, 257), h100(), on);
  CHECK(p.decision == CoopDecision::Bounded);
  CHECK(p.inner == CoopDecision::Bounded);
  CHECK(p.params.bounded);
  CHECK(p.params.BM == 64);
  CHECK(p.params.BN == 64);
  CHECK(p.Mp == 511);
  CHECK(p.Np == 513);
  CHECK(p.Kp == 257);
  CHECK(p.paddingOverhead == 0.0);
  CHECK(p.reason ==
        "unaligned, run as it is on 64x64x32 with bounds checks, 8 subgroups, edge tiles shifted inside");
  // 72 tiles, under a wave: the 64x64 tile split among 8 subgroups (4 x 2) instead of 4; over a wave (1023 x
  // 1025: 272 tiles), or with the rule off, 4.
  CHECK(p.params.sgRows == 4);
  CHECK(p.params.sgCols == 2);
  CHECK(planMatmul(problem(1023, 1025, 511), h100(), on).params.subgroups() == 4);
  tuning::GemmTuning fourOnly = on;
  fourOnly.underWaveSubgroups.value = false;
  const CoopPlan four = planMatmul(problem(511, 513, 257), h100(), fourOnly);
  CHECK(four.params.subgroups() == 4);
  CHECK(four.reason == "unaligned, run as it is on 64x64x32 with bounds checks, edge tiles shifted inside");
  CHECK(p.missKey.empty());
  CHECK_NOTHROW(p.params.validate());
  const auto g = helios::codegen::gemmCoopGroups(p.params, 511, 513, 1);
  CHECK(g.x == 9); // ceil(513 / 64)
  CHECK(g.y == 8);
  CHECK_FALSE(p.params.boundedVectors); // rows of 257 and 513 halves: scalar copies
  CHECK(p.params.crosswiseA);           // read down columns, staged in the other layout
  CHECK_FALSE(p.params.crosswiseB);     // stored K x N: along rows
  CHECK_THAT(p.params.name(), EndsWith("_bd_xa_es"));
  MatmulProblem nt = problem(511, 513, 257);
  nt.transB = true;
  const CoopPlan ntPlan = planMatmul(nt, h100(), on);
  CHECK(ntPlan.params.crosswiseA);
  CHECK(ntPlan.params.crosswiseB); // stored N x K: crosswise
  CHECK(ntPlan.params.stagedTransA());
  CHECK_FALSE(ntPlan.params.stagedTransB());
  CHECK(p.params.stagedTransA()); // A (M x K) staged K-major
  tuning::GemmTuning alongRows = on;
  alongRows.crosswiseA.value = alongRows.crosswiseB.value = false;
  const CoopPlan rows = planMatmul(problem(511, 513, 257), h100(), alongRows);
  CHECK(rows.decision == CoopDecision::Bounded);
  CHECK_FALSE(rows.params.crosswiseA);
  CHECK_FALSE(rows.params.crosswiseB);
  CHECK_THAT(rows.params.name(), EndsWith("_bd_es"));
  // Within the cap but small: bounded too (the pad and crop passes would cost more); every size a multiple
  // of 8, so the copies read 16-byte vectors.
  const CoopPlan v = planMatmul(problem(1000, 1000, 1000), h100(), on);
  CHECK(v.decision == CoopDecision::Bounded);
  CHECK(v.params.boundedVectors);
  CHECK_FALSE(v.params.crosswiseA);
  CHECK_FALSE(v.params.crosswiseB);
  CHECK_THAT(v.params.name(), ContainsSubstring("_bv"));
  // Vector copies take the 64x64 tile's K steps of 64 (scalar ones, as 511x513x257 above, steps of 32).
  CHECK(
      v.reason ==
      "unaligned, run as it is on 64x64x64 with bounds checks and vector copies, edge tiles shifted inside");
  CHECK(v.params.BK == 64);
  CHECK(p.params.BK == 32);
  tuning::GemmTuning bk32 = on;
  bk32.smallTileBK.value = 32;
  CHECK(planMatmul(problem(1000, 1000, 1000), h100(), bk32).params.BK == 32);
  // Edge shifting (on by default): bounded plans whose tiles fit inside the problem and whose K has more than
  // one step, with vector copies, or with scalar ones on grids under one wave; never with K slices, nor with
  // B stored N x K on the single-stage tiling.
  CHECK(v.params.edgeShift);
  CHECK_THAT(v.reason, EndsWith(", edge tiles shifted inside"));
  tuning::GemmTuning noShift = on;
  noShift.edgeShift.value = false;
  CHECK_FALSE(planMatmul(problem(1000, 1000, 1000), h100(), noShift).params.edgeShift);
  CHECK_FALSE(planMatmul(problem(1000, 1000, 64), h100(), on).params.edgeShift); // one K step of 64
  // Scalar copies only under one wave: 511x513x257 (72 tiles) shifts, 1023x1025x511 (272) does not.
  CHECK(planMatmul(problem(511, 513, 257), h100(), on).params.edgeShift);
  CHECK_FALSE(planMatmul(problem(1023, 1025, 511), h100(), on).params.edgeShift);
  tuning::GemmTuning vectorsOnly = on;
  vectorsOnly.edgeShiftScalar.value = false;
  CHECK_FALSE(planMatmul(problem(511, 513, 257), h100(), vectorsOnly).params.edgeShift);
  CHECK(planMatmul(problem(1000, 1000, 1000), h100(), vectorsOnly).params.edgeShift);
  const CoopPlan thin = planMatmul(problem(40, 4000, 4000), h100(), on); // M under any tile
  CHECK(thin.params.boundedVectors);
  CHECK_FALSE(thin.params.edgeShift);
  const CoopPlan wide = planMatmul(problem(3000, 3000, 3000), h100(), on);
  CHECK(wide.params.stages == 1);
  CHECK(wide.params.edgeShift);
  MatmulProblem bigNT = problem(3000, 3000, 3000);
  bigNT.transB = true;
  CHECK_FALSE(planMatmul(bigNT, h100(), on).params.edgeShift);
  for (const CoopPlan& q : {v, thin, wide, planMatmul(problem(4000, 4000, 4000), h100(), on)}) {
    if (q.params.edgeShift) CHECK(q.params.kSlices == 1);
    CHECK_NOTHROW(q.params.validate());
  }
  CHECK_NOTHROW(v.params.validate());
  // Within the cap, scalar copies and above boundedMaxFlops: padded; over the cap: bounded whatever the size.
  MatmulProblem bigScalar = problem(4000, 4000, 4000);
  bigScalar.vectorRows = false;
  const CoopPlan big = planMatmul(bigScalar, h100(), on);
  CHECK(big.decision == CoopDecision::PaddedCoop);
  CHECK_FALSE(big.params.bounded);
  const CoopPlan bigOver = planMatmul(problem(4000, 4000, 79), h100(), on);
  CHECK(bigOver.decision == CoopDecision::Bounded);
  CHECK(bigOver.params.BM == 128); // 4000 x 4000 fills the GPU with the large tile
  tuning::GemmTuning lower = on;
  lower.boundedMaxFlops.value = 1e6;
  CHECK(planMatmul(scalarRows, h100(), lower).decision == CoopDecision::PaddedCoop);
  // Batched unaligned: bounded, batched; below the floor: the tiled fallback still.
  const CoopPlan b = planMatmul(problem(500, 600, 1000, 4), h100(), on);
  CHECK(b.decision == CoopDecision::Bounded);
  CHECK(b.params.batched);
  const CoopPlan small = planMatmul(problem(63, 63, 63), h100(), on);
  CHECK(small.decision == CoopDecision::Fallback);
  CHECK(small.missKey == "too small");
  // Aligned problems are untouched.
  CHECK(planMatmul(problem(4096, 4096, 4096), h100()).decision == CoopDecision::DirectCoop);
  CHECK_FALSE(planMatmul(problem(4096, 4096, 4096), h100()).params.bounded);
}
