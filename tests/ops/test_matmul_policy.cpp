// The matmul coop dispatch policy (a pure function) on the captured H100 fixture and on a device without
// cooperative matrices, the coop stats line, and (on whatever Vulkan device is present, e.g. lavapipe) the
// padded path end to end with the tiled kernel standing in for the coop kernel, against ref::gemm.
#include <array>
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/core/half.hpp"
#include "engine/ops/compute_units.hpp"
#include "engine/ops/coop_stats.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "engine/ops/matmul_policy.hpp"
#include "probe/json.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

using namespace helios;
using namespace helios::ops;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::EndsWith;

namespace {

// The fixture's coop list, shared memory and subgroup size (the fields the policy reads), parsed here so the
// test needs only the JSON header.
probe::DeviceCaps loadFixture(const std::string& file) {
  std::ifstream in(std::string(HELIOS_FIXTURE_DIR) + "/coopmat/" + file);
  REQUIRE(in);
  const auto j = nlohmann::json::parse(in);
  probe::DeviceCaps caps;
  caps.name = j.value("device", "");
  caps.subgroup_size = j.value("subgroup_size", 0u);
  caps.min_subgroup_size = j.value("min_subgroup_size", 0u);
  caps.max_subgroup_size = j.value("max_subgroup_size", 0u);
  for (const auto& e : j.value("extensions", nlohmann::json::array()))
    caps.extensions.push_back(e.get<std::string>());
  caps.max_compute_shared_memory = j.value("max_compute_shared_memory_size", 0u);
  for (const auto& p : j.value("properties", nlohmann::json::array()))
    caps.coop_khr.push_back({p.at("M"), p.at("N"), p.at("K"), p.at("A"), p.at("B"), p.at("C"), p.at("Result"),
                             p.value("saturating", false), p.at("scope")});
  if (j.contains("shader_cores")) caps.shader_cores.computeUnits = j["shader_cores"].at("compute_units");
  if (j.contains("shader_bfloat16")) {
    const auto& b = j["shader_bfloat16"];
    caps.shader_bfloat16 = {true, b.value("type", false), b.value("dot_product", false),
                            b.value("cooperative_matrix", false)};
  }
  return caps;
}

CoopDeviceInfo h100() {
  return coopDeviceFromCaps(loadFixture("nvidia-h100-580.json"));
}

CoopDeviceInfo noCoop() { // lavapipe-like: no cooperative matrices at all
  probe::DeviceCaps caps;
  caps.subgroup_size = 8;
  caps.max_compute_shared_memory = 32768;
  return coopDeviceFromCaps(caps);
}

MatmulProblem problem(uint32_t M, uint32_t N, uint32_t K, uint32_t batch = 1) {
  MatmulProblem p;
  p.M = M;
  p.N = N;
  p.K = K;
  p.batch = batch;
  return p;
}

// The padded path's own rules (cap, floor) with the bounded kernel out of the way, and the bounded kernel
// for every unaligned problem over the floor up to 10 GFLOP (and over the cap at any size).
CoopPolicyConfig padOnly() {
  CoopPolicyConfig c;
  c.allowBounded = false;
  return c;
}
CoopPolicyConfig withBounded() {
  CoopPolicyConfig c;
  c.allowBounded = true;
  c.boundedMinFlops = 0;
  c.boundedMaxFlops = 1e10;
  return c;
}

uint32_t up(uint32_t x, uint32_t m) {
  return (x + m - 1) / m * m;
}

} // namespace

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

namespace {
// The H100's coop shapes and limits on a device of 24 compute units (a mid-range GPU).
CoopDeviceInfo small24() {
  probe::DeviceCaps caps = loadFixture("nvidia-h100-580.json");
  caps.shader_cores.computeUnits = 24;
  return coopDeviceFromCaps(caps);
}
} // namespace

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

