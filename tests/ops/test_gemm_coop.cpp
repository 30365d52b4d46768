// Cooperative-matrix GEMM generator: every registered variant passes spirv-val (Vulkan 1.3), parameters are
// checked with readable errors, cache keys cover every field, every coop shape and subgroup size has a menu.
// On a device with cooperative matrices (a GPU, or lavapipe with the coop ops lowered) the menu's tilings and
// the variants run at the device's shape and subgroup size against float64.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cmath>
#include <iostream>
#include <set>
#include <span>
#include <stdexcept>

#include "codegen/kernels/gemm_coop.hpp"
#include "codegen/kernels/gemm_coop_nv2.hpp"
#include "codegen/spirv/tools.hpp"
#include "engine/core/half.hpp"
#include "engine/ops/executor.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "engine/ops/matmul_policy.hpp"
#include "support/device_io.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

using Catch::Matchers::ContainsSubstring;
using helios::codegen::Elem;
using helios::codegen::GemmCoopParams;
using helios::codegen::Kernel;

TEST_CASE("gemm_coop: the whole registered sweep passes spirv-val", "[gemm_coop]") {
  helios::codegen::KernelRegistry r;
  helios::codegen::registerGemmCoop(r);
  const auto* g = r.find("gemm.coop");
  REQUIRE(g);
  const std::vector<Kernel> ks = g->all();
  std::set<std::string> keys, names;
  size_t failures = 0;
  for (const Kernel& k : ks) {
    const auto v = helios::spv::validate(k.spirv, helios::spv::TargetEnv::Vulkan1_3);
    if (!v.ok) {
      ++failures;
      UNSCOPED_INFO(k.name << ":\n" << v.message);
    }
    keys.insert(k.cacheKey);
    names.insert(k.name);
    // Other subgroup sizes than 32 end the name ("_w8", "_w16", "_w64").
    CHECK(k.name.ends_with("_w" + std::to_string(k.requiredSubgroupSize)) == (k.requiredSubgroupSize != 32));
    CHECK(k.localSize[0] % k.requiredSubgroupSize == 0);
    CHECK(k.pushConstantBytes == sizeof(helios::codegen::GemmCoopPush));
  }
  std::cout << "gemm.coop sweep: " << ks.size() << " kernels, " << ks.size() - failures
            << " spirv-val clean\n";
  CHECK(failures == 0);
  CHECK(ks.size() >= 100);
  CHECK(keys.size() == ks.size());  // no two variants share a cache key
  CHECK(names.size() == ks.size()); // nor a name
}

TEST_CASE("gemm_coop: default tiling and interface", "[gemm_coop]") {
  const GemmCoopParams p = helios::codegen::gemmCoopDefault();
  CHECK(p.BM == 128);
  CHECK(p.BN == 128);
  CHECK(p.accM() * p.accN() == 16);
  const Kernel k = helios::codegen::generateGemmCoop(p);
  CHECK(k.localSize[0] == 128);
  CHECK(k.numBuffers == 3);
  GemmCoopParams b = p;
  b.bias = true;
  CHECK(helios::codegen::generateGemmCoop(b).numBuffers == 4);
  const auto groups = helios::codegen::gemmCoopGroups(p, 4096, 2048, 3);
  CHECK(groups.x == 16);
  CHECK(groups.y == 32);
  CHECK(groups.z == 1);
  b.batched = true;
  CHECK(helios::codegen::gemmCoopGroups(b, 4096, 2048, 3).z == 3);
}

