// Cooperative-matrix GEMM generator: every registered variant passes spirv-val (Vulkan 1.3), parameters are
// checked with readable errors, cache keys cover every field. No GPU needed (lavapipe has no coop matrices;
// numerics run on the H100 with bench/h100/run.sh).
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <iostream>
#include <set>
#include <stdexcept>

#include "codegen/kernels/gemm_coop.hpp"
#include "codegen/kernels/gemm_coop_nv2.hpp"
#include "codegen/spirv/tools.hpp"

using Catch::Matchers::ContainsSubstring;
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
    CHECK(k.requiredSubgroupSize == 32);
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
  with([](GemmCoopParams& p) { p.outF16 = true; });
  with([](GemmCoopParams& p) { p.alphaBeta = true; });
  with([](GemmCoopParams& p) { p.bias = true; });
  with([](GemmCoopParams& p) { p.gelu = true; });
  with([](GemmCoopParams& p) { p.groupM = 8; });
  with([](GemmCoopParams& p) { p.subgroupSize = 64; });
  with([](GemmCoopParams& p) { p.maxSharedBytes = 65536; });
  with([](GemmCoopParams& p) { p.workgroupScope = true; });
  with([](GemmCoopParams& p) { p.f32A = true; });
  with([](GemmCoopParams& p) { p.f32B = true; });
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