// A fixture read whole by the probe's reader (vendor id and subgroup range included), e.g. the captures of
// ANV and RADV under Mesa's no-op DRM shims (tests/fixtures/coopmat/*-shim.json).
CoopDeviceInfo shimFixture(const std::string& file) {
  return coopDeviceFromCaps(probe::loadCapsFile(std::string(HELIOS_FIXTURE_DIR) + "/coopmat/" + file).at(0));
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

namespace {
// The H100 fixture plus its VK_NV_cooperative_matrix2 list (as the 580 driver reports it, int8 and bf16
// entries included: the policy must skip them).
CoopDeviceInfo h100Nv2() {
  probe::DeviceCaps caps = loadFixture("nvidia-h100-580.json");
  for (auto [m, n, k, inv] : {std::array<uint32_t, 4>{16, 16, 16, 0},
                              {16, 16, 16, 32},
                              {16, 16, 16, 64},
                              {32, 16, 16, 128},
                              {32, 32, 16, 256}}) {
    const std::string scope = inv ? "workgroup" : "subgroup";
    caps.coop_nv2.push_back({m, n, k, "float16", "float16", "float32", "float32", false, scope, inv});
    caps.coop_nv2.push_back({m, n, k * 2, "uint8", "uint8", "uint32", "uint32", false, scope, inv});
    caps.coop_nv2.push_back({m, n, k, "bfloat16", "bfloat16", "float32", "float32", false, scope, inv});
  }
  return coopDeviceFromCaps(caps);
}
} // namespace

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
  CoopPolicyConfig off;
  off.allowSplitK = false;
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
  CoopPolicyConfig cfg = padOnly();
  cfg.paddingCap = 0.30;
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
  CoopPolicyConfig tight = padOnly();
  tight.paddingCap = 0.05;
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
  CoopPolicyConfig cfg = padOnly();
  cfg.paddingCap = 0.10;
  CHECK(planMatmul(problem(1024, 1024, 80), h100(), cfg).decision == CoopDecision::Fallback);
  CHECK(planMatmul(problem(1024, 1024, 80), h100(), cfg).reason ==
        "unaligned and over the 10% padding cap (20%)");
}