TEST_CASE("gemm_coop: cache key covers every field", "[gemm_coop]") {
  const GemmCoopParams base;
  std::vector<GemmCoopParams> changed;
  auto with = [&](auto fn) {
    GemmCoopParams p = base;
    fn(p);
    changed.push_back(p);
  };
  with([](GemmCoopParams& p) { p.coopN = 8; });
  with([](GemmCoopParams& p) { p.coopK = 8; });
  with([](GemmCoopParams& p) { p.coopM = 32; });
  with([](GemmCoopParams& p) { p.BM = 64; });
  with([](GemmCoopParams& p) { p.BN = 64; });
  with([](GemmCoopParams& p) { p.BK = 64; });
  with([](GemmCoopParams& p) { p.sgRows = 4; });
  with([](GemmCoopParams& p) { p.sgCols = 4; });
  with([](GemmCoopParams& p) { p.stages = 1; });
  with([](GemmCoopParams& p) { p.padA = 0; });
  with([](GemmCoopParams& p) { p.padB = 16; });
  with([](GemmCoopParams& p) { p.transA = true; });
  with([](GemmCoopParams& p) { p.transB = true; });
  with([](GemmCoopParams& p) { p.batched = true; });
  with([](GemmCoopParams& p) { p.storedC = Elem::F16; });
  with([](GemmCoopParams& p) { p.alphaBeta = true; });
  with([](GemmCoopParams& p) { p.bias = true; });
  with([](GemmCoopParams& p) { p.gelu = true; });
  with([](GemmCoopParams& p) { p.groupM = 8; });
  with([](GemmCoopParams& p) { p.subgroupSize = 64; });
  with([](GemmCoopParams& p) { p.maxSharedBytes = 65536; });
  with([](GemmCoopParams& p) { p.workgroupScope = true; });
  with([](GemmCoopParams& p) { p.storedA = Elem::F32; });
  with([](GemmCoopParams& p) { p.storedB = Elem::F32; });
  with([](GemmCoopParams& p) { p.tensorLayouts = true; });
  with([](GemmCoopParams& p) { p.unroll = 8; });
  with([](GemmCoopParams& p) { p.stagedStore = true; });
  with([](GemmCoopParams& p) { p.biasOnVectors = true; });
  with([](GemmCoopParams& p) { p.producers = 4; });
  with([](GemmCoopParams& p) { p.bounded = true; });
  with([](GemmCoopParams& p) { p.bounded = p.crosswiseA = true; });
  with([](GemmCoopParams& p) { p.bounded = p.crosswiseB = true; });
  with([](GemmCoopParams& p) { p.kSlices = 2; });
  with([](GemmCoopParams& p) { p.bounded = p.boundedVectors = true; });
  with([](GemmCoopParams& p) { p.bounded = p.boundedVectors = p.edgeShift = true; });
  with([](GemmCoopParams& p) { p.lowered = true; });
  std::set<std::string> keys{base.cacheKey()};
  for (const auto& p : changed)
    keys.insert(p.cacheKey());
  CHECK(keys.size() == changed.size() + 1);
}

