// What helios-bench peak measures, from captured device lists (no device): every listed configuration once,
// the accumulator grids within the register budget, the reasons a case is left out, the lowered cases under
// HELIOS_COOP_EMULATE, and the grid sizes.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <string>

#include "probe/json.hpp"
#include "tools/helios_bench/peak_plan.hpp"

using namespace helios;
using codegen::MmaType;

namespace {

bench::PeakDevice fromFixture(const std::string& name) {
  const auto caps = probe::loadCapsFile(std::string(HELIOS_FIXTURE_DIR) + "/coopmat/" + name);
  REQUIRE(caps.size() == 1);
  bench::PeakDevice d;
  d.khr = caps[0].coop_khr;
  d.nv2 = caps[0].coop_nv2;
  d.subgroupSize = caps[0].subgroup_size;
  d.maxInvocations = caps[0].max_workgroup_invocations ? caps[0].max_workgroup_invocations : 1024;
  d.int8 = true;
  return d;
}

const bench::PeakCase& find(const std::vector<bench::PeakCase>& cases, uint32_t M, uint32_t N, uint32_t K,
                            MmaType ab, MmaType c, bool workgroup, uint32_t invocations = 0) {
  const auto it = std::find_if(cases.begin(), cases.end(), [&](const bench::PeakCase& x) {
    const auto& p = x.params;
    return p.M == M && p.N == N && p.K == K && p.ab == ab && p.c == c && p.workgroupScope == workgroup &&
           (!invocations || p.invocations() == invocations);
  });
  REQUIRE(it != cases.end());
  return *it;
}

} // namespace

TEST_CASE("peak plan: the H100's list, every configuration once", "[peak]") {
  const bench::PeakDevice d = fromFixture("nvidia-h100-580.json");
  const auto cases = bench::planPeakMma(d);
  // 11 KHR entries, then NV2's 4 workgroup-scope f16 -> f32 granularities (the capture keeps those; its
  // subgroup-scope one repeats KHR's).
  REQUIRE(cases.size() == 15);
  CHECK(std::count_if(cases.begin(), cases.end(), [](const auto& c) { return c.params.workgroupScope; }) ==
        4);

  const auto& f16f32 = find(cases, 16, 16, 16, MmaType::F16, MmaType::F32, false);
  CHECK(f16f32.skip.empty());
  CHECK(f16f32.source == "VK_KHR_cooperative_matrix");
  CHECK(f16f32.params.subgroups == 4);
  CHECK(f16f32.params.subgroupSize == 32);
  // 16x16 f32 on 32 lanes is 32 bytes a lane: 16 accumulators fill the 512-byte budget.
  CHECK((f16f32.params.rows == 4 && f16f32.params.cols == 4));
  CHECK(find(cases, 16, 8, 8, MmaType::F16, MmaType::F16, false).skip.empty());

  const auto& s8 = find(cases, 16, 16, 32, MmaType::S8, MmaType::S32, false);
  CHECK(s8.skip.empty());
  const auto& bf16 = find(cases, 16, 16, 16, MmaType::BF16, MmaType::F32, false);
  CHECK(bf16.skip.find("bfloat16") != std::string::npos);

  const auto& wg = find(cases, 32, 32, 16, MmaType::F16, MmaType::F32, true, 256);
  CHECK(wg.skip.empty());
  CHECK(wg.source == "VK_NV_cooperative_matrix2");
  CHECK(wg.params.subgroups == 8);
  CHECK(wg.params.unitsPerWorkgroup() == 1);
  // 32x32 f32 over 256 invocations is 16 bytes each: 4x4 fits.
  CHECK((wg.params.rows == 4 && wg.params.cols == 4));
  CHECK(find(cases, 16, 16, 16, MmaType::F16, MmaType::F32, true, 32).params.subgroups == 1);
}

TEST_CASE("peak plan: what a device lacks leaves its cases out with the reason", "[peak]") {
  bench::PeakDevice d = fromFixture("nvidia-h100-580.json");
  d.int8 = false;
  d.maxInvocations = 128;
  const auto cases = bench::planPeakMma(d);
  CHECK(find(cases, 16, 16, 32, MmaType::U8, MmaType::U32, false).skip == "no shaderInt8");
  CHECK(find(cases, 32, 32, 16, MmaType::F16, MmaType::F32, true, 256).skip.find("invocations") !=
        std::string::npos);
  CHECK(find(cases, 32, 16, 16, MmaType::F16, MmaType::F32, true, 128).skip.empty());
  d.f16 = false;
  CHECK(bench::planPeakMma(d).front().skip.find("shaderFloat16") != std::string::npos);
  // A device with no lists plans nothing; the bandwidth is still measured.
  CHECK(bench::planPeakMma(bench::PeakDevice{}).empty());
}

TEST_CASE("peak plan: HELIOS_COOP_EMULATE stands in for the lists, lowered", "[peak]") {
  bench::PeakDevice d = fromFixture("nvidia-h100-580.json");
  d.subgroupSize = 8;
  d.lowered = tuning::MatShape{16, 8, 16};
  const auto cases = bench::planPeakMma(d);
  REQUIRE(cases.size() == 2);
  for (const auto& c : cases) {
    CHECK(c.skip.empty());
    CHECK(c.source == "lowered");
    CHECK(c.params.lowered);
    CHECK(c.params.subgroupSize == 8);
    CHECK(c.params.rows * c.params.cols <= 4);
  }
  CHECK(cases[0].params.c == MmaType::F32);
  CHECK(cases[1].params.c == MmaType::F16);
}

TEST_CASE("peak plan: accumulator grids, grid and copy sizes", "[peak]") {
  using P = std::pair<uint32_t, uint32_t>;
  CHECK(bench::peakAccumulatorGrid(16, 16, 4, 32, false) == P{4, 4});
  CHECK(bench::peakAccumulatorGrid(16, 16, 4, 16, false) == P{4, 2}); // 64 bytes a lane
  CHECK(bench::peakAccumulatorGrid(16, 16, 4, 8, false) == P{2, 2});
  CHECK(bench::peakAccumulatorGrid(16, 16, 4, 8, true) == P{2, 2});
  CHECK(bench::peakAccumulatorGrid(16, 8, 2, 32, true) == P{2, 2}); // lowered: at most 4 MulAdds
  CHECK(bench::peakAccumulatorGrid(64, 64, 4, 32, false) == P{1, 1});
  CHECK(bench::peakMmaWorkgroups(132) == 3168);
  CHECK(bench::peakMmaWorkgroups(0) == 24);
  CHECK(bench::peakCopyBytes(uint64_t(4) << 30, uint64_t(80) << 30) == uint64_t(256) << 20);
  CHECK(bench::peakCopyBytes(uint64_t(128) << 20, uint64_t(80) << 30) == uint64_t(128) << 20);
  CHECK(bench::peakCopyBytes(uint64_t(4) << 30, uint64_t(1) << 30) == uint64_t(128) << 20);
  CHECK(bench::peakCopyBytes(1000, uint64_t(1) << 30) == 992);
  CHECK(bench::peakCopyWorkgroups(1, 132) == 1);
  CHECK(bench::peakCopyWorkgroups(1000, 132) == 4);
  CHECK(bench::peakCopyWorkgroups(uint64_t(16) << 20, 132) == 64 * 132);
}