TEST_CASE("policy: the 2 MFLOP floor for padded problems", "[matmul_policy]") {
  CoopPolicyConfig cfg = padOnly();
  cfg.paddingCap = 10.0; // isolate the floor
  const CoopPlan small = planMatmul(problem(63, 63, 63), h100(), cfg);
  CHECK(small.decision == CoopDecision::Fallback);
  CHECK(small.reason == "too small (0.5 MFLOP < 2 MFLOP)");
  CHECK(small.missKey == "too small");
  // Exactly at the floor passes, one FLOP below does not.
  const MatmulProblem pr = problem(100, 100, 100); // 2e6 FLOP
  CHECK(pr.flops() == 2e6);
  CHECK(planMatmul(pr, h100(), cfg).decision == CoopDecision::PaddedCoop);
  cfg.minFlops = 2e6 + 1;
  CHECK(planMatmul(pr, h100(), cfg).decision == CoopDecision::Fallback);
  // The floor does not apply to aligned problems.
  CHECK(planMatmul(problem(64, 64, 32), h100()).decision == CoopDecision::DirectCoop);
}

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
  const CoopPolicyConfig on = withBounded();
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
  CoopPolicyConfig fourOnly = on;
  fourOnly.underWaveSubgroups = false;
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
  CoopPolicyConfig alongRows = on;
  alongRows.boundedCrosswiseA = alongRows.boundedCrosswiseB = false;
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
  CoopPolicyConfig bk32 = on;
  bk32.smallTileBK = 32;
  CHECK(planMatmul(problem(1000, 1000, 1000), h100(), bk32).params.BK == 32);
  // Edge shifting (on by default): bounded plans whose tiles fit inside the problem and whose K has more than
  // one step, with vector copies, or with scalar ones on grids under one wave; never with K slices, nor with
  // B stored N x K on the single-stage tiling.
  CHECK(v.params.edgeShift);
  CHECK_THAT(v.reason, EndsWith(", edge tiles shifted inside"));
  CoopPolicyConfig noShift = on;
  noShift.edgeShift = false;
  CHECK_FALSE(planMatmul(problem(1000, 1000, 1000), h100(), noShift).params.edgeShift);
  CHECK_FALSE(planMatmul(problem(1000, 1000, 64), h100(), on).params.edgeShift); // one K step of 64
  // Scalar copies only under one wave: 511x513x257 (72 tiles) shifts, 1023x1025x511 (272) does not.
  CHECK(planMatmul(problem(511, 513, 257), h100(), on).params.edgeShift);
  CHECK_FALSE(planMatmul(problem(1023, 1025, 511), h100(), on).params.edgeShift);
  CoopPolicyConfig vectorsOnly = on;
  vectorsOnly.edgeShiftScalar = false;
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
  CoopPolicyConfig lower = on;
  lower.boundedMaxFlops = 1e6;
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
  CoopPolicyConfig c;
  c.maxKSlices = 4;
  CHECK(planMatmul(problem(65, 384, 16384), h100(), c).params.kSlices == 4);
  c.maxKSlices = 1;
  CHECK(planMatmul(problem(65, 384, 16384), h100(), c).params.kSlices == 1);
  // Under minSlicedSteps (32) K steps a GEMM stays whole, where the hand-over would cost more than the
  // steps it saves: 65x384x639 (20 steps), 511x513x257 (9, 72 tiles). From 32 on, slices keep at least
  // minSliceSteps (8): 65x384x1023 (12 tiles, 32 steps) in 4.
  CHECK(planMatmul(problem(65, 384, 640 - 1), h100(), withBounded()).params.kSlices == 1);
  CHECK(planMatmul(problem(65, 384, 1024 - 1), h100(), withBounded()).params.kSlices == 4);
  CHECK(planMatmul(problem(511, 513, 257), h100()).params.kSlices == 1);
  c = {};
  c.minSlicedSteps = 8;
  c.minSliceSteps = 4;
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
  CoopPolicyConfig bk32;
  bk32.smallTileBK = 32;
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
  CoopPolicyConfig off = padOnly();
  off.allowPadding = false;
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

TEST_CASE("coop stats: counters, hit rate and the one-line summary", "[coop_stats]") {
  coopStats().reset();
  CHECK(coopStatsLine() == "coop_matmul: 0/0 coop (0.0%) direct=0 padded=0 padded_batched=0 "
                           "transposed_a_direct=0 rewrite=0 bounded=0 fallback=0");
  for (int i = 0; i < 100; ++i)
    coopStats().record(planMatmul(problem(4096, 4096, 4096), h100()));
  for (int i = 0; i < 18; ++i)
    coopStats().record(planMatmul(problem(1000, 1000, 1000), h100(), padOnly()));
  for (int i = 0; i < 3; ++i)
    coopStats().record(planMatmul(problem(511, 513, 257), h100(), withBounded()));
  CoopPolicyConfig cfg = padOnly();
  cfg.paddingCap = 10.0;
  coopStats().record(planMatmul(problem(63, 63, 63), h100(), cfg));
  coopStats().record(planMatmul(problem(60, 60, 60), h100(), cfg));
  const CoopStatsSnapshot s = coopStats().snapshot();
  CHECK(s.total() == 123);
  CHECK(s.coop() == 121);
  CHECK(s.hitRate() == Catch::Approx(121.0 / 123.0));
  CHECK(coopStatsLine() == "coop_matmul: 121/123 coop (98.4%) direct=100 padded=18 padded_batched=0 "
                           "transposed_a_direct=0 rewrite=0 bounded=3 fallback=2 [too small: 2]");
  coopStats().record(planMatmul(problem(4096, 4096, 4096), noCoop()));
  CHECK_THAT(coopStatsLine(), ContainsSubstring("[too small: 2, no cooperative matrices on this device: 1]"));
  coopStats().reset();
  CHECK(coopStats().snapshot().total() == 0);
}

// ---- the padded path end to end on the local device, tiled kernel standing in for the coop kernel ----

