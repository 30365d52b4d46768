// The coop policy's K splits (pure, on captured fixtures): TN weight gradients split into batched passes,
// single GEMMs with long K cut into slices inside one dispatch, none without device-scope synchronisation.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "matmul_policy_fixtures.hpp"

using namespace helios;
using namespace helios::ops;
using namespace helios::policy_test;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::EndsWith;

TEST_CASE("policy: long-K TN problems over few tiles split K", "[matmul_policy]") {
  MatmulProblem pr = problem(1152, 384, 16384); // a dW = X^T dY of the char model
  pr.transA = true;
  const CoopPlan p = planMatmul(pr, h100());
  CHECK(p.decision == CoopDecision::TransposedADirect);
  CHECK(p.splitK == 16); // 27 tiles of 128x128: 16 slices of 1024 make 432 workgroups
  CHECK(p.params.BM == 128);
  CHECK_THAT(p.reason, ContainsSubstring("K split in 16 slices of 1024"));
  // More than one wave but under four: fewer slices (the MLP's 768x3072 weight gradient: 144 tiles, 4).
  MatmulProblem mlp = pr;
  mlp.M = 768;
  mlp.N = 3072;
  CHECK(planMatmul(mlp, h100()).splitK == 4);
  // Four waves of tiles already, NN, f16 output, or a short K: no split.
  MatmulProblem wide = pr;
  wide.M = wide.N = 4096;
  CHECK(planMatmul(wide, h100()).splitK == 1);
  CHECK(planMatmul(problem(1152, 384, 16384), h100()).splitK == 1);
  MatmulProblem f16 = pr;
  f16.c = codegen::Elem::F16;
  CHECK(planMatmul(f16, h100()).splitK == 1);
  MatmulProblem shortK = pr;
  shortK.K = 256;
  CHECK(planMatmul(shortK, h100()).splitK == 1);
  MatmulProblem withBias = pr;
  withBias.epilogue = true;
  CHECK(planMatmul(withBias, h100()).splitK == 1);
  tuning::GemmTuning off;
  off.allowSplitK.value = false;
  CHECK(planMatmul(pr, h100(), off).splitK == 1);
  // A short K over a grid the aligned tiling fills whole (1024^3: 256 tiles of 64x64, 32 steps): no split;
  // a long one on the same grid (768x768x16384: 144 tiles, 512 steps) keeps it.
  MatmulProblem mid = problem(1024, 1024, 1024);
  mid.transA = true;
  CHECK(planMatmul(mid, h100()).splitK == 1);
  CHECK(planMatmul(mid, h100()).params.kSlices == 1);
  mid.K = 2048; // 64 tiles of 128x128 in 2 slices instead
  CHECK(planMatmul(mid, h100()).splitK == 1);
  CHECK(planMatmul(mid, h100()).params.BM == 128);
  CHECK(planMatmul(mid, h100()).params.kSlices == 2);
  MatmulProblem longK = problem(768, 768, 16384);
  longK.transA = true;
  CHECK(planMatmul(longK, h100()).splitK > 1);
  // Under one wave even split (256x256x4096: 4 tiles, 16 slices make 64): the 64x64 tile in K slices.
  MatmulProblem few = problem(256, 256, 4096);
  few.transA = true;
  const CoopPlan q = planMatmul(few, h100());
  CHECK(q.splitK == 1);
  CHECK(q.params.BM == 64);
  CHECK(q.params.kSlices == 8);
  CHECK(q.decision == CoopDecision::TransposedADirect);
}

TEST_CASE("policy: bounded problems with too few tiles cut K in slices", "[matmul_policy]") {
  // 65x384x16384 on 64x64x32: 12 tiles and 512 K steps, so up to the 16-slice cap (192 workgroups).
  const CoopPlan p = planMatmul(problem(65, 384, 16384), h100());
  CHECK(p.decision == CoopDecision::Bounded);
  CHECK(p.params.kSlices == 16);
  CHECK(p.reason == "unaligned, run as it is on 64x64x32 with bounds checks, K in 16 slices");
  CHECK_NOTHROW(p.params.validate());
  CHECK(helios::codegen::gemmCoopGroups(p.params, 65, 384, 1).z == 16);
  CHECK(helios::codegen::gemmCoopTileCount(p.params, 65, 384) == 12);
  CHECK(helios::codegen::gemmCoopPartialElements(p.params, 65, 384) == 12u * 16 * 64 * 64);
  tuning::GemmTuning c;
  c.maxKSlices.value = 4;
  CHECK(planMatmul(problem(65, 384, 16384), h100(), c).params.kSlices == 4);
  c.maxKSlices.value = 1;
  CHECK(planMatmul(problem(65, 384, 16384), h100(), c).params.kSlices == 1);
  // Under minSlicedSteps (32) K steps a GEMM stays whole, where the hand-over would cost more than the
  // steps it saves: 65x384x639 (20 steps), 511x513x257 (9, 72 tiles). From 32 on, slices keep at least
  // minSliceSteps (8): 65x384x1023 (12 tiles, 32 steps) in 4.
  CHECK(planMatmul(problem(65, 384, 640 - 1), h100(), withBounded()).params.kSlices == 1);
  CHECK(planMatmul(problem(65, 384, 1024 - 1), h100(), withBounded()).params.kSlices == 4);
  CHECK(planMatmul(problem(511, 513, 257), h100()).params.kSlices == 1);
  c = {};
  c.minSlicedSteps.value = 8;
  c.minSliceSteps.value = 4;
  CHECK(planMatmul(problem(511, 513, 257), h100(), c).params.kSlices == 2);
  // Between one and four waves, slices keep scalarBusySliceSteps (16) with scalar copies: 511x513x2049
  // (72 tiles, 65 steps) in 4; busySliceSteps (64) otherwise: 1000^3 (vector copies) and 1024^3 (256 tiles
  // of 32 steps) stay whole.
  CHECK(planMatmul(problem(1000, 1000, 1000), h100()).params.kSlices == 1);
  CHECK(planMatmul(problem(1024, 1024, 1024), h100()).params.kSlices == 1);
  CHECK(planMatmul(problem(511, 513, 2049), h100()).params.kSlices == 4);
  // Enough tiles already (16384x65x384: 512) and batched problems: no slices.
  CHECK(planMatmul(problem(16384, 65, 384), h100()).params.kSlices == 1);
  CHECK(planMatmul(problem(500, 600, 1000, 4), h100(), withBounded()).params.kSlices == 1);
}