TEST_CASE("gemm_coop: invalid parameters fail with a clear message", "[gemm_coop]") {
  GemmCoopParams p;
  p.BN = 256;
  p.BK = 32;
  p.sgCols = 4; // 128x256x32, two stages: 54 KiB
  REQUIRE_THROWS_AS(p.validate(), std::invalid_argument);
  REQUIRE_THROWS_WITH(helios::codegen::generateGemmCoop(p), ContainsSubstring("bytes of shared memory") &&
                                                                ContainsSubstring("device allows 49152"));
  p.stages = 1;
  CHECK_NOTHROW(p.validate());

  GemmCoopParams q;
  q.BK = 24;
  REQUIRE_THROWS_WITH(q.validate(), ContainsSubstring("BK=24 is not a multiple of coopK=16"));
  q = {};
  q.sgRows = 3;
  REQUIRE_THROWS_WITH(q.validate(), ContainsSubstring("sgRows*coopM"));
  q = {};
  q.padA = 4;
  REQUIRE_THROWS_WITH(q.validate(), ContainsSubstring("multiple of 8 halves"));
  q = {};
  q.kSlices = 2;
  q.batched = true;
  REQUIRE_THROWS_WITH(q.validate(), ContainsSubstring("K slices are not batched"));
  q = {};
  q.stages = 3;
  REQUIRE_THROWS_WITH(q.validate(), ContainsSubstring("stages must be 1 or 2"));
  q = {};
  q.crosswiseB = true; // crosswise copies belong to the bounded kernel's scalar copies
  REQUIRE_THROWS_WITH(q.validate(), ContainsSubstring("crosswise copies are the bounded scalar ones"));
  q.bounded = q.boundedVectors = true;
  REQUIRE_THROWS_WITH(q.validate(), ContainsSubstring("crosswise copies are the bounded scalar ones"));
  q.boundedVectors = false;
  CHECK_NOTHROW(q.validate());
  // Edge shifting belongs to the bounded kernel (scalar or vector copies) over whole K, and needs tiles
  // inside the problem and a step besides the first.
  q = {};
  q.edgeShift = true;
  REQUIRE_THROWS_WITH(q.validate(), ContainsSubstring("edgeShift is for bounded kernels with whole K"));
  q.bounded = true; // scalar copies
  CHECK_NOTHROW(q.validate());
  q.boundedVectors = true;
  CHECK_NOTHROW(q.validate());
  q.kSlices = 2;
  REQUIRE_THROWS_WITH(q.validate(), ContainsSubstring("edgeShift is for bounded kernels with whole K"));
  q.kSlices = 1;
  CHECK(helios::codegen::edgeShiftFits(q, q.BM, q.BN, q.BK + 8));
  CHECK_FALSE(helios::codegen::edgeShiftFits(q, q.BM - 8, q.BN, 4096));
  CHECK_FALSE(helios::codegen::edgeShiftFits(q, q.BM, q.BN - 8, 4096));
  CHECK_FALSE(helios::codegen::edgeShiftFits(q, 4096, 4096, q.BK));
  // The staged C store: no alpha/beta; the A staging grows to hold its per-subgroup regions.
  q = helios::codegen::gemmCoopDefault();
  q.stagedStore = true;
  CHECK_NOTHROW(q.validate());
  q.alphaBeta = true;
  REQUIRE_THROWS_WITH(q.validate(), ContainsSubstring("no alpha/beta"));
  q.alphaBeta = false;
  q.BK = 16; // A staging 2 x 128 x 24 halves: 768 vectors, the regions need 4 x 16 x 17 = 1088
  q.stages = 2;
  CHECK_NOTHROW(q.validate());
  GemmCoopParams plain = q;
  plain.stagedStore = false;
  CHECK(q.sharedBytes() == plain.sharedBytes() + 16 * (1088 - 768));
}

TEST_CASE("gemm_coop: every menu tiling fits 48 KiB and the menu shrinks with the limit", "[gemm_coop]") {
  const auto all = helios::codegen::gemmCoopTilings();
  REQUIRE(all.size() >= 10);
  for (const auto& p : all)
    CHECK(p.sharedBytes() <= 49152);
  const auto small = helios::codegen::gemmCoopTilings(16, 16, 16, 24576);
  CHECK(!small.empty());
  CHECK(small.size() < all.size());
  for (const auto& p : small)
    CHECK(p.sharedBytes() <= 24576);
}

TEST_CASE("gemm_coop: workgroup scope walks K in unrolled trips, then slice by slice", "[gemm_coop]") {
  const auto wg = helios::codegen::gemmCoopWorkgroupTilings(helios::codegen::h100WorkgroupCoopShapes());
  REQUIRE(wg.size() >= 3);
  CHECK(wg[0].tensorLayouts);
  CHECK(wg[0].unroll == 8);
  const auto count = [](const GemmCoopParams& p, const std::string& op) {
    const std::string dis = helios::spv::disassemble(helios::codegen::generateGemmCoop(p).spirv);
    size_t n = 0;
    for (size_t at = dis.find(op); at != std::string::npos; at = dis.find(op, at + op.size()))
      ++n;
    return n;
  };
  // Unrolled by 8: eight slices in the trip loop plus one in the remainder loop, two loads each.
  CHECK(count(wg[0], "OpCooperativeMatrixLoadTensorNV") == 18);
  CHECK(count(wg[0], "OpCooperativeMatrixMulAddKHR") == 9);
  GemmCoopParams one = wg[0];
  one.unroll = 1; // no trip loop: one slice per iteration from 0
  CHECK(count(one, "OpCooperativeMatrixLoadTensorNV") == 2);
  CHECK(count(one, "OpCooperativeMatrixMulAddKHR") == 1);
  CHECK(count(one, "OpLoopMerge") == 1);
  CHECK(count(wg[0], "OpLoopMerge") == 2);
  GemmCoopParams ptr = wg[0];
  ptr.tensorLayouts = false;
  CHECK(count(ptr, "OpCooperativeMatrixLoadKHR") == 18);
  CHECK(count(ptr, "OpCooperativeMatrixLoadTensorNV") == 0);
  GemmCoopParams bad = wg[0];
  bad.unroll = 17;
  CHECK_THROWS_WITH(bad.validate(), ContainsSubstring("unroll must be 1 to 16"));
  GemmCoopParams sub; // subgroup scope has its own staging
  sub.tensorLayouts = true;
  CHECK_THROWS_WITH(sub.validate(),
                    ContainsSubstring("tensor layouts and unrolling are for workgroup scope"));
}