namespace {

std::unique_ptr<vk::Context> tryContext() {
  try {
    return vk::Context::create();
  } catch (const std::exception& e) {
    WARN("no Vulkan device: " << e.what());
    return nullptr;
  }
}

struct OddCase {
  uint32_t M, N, K, batch;
  bool transA, transB, bias, gelu, outF16, sharedB;
  float alpha, beta;
  CoopDecision expect;
};

void runOdd(vk::Context& ctx, const OddCase& c) {
  const size_t M = c.M, N = c.N, K = c.K, batch = c.batch;
  auto halfs = [](size_t n) {
    auto v = test::randomFloats(n);
    for (auto& x : v)
      x = halfToFloat(floatToHalf(x));
    return v;
  };
  const auto a = halfs(batch * M * K), b = halfs((c.sharedB ? 1 : batch) * K * N), bias = halfs(N),
             c0 = halfs(batch * M * N);
  auto toHalf = [](const std::vector<float>& v) {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      h[i] = floatToHalf(v[i]);
    return h;
  };
  const size_t ob = c.outF16 ? 2 : 4;
  vk::Buffer ba = ctx.buffer(a.size() * 2, "A"), bb = ctx.buffer(b.size() * 2, "B"),
             bc = ctx.buffer(batch * M * N * ob, "C"), bbias = ctx.buffer(N * ob, "bias");
  ctx.uploadVector(ba, toHalf(a));
  ctx.uploadVector(bb, toHalf(b));
  if (c.outF16) {
    ctx.uploadVector(bbias, toHalf(bias));
    if (c.beta != 0.0f)
      ctx.uploadVector(bc, toHalf(c0));
    else
      ctx.uploadVector(bc, std::vector<uint16_t>(batch * M * N, 0x7e5a));
  } else {
    ctx.uploadVector(bbias, bias);
    if (c.beta != 0.0f)
      ctx.uploadVector(bc, c0);
    else
      ctx.uploadVector(bc, std::vector<float>(batch * M * N, test::poisonF32()));
  }
  MatmulArgs args;
  args.a = ba.range();
  args.b = bb.range();
  args.c = bc.range();
  if (c.bias) args.bias = bbias.range();
  args.M = c.M;
  args.N = c.N;
  args.K = c.K;
  args.batch = c.batch;
  args.transA = c.transA;
  args.transB = c.transB;
  args.alpha = c.alpha;
  args.beta = c.beta;
  args.gelu = c.gelu;
  args.aType = MatmulDType::F16;
  args.outType = c.outF16 ? MatmulDType::F16 : MatmulDType::F32;
  if (c.sharedB) args.strideB = 0;
  CoopRunOptions opt;
  opt.device = h100();   // plan as on an H100 ...
  opt.tiledInner = true; // ... but run the tiled kernel inside the pad/crop
  opt.config = c.expect == CoopDecision::Bounded ? withBounded() : padOnly();
  opt.record = false;
  ImmediateExecutor exec(ctx);
  const CoopPlan plan = matmulCoop(exec, args, opt);
  exec.flush();
  CHECK(plan.decision == c.expect);

  std::vector<float> got(batch * M * N);
  if (c.outF16) {
    const auto h = ctx.downloadVector<uint16_t>(bc, got.size());
    for (size_t i = 0; i < got.size(); ++i)
      got[i] = halfToFloat(h[i]);
  } else {
    got = ctx.downloadVector<float>(bc, got.size());
  }
  ref::GemmShape s{c.M, c.N, c.K, 1, c.transA, c.transB, c.alpha, c.beta, c.bias, c.gelu};
  ref::Vec want(batch * M * N);
  for (size_t p = 0; p < batch; ++p) {
    const std::vector<float> ap(a.begin() + p * M * K, a.begin() + (p + 1) * M * K);
    const size_t bo = c.sharedB ? 0 : p * K * N;
    const std::vector<float> bp(b.begin() + bo, b.begin() + bo + K * N);
    ref::Vec cp(c0.begin() + p * M * N, c0.begin() + (p + 1) * M * N);
    if (c.outF16)
      for (auto& x : cp)
        x = halfToFloat(floatToHalf(static_cast<float>(x)));
    ref::gemm(s, ap, bp, bias, cp);
    std::copy(cp.begin(), cp.end(), want.begin() + p * M * N);
  }
  const double err = ref::relError(got, want);
  INFO(M << "x" << N << "x" << K << " batch " << batch << " " << plan.reason << " err " << err);
  CHECK(err <= (c.outF16 ? 2e-3 : 1e-5));
}

} // namespace

