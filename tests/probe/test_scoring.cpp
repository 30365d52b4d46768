// bestF16F32 / bestBF16F32 / explainChoice / bf16GemmPath over the vendor captures and the synthetic edge
// cases.
#include "fixture.hpp"
#include "probe/scoring.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

using namespace helios::probe;
using Catch::Matchers::ContainsSubstring;
using helios::probe::test::loadFixture;

namespace {
CoopShape shape(uint32_t m, uint32_t n, uint32_t k) {
  return {m, n, k, uint64_t{m} * n * k};
}
} // namespace

TEST_CASE("H100 capture picks 16x16x16 f16->f32 with score 4096", "[probe][scoring]") {
  const auto caps = loadFixture("nvidia-h100-580.json");
  REQUIRE(caps.coop_khr.size() == 11);
  const auto best = bestF16F32(caps.coop_khr);
  REQUIRE(best);
  CHECK(*best == shape(16, 16, 16));
  CHECK(best->score == 4096);
  const auto why = explainChoice(caps.coop_khr);
  CHECK_THAT(why, ContainsSubstring("Chose 16x16x16"));
  CHECK_THAT(why, ContainsSubstring("Considered 11 configurations: 3 eligible"));
  CHECK_THAT(why, ContainsSubstring("8 rejected for component types"));
}

TEST_CASE("vendor captures pick what their hardware offers", "[probe][scoring]") {
  SECTION("Intel Arc (anv): 8x8x16") {
    const auto caps = loadFixture("intel-arc-a770-anv.json");
    CHECK(bestF16F32(caps.coop_khr) == shape(8, 8, 16));
    CHECK(caps.hasExtension("VK_KHR_cooperative_matrix"));
  }
  SECTION("AMD RDNA3 (radv): 16x16x16") {
    const auto caps = loadFixture("amd-rdna3-radv.json");
    CHECK(caps.coop_khr.size() == 14);
    CHECK(bestF16F32(caps.coop_khr) == shape(16, 16, 16));
    CHECK(caps.subgroup_size == 64);
  }
  SECTION("Intel iGPU without matrix units: none, tiled fallback") {
    const auto caps = loadFixture("intel-hd5500-hasvk.json");
    CHECK_FALSE(caps.hasExtension("VK_KHR_cooperative_matrix"));
    CHECK_FALSE(bestF16F32(caps.coop_khr));
    CHECK_THAT(explainChoice(caps.coop_khr), ContainsSubstring("tiled fallback"));
  }
}

// Captured from Debian's ANV and RADV under Mesa's no-op DRM shims (tools/vendor-env.sh): each driver's own
// cooperative-matrix table and subgroup range for hardware this machine does not have.
TEST_CASE("emulated Intel and AMD devices pick their matrix units' shape", "[probe][scoring]") {
  struct Expect {
    const char* file;
    uint32_t m, n, k, minSubgroup, maxSubgroup;
  };
  const Expect expected[] = {
      {"intel-dg2-anv-shim.json", 8, 8, 16, 8, 32},      {"intel-mtl-anv-shim.json", 8, 8, 16, 8, 32},
      {"intel-lnl-anv-shim.json", 8, 16, 16, 16, 32},    {"intel-bmg-anv-shim.json", 8, 16, 16, 16, 32},
      {"amd-navi31-radv-shim.json", 16, 16, 16, 32, 64},
  };
  for (const auto& e : expected) {
    INFO(e.file);
    const auto caps = loadFixture(e.file);
    CHECK(caps.hasExtension("VK_KHR_cooperative_matrix"));
    CHECK(bestF16F32(caps.coop_khr) == shape(e.m, e.n, e.k));
    CHECK(caps.min_subgroup_size == e.minSubgroup);
    CHECK(caps.max_subgroup_size == e.maxSubgroup);
    CHECK_THAT(caps.source, ContainsSubstring("no-op DRM shim"));
  }
  SECTION("NAVI21 (RDNA2) has no matrix units: none, tiled fallback") {
    const auto caps = loadFixture("amd-navi21-radv-shim.json");
    CHECK(caps.coop_khr.empty());
    CHECK_FALSE(bestF16F32(caps.coop_khr));
    CHECK_THAT(explainChoice(caps.coop_khr), ContainsSubstring("tiled fallback"));
  }
}

TEST_CASE("ties on M*N*K go to the larger M*N", "[probe][scoring]") {
  const auto caps = loadFixture("synthetic-tie-mn.json");
  CHECK(bestF16F32(caps.coop_khr) == shape(16, 16, 16));
  CHECK_THAT(explainChoice(caps.coop_khr), ContainsSubstring("larger M*N (256 vs 128)"));
}