TEST_CASE("policy: aligned single GEMMs with long K cut it in slices, TN weight gradients split it",
          "[matmul_policy]") {
  // Under a wave: slices of at least 8 steps until the grid fills it. 256x256x4096 on 64x64x64 (K steps of 64
  // where K allows): 16 tiles, 64 steps, so 8 slices of 8 steps.
  const CoopPlan a = planMatmul(problem(256, 256, 4096), h100());
  CHECK(a.decision == CoopDecision::DirectCoop);
  CHECK(a.params.kSlices == 8);
  CHECK(a.reason == "aligned to 64x64x64, K in 8 slices");
  // K not a multiple of 64: steps of 32 (256x256x4064, 127 steps: 8 slices); with smallTileBK = 32 always.
  CHECK(planMatmul(problem(256, 256, 4064), h100()).reason == "aligned to 64x64x32, K in 8 slices");
  tuning::GemmTuning bk32;
  bk32.smallTileBK.value = 32;
  CHECK(planMatmul(problem(256, 256, 4096), h100(), bk32).reason == "aligned to 64x64x32, K in 8 slices");
  // Where the largest tile, sliced, fills a wave it runs in place of the 64x64 one: 768x768x16384 is 36
  // tiles of 128x128 in 8 slices (not 144 of 64x64 in 4); slices keep 16 steps of 64. 384x384x8192 (9 big
  // tiles, 72 workgroups in 8 slices) stays on 64x64: 36 tiles in 4 slices.
  const CoopPlan big = planMatmul(problem(768, 768, 16384), h100());
  CHECK(big.params.BM == 128);
  CHECK(big.params.BN == 128);
  CHECK(big.params.kSlices == 8);
  CHECK_THAT(big.reason, ContainsSubstring("aligned to 128x128x"));
  CHECK_THAT(big.reason, ContainsSubstring("K in 8 slices"));
  const CoopPlan mid = planMatmul(problem(384, 384, 8192), h100());
  CHECK(mid.params.BM == 64);
  CHECK(mid.params.BK == 64);
  CHECK(mid.params.kSlices == 4);
  // Too few big tiles even sliced (256x256x4096: 4 of them): the 64x64 tile as above. Unaligned to the big
  // tile (832 = 13 x 64): the 64x64 one, 156 tiles in 4 slices (under four waves, slices of 64 steps).
  CHECK(a.params.BM == 64);
  const CoopPlan odd = planMatmul(problem(832, 768, 16384), h100());
  CHECK(odd.params.BM == 64);
  CHECK(odd.params.kSlices == 4);
  // 512x512x4096 (64 tiles, 64 steps): 2 (4 would leave 16 steps a slice over more than a wave); under 32
  // steps (512x512x1024, 256x256x1024, 512x512x512), a short K or a full GPU: none.
  CHECK(planMatmul(problem(512, 512, 4096), h100()).params.kSlices == 2);
  CHECK(planMatmul(problem(512, 512, 1024), h100()).params.kSlices == 1);
  CHECK(planMatmul(problem(256, 256, 1024), h100()).params.kSlices == 1);
  CHECK(planMatmul(problem(512, 512, 512), h100()).params.kSlices == 1);
  CHECK(planMatmul(problem(512, 512, 128), h100()).params.kSlices == 1);
  CHECK(planMatmul(problem(4096, 4096, 4096), h100()).params.kSlices == 1);
  // The bounded kernel keeps K steps of 32 (its scalar copies were slower on 64).
  CHECK(planMatmul(problem(511, 513, 257), h100(), withBounded()).params.BK == 32);
  // TN with f32 C and no epilogue keeps the batched split; with an epilogue it takes slices instead.
  MatmulProblem tn = problem(768, 768, 16384);
  tn.transA = true;
  const CoopPlan split = planMatmul(tn, h100());
  CHECK(split.splitK > 1);
  CHECK(split.params.kSlices == 1);
  tn.epilogue = true;
  const CoopPlan sliced = planMatmul(tn, h100());
  CHECK(sliced.splitK == 1);
  CHECK(sliced.params.BM == 128);
  CHECK(sliced.params.kSlices == 8);
  CHECK_NOTHROW(sliced.params.validate());
}

TEST_CASE("policy: no K slices without device-scope synchronisation", "[matmul_policy]") {
  MatmulProblem few = problem(256, 256, 4096);
  few.transA = true;
  CHECK(planMatmul(few, h100()).params.kSlices == 8);
  CoopDeviceInfo noScope = h100();
  noScope.deviceScope = false;
  const CoopPlan p = planMatmul(few, noScope);
  CHECK(isCoop(p.decision));
  CHECK(p.params.kSlices == 1);
}