TEST_CASE("matmul_coop: padded path with the tiled kernel standing in (odd shapes vs ref::gemm)",
          "[matmul_coop][vulkan]") {
  auto ctx = tryContext();
  if (!ctx) return;
  std::cout << "matmul_coop padded path on " << ctx->device().name() << ", seed " << test::testSeed() << "\n";
  using D = CoopDecision;
  const OddCase cases[] = {
      {250, 250, 250, 1, false, false, false, false, false, false, 1.0f, 0.0f, D::PaddedCoop},
      {511, 513, 257, 1, false, false, false, false, false, false, 1.0f, 0.0f, D::Bounded},
      {120, 120, 250, 3, true, false, true, true, false, false, 0.5f, 0.5f, D::Bounded},
      {250, 250, 250, 1, false, false, true, true, false, false, 0.5f, -1.25f, D::PaddedCoop},
      {250, 250, 250, 1, true, false, true, false, true, false, 1.0f, 0.0f, D::PaddedCoop},
      {250, 250, 250, 1, false, true, false, true, false, false, 2.0f, 0.5f, D::PaddedCoop},
      {250, 250, 250, 1, true, true, true, true, true, false, 1.0f, 1.0f, D::PaddedCoop},
      {120, 120, 250, 3, false, false, true, true, false, false, 1.0f, 0.5f, D::PaddedBatchedCoop},
      {128, 128, 250, 1, false, false, true, false, false, false, 1.0f, 0.0f, D::PaddedCoop}, // K only
      {60, 128, 128, 5, false, false, false, false, false, true, 1.0f, 0.0f, D::Rewrite},
      {511, 513, 257, 1, false, false, true, true, false, false, 1.0f, 0.0f, D::Fallback},
      // Weight-gradient shape (TN, long K, two 128x128 tiles): split K in 16, accumulate into C.
      {256, 128, 8192, 1, true, false, false, false, false, false, 1.0f, 1.0f, D::TransposedADirect},
      {256, 128, 8192, 1, true, false, false, false, false, false, 0.5f, -2.0f, D::TransposedADirect},
      {256, 128, 8192, 1, true, false, false, false, false, false, 2.0f, 0.0f, D::TransposedADirect},
  };
  for (const auto& c : cases)
    runOdd(*ctx, c);
}

