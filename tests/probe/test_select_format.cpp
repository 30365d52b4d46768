// Device selection, the text report and runProbe's exit codes.
#include "engine/vk/device_probe.hpp"
#include "fixture.hpp"
#include "probe/format.hpp"
#include "probe/table.hpp"
#include "tools/helios_probe/report.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <sstream>

using namespace helios::probe;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
using helios::probe::test::fixturePath;
using helios::probe::test::loadFixture;
using helios::probe_cli::ProbeOptions;
using helios::probe_cli::runProbe;

TEST_CASE("selectProbedDevices takes an index or a case-insensitive name substring", "[probe][select]") {
  const std::vector<DeviceCaps> devices{loadFixture("nvidia-h100-580.json"),
                                        loadFixture("amd-rdna3-radv.json")};
  CHECK(helios::vk::selectProbedDevices(devices, "") == std::vector<std::size_t>{0, 1});
  CHECK(helios::vk::selectProbedDevices(devices, "1") == std::vector<std::size_t>{1});
  CHECK(helios::vk::selectProbedDevices(devices, "radeon") == std::vector<std::size_t>{1});
  CHECK(helios::vk::selectProbedDevices(devices, "h100") == std::vector<std::size_t>{0});
  CHECK_THROWS_WITH(helios::vk::selectProbedDevices(devices, "2"),
                    ContainsSubstring("Device index 2 is out of range: there are 2 devices"));
  CHECK_THROWS_WITH(
      helios::vk::selectProbedDevices(devices, "intel"),
      ContainsSubstring("No Vulkan device name contains \"intel\"; available: [0] NVIDIA H100"));
}

TEST_CASE("TextTable aligns columns", "[probe][format]") {
  TextTable t({"M", "type"}, {true});
  t.addRow({"8", "float16"});
  t.addRow({"16", "f"});
  CHECK(t.render("  ") == "   M  type\n   8  float16\n  16  f\n");
}

TEST_CASE("formatDevice shows the tables and the choice", "[probe][format]") {
  const auto text = formatDevice(loadFixture("nvidia-h100-580.json"), 3);
  CHECK_THAT(text, StartsWith("Device 3: NVIDIA H100 80GB HBM3\n"));
  CHECK_THAT(text, ContainsSubstring("Cooperative matrix configurations (VK_KHR_cooperative_matrix): 11"));
  CHECK_THAT(text,
             ContainsSubstring("    16  16  16  float16   float16   float32  float32  no          subgroup"));
  CHECK_THAT(text, ContainsSubstring("Flexible dimensions (VK_NV_cooperative_matrix2): 5"));
  CHECK_THAT(text, ContainsSubstring("VK_NV_cooperative_matrix2 features: not recorded in this capture"));
  DeviceCaps live = loadFixture("nvidia-h100-580.json");
  live.coop_nv2_features = {true, true, true, true, true, true, true, false};
  CHECK_THAT(
      formatDevice(live, 0),
      ContainsSubstring("features: workgroup scope yes, flexible dimensions yes, reductions yes, conversions "
                        "yes, per-element operations yes, tensor addressing yes, block loads no"));
  CHECK_THAT(text, ContainsSubstring("Best f16 x f16 -> f32 shape: 16x16x16 (score 4096)"));
  const auto none = formatDevice(loadFixture("intel-hd5500-hasvk.json"), 0);
  CHECK_THAT(none, ContainsSubstring("Best f16 x f16 -> f32 shape: none (tiled fallback)"));
  CHECK_THAT(none, ContainsSubstring("VK_KHR_cooperative_matrix              no"));
  // The bf16 line: shape, the reasons, and the path bf16 GEMMs take.
  const auto bf16 = formatDevice(loadFixture("nvidia-h200-580-bf16.json"), 0);
  CHECK_THAT(bf16, ContainsSubstring("Best bf16 x bf16 -> f32 shape: 16x16x16 (score 4096)"));
  CHECK_THAT(bf16, ContainsSubstring("bf16 GEMMs run on bf16 cooperative matrices at 16x16x16"));
  CHECK_THAT(bf16,
             ContainsSubstring("shaderBFloat16 type / dot / coop") && ContainsSubstring("yes / yes / yes"));
  CHECK_THAT(none, ContainsSubstring("Best bf16 x bf16 -> f32 shape: none (tiled fallback)"));
  CHECK_THAT(none, ContainsSubstring("bf16 GEMMs run through the tiled f32 kernel"));
}

TEST_CASE("runProbe: --from-json, --device and a bad file", "[probe][cli]") {
  std::ostringstream out, err;
  ProbeOptions opts;
  opts.fromJson = fixturePath("amd-rdna3-radv.json");
  opts.json = true;
  CHECK(runProbe(opts, out, err) == 0);
  CHECK_THAT(out.str(), ContainsSubstring("\"best_f16_f32\""));
  CHECK(err.str().empty());

  std::ostringstream out2, err2;
  opts.device = "7";
  CHECK(runProbe(opts, out2, err2) == 1);
  CHECK(out2.str().empty());
  CHECK_THAT(err2.str(), StartsWith("helios-probe: Device index 7 is out of range"));

  std::ostringstream out3, err3;
  opts = {};
  opts.fromJson = fixturePath("no-such-file.json");
  CHECK(runProbe(opts, out3, err3) == 1);
  CHECK_THAT(err3.str(), ContainsSubstring("cannot open the file"));
}