TEST_CASE("gemm_coop: copy subgroups move the slices while the others compute", "[gemm_coop]") {
  GemmCoopParams p = helios::codegen::gemmCoopTilings()[3]; // 128x128x32, double-buffered
  REQUIRE(p.stages == 2);
  p.producers = 4;
  REQUIRE_NOTHROW(p.validate());
  CHECK(p.invocations() == 256); // 4 computing + 4 copying subgroups
  CHECK(p.copiers() == 128);
  CHECK_THAT(p.name(), ContainsSubstring("_ws4"));
  const helios::codegen::Kernel k = helios::codegen::generateGemmCoop(p);
  CHECK(k.localSize[0] == 256);
  const std::string dis = helios::spv::disassemble(k.spirv);
  const auto count = [&](const std::string& op) {
    size_t n = 0;
    for (size_t at = dis.find(op); at != std::string::npos; at = dis.find(op, at + op.size()))
      ++n;
    return n;
  };
  // One barrier after the prologue's copy and one per step; the MulAdds (2 k-steps x 4 x 4 accumulators per
  // slice) are emitted once, in the computing branch. (Numerics: helios-coop-check --explore on a GPU.)
  CHECK(count("OpCooperativeMatrixMulAddKHR") == 32);
  CHECK(count("OpControlBarrier") == 2);
  CHECK(count("OpSelectionMerge") >= 3); // prologue copy, copy-or-compute, epilogue

  GemmCoopParams one = p;
  one.stages = 1;
  CHECK_THROWS_WITH(one.validate(), ContainsSubstring("copy subgroups need 2 stages"));
  GemmCoopParams odd = p;
  odd.producers = 3; // 512 vectors do not split over 96 invocations
  CHECK_THROWS_WITH(odd.validate(), ContainsSubstring("does not split over 96 copying invocations"));
  GemmCoopParams wg =
      helios::codegen::gemmCoopWorkgroupTilings(helios::codegen::h100WorkgroupCoopShapes())[0];
  wg.producers = 2;
  CHECK_THROWS_WITH(wg.validate(), ContainsSubstring("copy subgroups are for subgroup scope"));
}

TEST_CASE("gemm_coop: every coop shape and subgroup size has valid tilings, small ones included",
          "[gemm_coop]") {
  for (const auto& [cm, cn, ck] : helios::codegen::coopSweepShapes())
    for (const uint32_t sg : helios::codegen::coopSweepSubgroupSizes()) {
      INFO(cm << "x" << cn << "x" << ck << " on " << sg << " lanes");
      const auto menu = helios::codegen::gemmCoopTilings(cm, cn, ck, 49152, sg);
      REQUIRE(!menu.empty());
      bool small = false;
      for (const auto& p : menu) {
        CHECK(p.coopM == cm);
        CHECK(p.subgroupSize == sg);
        CHECK_NOTHROW(p.validate());
        small = small || p.BM * p.BN <= 64 * 32;
      }
      CHECK(small);
      const GemmCoopParams d = helios::codegen::gemmCoopDefault(cm, cn, ck, 49152, sg);
      CHECK(helios::codegen::generateGemmCoop(d).requiredSubgroupSize == sg);
    }
  // 4 lanes (lavapipe at 128-bit vectors): every shape has a menu, its smallest tiling validates.
  for (const auto& [cm, cn, ck] : helios::codegen::coopSweepShapes()) {
    const auto menu = helios::codegen::gemmCoopTilings(cm, cn, ck, 49152, 4);
    REQUIRE(!menu.empty());
    CHECK(helios::spv::validate(helios::codegen::generateGemmCoop(menu.back()).spirv).ok);
  }
  // 128x128 on 2x2 subgroups holds 8 x 8 accumulators of 8x8x16 per subgroup: over the limit.
  GemmCoopParams p;
  p.coopM = p.coopN = 8;
  REQUIRE_THROWS_WITH(p.validate(), ContainsSubstring("64 accumulators per subgroup"));
  // The staged store of a 32x32 tile on 1x2 subgroups at 8x8x16 and 64 lanes: a row of blocks is 8 rows of
  // 16 floats, 32 vectors for 64 lanes.
  GemmCoopParams s;
  s.coopM = s.coopN = 8;
  s.setTiling({32, 32, 32, 1, 2, 1});
  s.subgroupSize = 64;
  CHECK_NOTHROW(s.validate());
  s.stagedStore = true;
  REQUIRE_THROWS_WITH(s.validate(), ContainsSubstring("32 vectors over 64 lanes"));
  s.setTiling({32, 32, 32, 2, 2, 1}); // 256 invocations for 128 vectors of A
  s.stagedStore = false;
  REQUIRE_THROWS_WITH(s.validate(), ContainsSubstring("does not split over 256 copying invocations"));
  s.subgroupSize = 48;
  REQUIRE_THROWS_WITH(s.validate(), ContainsSubstring("subgroup size 48 must be a power of two"));
}

