// The coop policy on unaligned problems it pads (pure, on captured fixtures): the padding cap and its
// boundary, the tile that fills the GPU, the 2 MFLOP floor, batched padding and the shared-B rewrite; misses
// name their reason.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "matmul_policy_fixtures.hpp"

using namespace helios;
using namespace helios::ops;
using namespace helios::policy_test;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::EndsWith;

TEST_CASE("policy: 511x513x257 against the 20% padding cap", "[matmul_policy]") {
  // The least padded work over the candidate tiles (128x128x32 and 64x64x32).
  const double real = 511.0 * 513.0 * 257.0;
  const double o128 = double(up(511, 128)) * up(513, 128) * up(257, 32) / real - 1.0;
  const double o64 = double(up(511, 64)) * up(513, 64) * up(257, 32) / real - 1.0;
  const double best = std::min(o128, o64);
  CHECK(best == Catch::Approx(0.2607).margin(1e-3)); // 512 x 576 x 288
  const CoopPlan p = planMatmul(problem(511, 513, 257), h100(), padOnly());
  CHECK(p.decision == CoopDecision::Fallback);
  CHECK(p.reason == "unaligned and over the 20% padding cap (26%)");
  CHECK(p.missKey == "unaligned and over the 20% padding cap");
  // A 30% cap lets it through, padded to the 64x64 tile.
  tuning::GemmTuning cfg = padOnly();
  cfg.paddingCap.value = 0.30;
  const CoopPlan q = planMatmul(problem(511, 513, 257), h100(), cfg);
  CHECK(q.decision == CoopDecision::PaddedCoop);
  CHECK(q.Mp == 512);
  CHECK(q.Np == 576);
  CHECK(q.Kp == 288);
  CHECK(q.paddingOverhead == Catch::Approx(best));
  CHECK_THAT(q.reason, ContainsSubstring("padded to 512x576x288"));
}

TEST_CASE("policy: padding prefers a tile that fills the GPU", "[matmul_policy]") {
  // 1000^3 pads to 1024^3 (+7%) on either tile; the 128x128 tile launches 64 workgroups, the 64x64 one 256.
  // (The padded path's choice alone: by default these run bounded.)
  const CoopPlan p = planMatmul(problem(1000, 1000, 1000), h100(), padOnly());
  CHECK(p.decision == CoopDecision::PaddedCoop);
  CHECK(p.params.BM == 64);
  CHECK(p.params.BN == 64);
  CHECK(p.Mp == 1024);
  CHECK(p.Kp == 1024);
  // Large enough for the 128x128 tile to fill the GPU: it stays.
  const CoopPlan big = planMatmul(problem(4000, 4000, 4000), h100(), padOnly());
  CHECK(big.decision == CoopDecision::PaddedCoop);
  CHECK(big.params.BM == 128);
  // The fuller tile only within the cap: here only the 64x64 one is within it anyway.
  tuning::GemmTuning tight = padOnly();
  tight.paddingCap.value = 0.05;
  CHECK(planMatmul(problem(1000, 1000, 1000), h100(), tight).decision == CoopDecision::Fallback);
}

TEST_CASE("policy: the padding cap boundary is inclusive", "[matmul_policy]") {
  // K = 80 pads to 96: exactly +20%.
  const CoopPlan at = planMatmul(problem(1024, 1024, 80), h100(), padOnly());
  CHECK(at.decision == CoopDecision::PaddedCoop);
  CHECK(at.Kp == 96);
  CHECK(at.paddingOverhead == Catch::Approx(0.2));
  // K = 79 pads to 96 too: +21.5%.
  const CoopPlan over = planMatmul(problem(1024, 1024, 79), h100(), padOnly());
  CHECK(over.decision == CoopDecision::Fallback);
  CHECK(over.reason == "unaligned and over the 20% padding cap (22%)");
  // The cap is configurable.
  tuning::GemmTuning cfg = padOnly();
  cfg.paddingCap.value = 0.10;
  CHECK(planMatmul(problem(1024, 1024, 80), h100(), cfg).decision == CoopDecision::Fallback);
  CHECK(planMatmul(problem(1024, 1024, 80), h100(), cfg).reason ==
        "unaligned and over the 10% padding cap (20%)");
}

TEST_CASE("policy: the 2 MFLOP floor for padded problems", "[matmul_policy]") {
  tuning::GemmTuning cfg = padOnly();
  cfg.paddingCap.value = 10.0; // isolate the floor
  const CoopPlan small = planMatmul(problem(63, 63, 63), h100(), cfg);
  CHECK(small.decision == CoopDecision::Fallback);
  CHECK(small.reason == "too small (0.5 MFLOP < 2 MFLOP)");
  CHECK(small.missKey == "too small");
  // Exactly at the floor passes, one FLOP below does not.
  const MatmulProblem pr = problem(100, 100, 100); // 2e6 FLOP
  CHECK(pr.flops() == 2e6);
  CHECK(planMatmul(pr, h100(), cfg).decision == CoopDecision::PaddedCoop);
  cfg.minFlops.value = 2e6 + 1;
  CHECK(planMatmul(pr, h100(), cfg).decision == CoopDecision::Fallback);
  // The floor does not apply to aligned problems.
  CHECK(planMatmul(problem(64, 64, 32), h100()).decision == CoopDecision::DirectCoop);
}

TEST_CASE("policy: misses name their reason", "[matmul_policy]") {
  MatmulProblem f32 = problem(4096, 4096, 4096);
  f32.a = f32.b = codegen::Elem::F32;
  CoopPlan p = planMatmul(f32, h100());
  CHECK(p.decision == CoopDecision::Fallback);
  CHECK(p.reason == "type not supported: f32 inputs");
  f32.b = codegen::Elem::F16;
  CHECK(planMatmul(f32, h100()).reason == "type not supported: f32 x f16 inputs");
  MatmulProblem bf = problem(4096, 4096, 4096);
  bf.c = codegen::Elem::BF16;
  CHECK(planMatmul(bf, h100()).reason == "type not supported: bf16 output");
  p = planMatmul(problem(4096, 4096, 4096), noCoop());
  CHECK(p.decision == CoopDecision::Fallback);
  CHECK(p.reason == "no cooperative matrices on this device");
  tuning::GemmTuning off = padOnly();
  off.allowPadding.value = false;
  CHECK(planMatmul(problem(1000, 1000, 1000), h100(), off).decision == CoopDecision::Fallback);
}

TEST_CASE("policy: batched padding and the shared-B rewrite", "[matmul_policy]") {
  const CoopPlan b = planMatmul(problem(500, 600, 1000, 4), h100(), padOnly());
  CHECK(b.decision == CoopDecision::PaddedBatchedCoop);
  CHECK(b.params.batched);
  CHECK(planMatmul(problem(512, 640, 1024, 4), h100()).decision == CoopDecision::DirectCoop);
  MatmulProblem shared = problem(250, 512, 512, 6);
  shared.sharedB = true;
  const CoopPlan r = planMatmul(shared, h100(), padOnly());
  CHECK(r.decision == CoopDecision::Rewrite);
  CHECK(r.inner == CoopDecision::PaddedCoop);
  CHECK(r.problem.M == 1500);
  CHECK(r.problem.batch == 1);
  CHECK_FALSE(r.params.batched);
  shared.M = 256;
  CHECK(planMatmul(shared, h100()).inner == CoopDecision::DirectCoop);
}