TEST_CASE(
    "matmul roundTo f16: f32 operands multiplied as f16 match the f16 problem on rounded copies bit for "
    "bit, and float64",
    "[matmul_coop][vulkan][coop]") {
  auto ctx = tryContext();
  if (!ctx) return;
  struct Case {
    uint32_t M, N, K, batch;
    bool transA, transB;
  };
  // Aligned (direct coop on a GPU that has it), TN with long K (split K), odd (padded: rounded copies),
  // tiny (tiled), batched.
  const Case cases[] = {{256, 128, 512, 1, false, true},  {256, 128, 8192, 1, true, false},
                        {250, 250, 250, 1, false, false}, {7, 33, 127, 1, false, true},
                        {64, 64, 128, 3, false, false},   {128, 256, 64, 1, true, true}};
  for (const Case& c : cases) {
    const size_t M = c.M, N = c.N, K = c.K, batch = c.batch;
    const auto a = test::randomFloats(batch * M * K), b = test::randomFloats(batch * K * N);
    std::vector<uint16_t> ah(a.size()), bh(b.size());
    std::vector<float> ar(a.size()), br(b.size());
    for (size_t i = 0; i < a.size(); ++i)
      ar[i] = halfToFloat(ah[i] = floatToHalf(a[i]));
    for (size_t i = 0; i < b.size(); ++i)
      br[i] = halfToFloat(bh[i] = floatToHalf(b[i]));
    vk::Buffer a32 = ctx->buffer(a.size() * 4, "A f32"), b32 = ctx->buffer(b.size() * 4, "B f32"),
               a16 = ctx->buffer(a.size() * 2, "A f16"), b16 = ctx->buffer(b.size() * 2, "B f16"),
               c1 = ctx->buffer(batch * M * N * 4, "C roundTo"), c2 = ctx->buffer(batch * M * N * 4, "C f16");
    ctx->uploadVector(a32, a);
    ctx->uploadVector(b32, b);
    ctx->uploadVector(a16, ah);
    ctx->uploadVector(b16, bh);
    for (auto* cb : {&c1, &c2})
      ctx->uploadVector(*cb, std::vector<float>(batch * M * N, test::poisonF32()));
    MatmulArgs args;
    args.M = c.M;
    args.N = c.N;
    args.K = c.K;
    args.batch = c.batch;
    args.transA = c.transA;
    args.transB = c.transB;
    MatmulArgs mixed = args, half = args;
    mixed.a = a32.range();
    mixed.b = b32.range();
    mixed.c = c1.range();
    mixed.roundTo = MatmulDType::F16;
    half.a = a16.range();
    half.b = b16.range();
    half.c = c2.range();
    half.aType = MatmulDType::F16;
    ImmediateExecutor exec(*ctx);
    matmul(exec, mixed);
    matmul(exec, half);
    exec.flush();
    const auto got = ctx->downloadVector<float>(c1, batch * M * N);
    const auto cast = ctx->downloadVector<float>(c2, batch * M * N);
    INFO(M << "x" << N << "x" << K << " batch " << batch << (c.transA ? " tA" : "")
           << (c.transB ? " tB" : ""));
    CHECK(std::memcmp(got.data(), cast.data(), got.size() * 4) == 0);
    ref::GemmShape s{c.M, c.N, c.K, 1, c.transA, c.transB, 1.0f, 0.0f, false, false};
    ref::Vec want(batch * M * N);
    for (size_t p = 0; p < batch; ++p) {
      const std::vector<float> ap(ar.begin() + p * M * K, ar.begin() + (p + 1) * M * K);
      const std::vector<float> bp(br.begin() + p * K * N, br.begin() + (p + 1) * K * N);
      ref::Vec cp(M * N, 0.0);
      ref::gemm(s, ap, bp, {}, cp);
      std::copy(cp.begin(), cp.end(), want.begin() + p * M * N);
    }
    CHECK(ref::relError(got, want) <= 1e-5);
  }
  MatmulArgs bad;
  bad.M = bad.N = bad.K = 8;
  bad.aType = MatmulDType::F16;
  bad.roundTo = MatmulDType::F16;
  CHECK_THROWS_WITH(checkMatmulArgs(bad), ContainsSubstring("roundTo"));
}

TEST_CASE("compute units: the live device's count sizes the tiled GEMM's grid and the coop policy's wave",
          "[matmul_policy][vulkan]") {
  auto ctx = tryContext();
  if (!ctx) return;
  const vk::Device& device = ctx->device();
  const uint32_t units = deviceComputeUnits(device);
  const probe::ShaderCores cores = probe::queryShaderCores(VK_NULL_HANDLE, device.physical());
  INFO(device.name() << ": " << units << " units, source '" << cores.source << "'");
  if (cores.known())
    CHECK(units == cores.computeUnits);
  else if (device.properties().deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) // lavapipe: the host's threads
    CHECK(units == std::max(4u, std::thread::hardware_concurrency()));
  else
    CHECK(units == kDefaultComputeUnits);
  CHECK(gemmDeviceLimits(device).targetWorkgroups == units);
  CHECK(coopDeviceInfo(device).computeUnits == units);
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