namespace {

using helios::floatToHalf;
using helios::halfToFloat;
namespace ops = helios::ops;
namespace ref = helios::ref;

struct RunCase {
  GemmCoopParams p;
  uint32_t M, N, K, batch = 1;
  float alpha = 1.0f, beta = 0.0f;
};

uint16_t toBits(Elem kind, float x) {
  return kind == Elem::BF16 ? helios::floatToBf16(x) : floatToHalf(x);
}
float fromBits(Elem kind, uint16_t h) {
  return kind == Elem::BF16 ? helios::bf16ToFloat(h) : halfToFloat(h);
}

// n random values of the 16-bit `kind` (their bits), and the same values exactly in f32.
std::vector<uint16_t> randomHalves(size_t n, std::vector<float>& exact, Elem kind = Elem::F16) {
  std::vector<uint16_t> h(n);
  exact.resize(n);
  const auto f = helios::test::randomFloats(n);
  for (size_t i = 0; i < n; ++i)
    exact[i] = fromBits(kind, h[i] = toBits(kind, f[i]));
  return h;
}

// One kernel on the live device: random operands of its 16-bit kind (exact in f32), C poisoned (or random
// when beta != 0), against ref::gemm in float64.
void runCase(const RunCase& rc) {
  auto& ctx = helios::test::ctx();
  const GemmCoopParams& p = rc.p;
  const Elem kind = p.operands;
  const size_t M = rc.M, N = rc.N, K = rc.K, batch = rc.batch;
  INFO(p.name() << " on " << M << "x" << N << "x" << K << " batch " << batch);
  std::vector<float> a, b, bias, c0(batch * M * N, helios::test::poisonF32());
  const auto ah = randomHalves(batch * M * K, a, kind), bh = randomHalves(batch * K * N, b, kind);
  const auto biasH = randomHalves(N, bias, kind);
  if (rc.beta != 0.0f) randomHalves(c0.size(), c0, kind);
  // f32 operands (storedA/B) hold the same values, which the kernel's rounding keeps exactly.
  auto ba = p.storedA == Elem::F32 ? helios::test::input(a, "A") : helios::test::input(ah, "A");
  auto bb = p.storedB == Elem::F32 ? helios::test::input(b, "B") : helios::test::input(bh, "B");
  helios::vk::Buffer bbias =
      p.halfC() ? helios::test::input(biasH, "bias") : helios::test::input(bias, "bias");
  const uint16_t poison = kind == Elem::BF16 ? helios::test::kPoisonBF16 : helios::test::kPoisonF16;
  std::vector<uint16_t> c0h(c0.size());
  for (size_t i = 0; i < c0.size(); ++i)
    c0h[i] = rc.beta != 0.0f ? toBits(kind, c0[i]) : poison;
  helios::vk::Buffer bc = p.halfC() ? helios::test::input(c0h, "C") : helios::test::input(c0, "C");
  std::vector<ops::Binding> bindings{{ba.range()}, {bb.range()}, {bc.range(), ops::Access::ReadWrite}};
  if (p.bias) bindings.push_back({bbias.range()});
  helios::vk::Buffer partials, counters;
  if (p.kSlices > 1) {
    partials = ctx.buffer(helios::codegen::gemmCoopPartialElements(p, rc.M, rc.N) * 4, "partials");
    counters = helios::test::input(
        std::vector<uint32_t>(helios::codegen::gemmCoopTileCount(p, rc.M, rc.N), 0), "counters");
    bindings.push_back({partials.range(), ops::Access::ReadWrite});
    bindings.push_back({counters.range(), ops::Access::ReadWrite});
  }
  const helios::codegen::GemmCoopPush push{
      rc.M, rc.N, rc.K, rc.alpha, rc.beta, uint32_t(M * K), uint32_t(K * N), uint32_t(M * N)};
  const auto g = helios::codegen::gemmCoopGroups(p, rc.M, rc.N, rc.batch);
  ops::ImmediateExecutor exec(ctx);
  const helios::vk::Pipeline& pipe = exec.pipeline(p, helios::codegen::generateGemmCoop);
  exec.dispatch(pipe, std::span<const ops::Binding>(bindings), &push, sizeof(push), {g.x, g.y, g.z});
  exec.flush();

  std::vector<float> got(batch * M * N);
  if (p.halfC()) {
    const auto h = ctx.downloadVector<uint16_t>(bc, got.size());
    for (size_t i = 0; i < got.size(); ++i)
      got[i] = fromBits(kind, h[i]);
  } else {
    got = ctx.downloadVector<float>(bc, got.size());
  }
  ref::GemmShape s{
      rc.M,   rc.N,  rc.K, 1, p.transA, p.transB, p.alphaBeta ? rc.alpha : 1.0, p.alphaBeta ? rc.beta : 0.0,
      p.bias, p.gelu};
  ref::Vec want(got.size());
  for (size_t i = 0; i < batch; ++i) {
    const std::vector<float> ap(a.begin() + i * M * K, a.begin() + (i + 1) * M * K);
    const std::vector<float> bp(b.begin() + i * K * N, b.begin() + (i + 1) * K * N);
    ref::Vec cp(c0.begin() + i * M * N, c0.begin() + (i + 1) * M * N);
    ref::gemm(s, ap, bp, bias, cp);
    std::copy(cp.begin(), cp.end(), want.begin() + i * M * N);
  }
  size_t poisoned = 0;
  for (float x : got)
    poisoned += std::isnan(x);
  CHECK(poisoned == 0);
  const double err = ref::relError(got, want);
  INFO("relative error " << err);
  // f32 C: products of 16-bit values are exact in f32, so only the f32 sums round. A 16-bit C rounds each
  // element once more: half an ulp, 2^-11 for f16 and 2^-8 for bf16 (8-bit significand).
  CHECK(err <= (!p.halfC() ? 1e-5 : kind == Elem::BF16 ? 8e-3 : 2e-3));
}

} // namespace