TEST_CASE("a tie on M*N*K and M*N is broken the same way whatever the order", "[probe][scoring]") {
  auto props = loadFixture("synthetic-tie-exact.json").coop_khr;
  std::sort(props.begin(), props.end(), [](const auto& a, const auto& b) { return a.M < b.M; });
  do {
    CHECK(bestF16F32(props) == shape(32, 8, 16));
  } while (std::next_permutation(props.begin(), props.end(),
                                 [](const auto& a, const auto& b) { return a.M < b.M; }));
  CHECK_THAT(explainChoice(props), ContainsSubstring("the larger M (32 vs 16) breaks the tie"));
}

TEST_CASE("an empty list means the tiled fallback", "[probe][scoring]") {
  const auto caps = loadFixture("synthetic-empty.json");
  CHECK_FALSE(bestF16F32(caps.coop_khr));
  CHECK_THAT(explainChoice(caps.coop_khr), ContainsSubstring("lists no cooperative-matrix configurations"));
  CHECK_THAT(explainChoice(caps.coop_khr), ContainsSubstring("tiled fallback kernel will be used"));
}

TEST_CASE("entries without float16 A/B and float32 C/Result are never chosen", "[probe][scoring]") {
  const auto caps = loadFixture("synthetic-non-f16.json");
  CHECK_FALSE(bestF16F32(caps.coop_khr));
  const auto choice = chooseF16F32(caps.coop_khr);
  CHECK(choice.wrongTypes == caps.coop_khr.size());
  CHECK_THAT(explainChoice(caps.coop_khr), ContainsSubstring("6 rejected for component types"));
  CHECK_THAT(explainChoice(caps.coop_khr), ContainsSubstring("tiled fallback kernel will be used"));
}

TEST_CASE("a bigger workgroup-scope entry is not chosen", "[probe][scoring]") {
  const auto caps = loadFixture("synthetic-workgroup-scope.json");
  CHECK(bestF16F32(caps.coop_khr) == shape(16, 16, 16));
  const auto choice = chooseF16F32(caps.coop_khr);
  CHECK(choice.wrongScope == 2);
  CHECK(choice.eligible == 2);
  CHECK_THAT(explainChoice(caps.coop_khr), ContainsSubstring("2 rejected for non-subgroup scope"));
}

TEST_CASE("explainChoice names the only eligible shape", "[probe][scoring]") {
  std::vector<CoopMatrixProperty> props{
      {8, 8, 16, "float16", "float16", "float32", "float32", false, "subgroup"}};
  CHECK_THAT(explainChoice(props), ContainsSubstring("only eligible shape"));
  CHECK_THAT(explainChoice(props), ContainsSubstring("Considered 1 configuration:"));
}

// bf16 x bf16 -> f32 (VK_KHR_shader_bfloat16): scored like f16's, and the path bf16 GEMMs take said in one
// sentence: bf16 coop matrices only at the f16 kernels' own shape with the coop feature, else the tiled
// kernel widening bf16 to f32.
TEST_CASE("bf16 configurations: the H200 fixture runs bf16 on coop matrices, others say why not",
          "[probe][scoring][bf16]") {
  auto caps = loadFixture("nvidia-h200-580-bf16.json");
  CHECK(caps.shader_bfloat16 == ShaderBFloat16{true, true, true, true});
  CHECK(caps.hasExtension("VK_KHR_shader_bfloat16"));
  REQUIRE(bestBF16F32(caps.coop_khr) == shape(16, 16, 16));
  CHECK_THAT(explainChoice(caps.coop_khr, CoopInputs::BF16),
             ContainsSubstring("Chose 16x16x16 (bfloat16 x bfloat16 + float32 -> float32") &&
                 ContainsSubstring("1 eligible"));
  CHECK(bf16CoopUsable(caps));
  CHECK_THAT(bf16GemmPath(caps), ContainsSubstring("bf16 cooperative matrices at 16x16x16"));
  // The same table with the coop feature off: the tiled kernel, and why.
  caps.shader_bfloat16.cooperativeMatrix = false;
  CHECK_FALSE(bf16CoopUsable(caps));
  CHECK_THAT(bf16GemmPath(caps), ContainsSubstring("tiled f32 kernel") &&
                                     ContainsSubstring("shaderBFloat16CooperativeMatrix is not supported"));
  // No bf16 entry at all (AMD RDNA3 through RADV 24, Intel Arc), or bf16 without an f16 shape.
  for (const char* name : {"amd-rdna3-radv.json", "intel-arc-a770-anv.json", "intel-hd5500-hasvk.json"}) {
    INFO(name);
    const auto other = loadFixture(name);
    CHECK_FALSE(bestBF16F32(other.coop_khr));
    CHECK_THAT(bf16GemmPath(other), ContainsSubstring("lists no bf16 x bf16 -> f32 subgroup configuration"));
    CHECK_THAT(explainChoice(other.coop_khr, CoopInputs::BF16), ContainsSubstring("tiled fallback kernel"));
  }
  const auto nonF16 = loadFixture("synthetic-non-f16.json");
  CHECK(bestBF16F32(nonF16.coop_khr) == shape(16, 16, 16));
  CHECK_THAT(bf16GemmPath(nonF16), ContainsSubstring("no f16 x f16 -> f32 shape"));
}