TEST_CASE("gemm_coop: the device's menu and variants against float64 (coop device)", "[gemm_coop][vulkan]") {
  const ops::CoopDeviceInfo dev = ops::coopDeviceInfo(helios::test::ctx().device());
  if (!dev.coopMatrix) SKIP("no f16 cooperative matrices here");
  std::cout << "gemm_coop on " << helios::test::ctx().device().name() << ": " << dev.coopM << "x" << dev.coopN
            << "x" << dev.coopK << ", " << dev.subgroupSize << " lanes" << (dev.lowered ? " (lowered)" : "")
            << ", seed " << helios::test::testSeed() << "\n";
  // Lowered where the device emulates the coop ops (HELIOS_COOP_EMULATE).
  auto menu =
      helios::codegen::gemmCoopTilings(dev.coopM, dev.coopN, dev.coopK, dev.maxSharedBytes, dev.subgroupSize);
  for (GemmCoopParams& t : menu)
    t.lowered = dev.lowered;
  // A lowered device takes the policy's small tiles only (ops::loweredTilingFits).
  std::erase_if(menu, [&](const GemmCoopParams& t) {
    if (dev.lowered && !ops::loweredTilingFits(t)) return true;
    try {
      t.validate();
      return false;
    } catch (const std::invalid_argument&) {
      return true;
    }
  });
  REQUIRE(!menu.empty());
  size_t runs = 0;
  const auto run = [&](const RunCase& rc) {
    try {
      rc.p.validate();
    } catch (const std::invalid_argument&) {
      return; // a variant this tiling cannot take at this shape and subgroup size
    }
    runCase(rc);
    ++runs;
  };
  // Every tiling, NN on two tiles across; the heaviest epilogue, TN and batched, on the smallest tiles.
  for (const GemmCoopParams& t : menu) {
    run({t, t.BM, 2 * t.BN, 2 * t.BK});
    if (t.BM * t.BN > 64 * 64) continue;
    GemmCoopParams heavy = t;
    heavy.transA = heavy.batched = heavy.alphaBeta = heavy.bias = heavy.gelu = true;
    run({heavy, 2 * t.BM, t.BN, 3 * t.BK, 2, 0.5f, -1.25f});
  }
  const GemmCoopParams small = menu.back();
  GemmCoopParams v = small;
  v.transB = true; // f16 C, B stored N x K
  v.storedC = Elem::F16;
  run({v, 2 * small.BM, 2 * small.BN, 2 * small.BK});
  v = small;
  v.stagedStore = true;
  run({v, 2 * small.BM, 2 * small.BN, 2 * small.BK});
  v = small;
  v.bounded = v.crosswiseA = v.crosswiseB = true; // odd sizes, scalar copies down the columns
  run({v, 2 * small.BM + 7, small.BN + 13, 2 * small.BK + 5});
  v.crosswiseA = v.crosswiseB = false;
  v.transB = v.alphaBeta = v.bias = v.gelu = true;
  v.storedC = Elem::F16;
  run({v, small.BM + 3, 2 * small.BN + 1, small.BK + 9, 1, 2.0f, 0.5f});
  v = small;
  v.bounded = v.boundedVectors = v.edgeShift = v.stagedStore = true; // multiples of 8, edge tiles shifted
  run({v, 2 * small.BM + 8, small.BN + 24, 3 * small.BK + 8});
  v = small;
  v.kSlices = 2;
  run({v, small.BM, 2 * small.BN, 4 * small.BK});
  v = small;
  v.producers = 1;
  run({v, 2 * small.BM, small.BN, 3 * small.BK});
  const size_t f16Runs = runs;
  if (dev.bf16) { // bf16 x bf16 -> f32: each layout, direct, bounded and K-sliced, bias/GELU, bf16 C
    GemmCoopParams bf = small;
    bf.operands = bf.storedA = bf.storedB = Elem::BF16;
    run({bf, 2 * small.BM, 2 * small.BN, 2 * small.BK});
    v = bf;
    v.transA = v.batched = v.alphaBeta = v.bias = v.gelu = true;
    v.storedC = Elem::BF16;
    run({v, small.BM, small.BN, 3 * small.BK, 2, 0.5f, -1.25f});
    v = bf;
    v.transB = v.bounded = v.crosswiseA = v.crosswiseB = true; // odd sizes, scalar copies
    run({v, small.BM + 7, 2 * small.BN + 3, small.BK + 5});
    v = bf;
    v.bounded = v.boundedVectors = v.edgeShift = v.stagedStore = v.bias = v.gelu = true;
    v.storedC = Elem::BF16;
    run({v, 2 * small.BM + 8, small.BN + 24, 3 * small.BK + 8});
    v = bf;
    v.kSlices = 2;
    v.storedA = Elem::F32; // f32 A rounded to bf16 as it is staged
    run({v, small.BM, 2 * small.BN, 4 * small.BK});
    CHECK(runs == f16Runs + 5);
  }
  std::cout << "gemm_coop: " << runs << " kernels checked against float64 (" << runs - f16Runs
            << " on bf16)\n";
  CHECK(f16Runs >= menu.size() + 5);
}
