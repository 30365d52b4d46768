// JSON output and input: round trips, both document forms, and errors that name the field.
#include "fixture.hpp"
#include "probe/format.hpp"
#include "probe/json.hpp"
#include "probe/scoring.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

using namespace helios::probe;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::Equals;
using helios::probe::test::fixturePath;
using helios::probe::test::loadFixture;
using nlohmann::json;

namespace {

// The error capsFromJsonText raises for `text`, or "" when it parses.
std::string errorFor(const std::string& text) {
  try {
    capsFromJsonText(text);
  } catch (const CapsFormatError& e) {
    return e.what();
  }
  return "";
}

json h100() {
  return json::parse(R"({"device":"X","vendor_id":"0x10de","subgroup_size":32,"properties":[
  {"M":16,"N":16,"K":16,"A":"float16","B":"float16","C":"float32","Result":"float32","saturating":false,"scope":"subgroup"},
  {"M":16,"N":8,"K":16,"A":"float16","B":"float16","C":"float32","Result":"float32","saturating":false,"scope":"subgroup"},
  {"M":16,"N":8,"K":8,"A":"float16","B":"float16","C":"float32","Result":"float32","saturating":false,"scope":"subgroup"},
  {"M":16,"N":8,"K":8,"A":"float16","B":"float16","C":"float32","Result":"float32","saturating":false,"scope":"subgroup"}]})");
}

} // namespace

TEST_CASE("the H100 capture reads every field", "[probe][json]") {
  const auto c = loadFixture("nvidia-h100-580.json");
  CHECK(c.name == "NVIDIA H100 80GB HBM3");
  CHECK(c.vendor_id == 0x10de);
  CHECK(c.driver == "NVIDIA 580.159.04");
  CHECK(c.api_version == "1.4.312");
  CHECK(c.subgroup_size == 32);
  CHECK(c.max_compute_shared_memory == 49152);
  CHECK(c.coop_nv2.size() == 5);
  CHECK(c.coop_nv2[4].workgroupInvocations == 256);
  CHECK(c.coop_nv2[1].scope == "workgroup");
  CHECK(c.coop_khr[10].A == "bfloat16");
  CHECK(c.hasExtension("VK_KHR_cooperative_matrix"));
  CHECK(c.hasExtension("VK_NV_cooperative_matrix2"));
  CHECK_THAT(c.source, ContainsSubstring("H100"));
  CHECK(c.shader_cores.computeUnits == 132);
  CHECK(c.shader_cores.subgroupsPerUnit == 64);
  CHECK(c.coop_self_test.status == SelfTestStatus::NotRun);
}

TEST_CASE("shader cores and the self-test result are optional and round-trip", "[probe][json]") {
  auto c = loadFixture("amd-rdna3-radv.json");
  CHECK_FALSE(c.shader_cores.known()); // a capture without the field
  c.shader_cores = {"VK_AMD_shader_core_properties2", 48, 32, 3, 2, 8, 2, 16};
  c.coop_self_test = {SelfTestStatus::Fail, "GEMM 77x45x83 f16 -> f32 (bounded): C[3] = nan", true};
  c.device_uuid = "00112233445566778899aabbccddeeff";
  const auto back = capsFromJson(toJson(c));
  REQUIRE(back.size() == 1);
  CHECK(back[0] == c);
  const std::string text = formatDevice(c, 0);
  CHECK_THAT(text, ContainsSubstring("compute units") &&
                       ContainsSubstring("48 (VK_AMD_shader_core_properties2") &&
                       ContainsSubstring("3 engines x 2 arrays x 8 units"));
  CHECK_THAT(text, ContainsSubstring("coop self-test") && ContainsSubstring("fail: GEMM 77x45x83") &&
                       ContainsSubstring("(cached)"));
  auto bad = toJson(c);
  bad["shader_cores"]["compute_units"] = 0;
  CHECK_THROWS_WITH(capsFromJson(bad), ContainsSubstring("shader_cores.compute_units"));
  bad = toJson(c);
  bad["coop_self_test"]["status"] = "maybe";
  CHECK_THROWS_WITH(capsFromJson(bad), ContainsSubstring("coop_self_test.status"));
}

TEST_CASE("toJson has the documented shape", "[probe][json]") {
  const auto doc = toJson(std::vector<DeviceCaps>{loadFixture("nvidia-h100-580.json")});
  REQUIRE(doc["devices"].size() == 1);
  const auto& d = doc["devices"][0];
  for (const char* key :
       {"name", "vendor_id", "driver", "api_version", "subgroup_size", "coop_khr", "coop_nv2"})
    CHECK(d.contains(key));
  CHECK(d["best_f16_f32"] == json({{"M", 16}, {"N", 16}, {"K", 16}, {"score", 4096}}));
  CHECK(d["coop_khr"][3] == json({{"M", 16},
                                  {"N", 16},
                                  {"K", 16},
                                  {"A", "float16"},
                                  {"B", "float16"},
                                  {"C", "float32"},
                                  {"Result", "float32"},
                                  {"saturating", false},
                                  {"scope", "subgroup"}}));
  CHECK(d["vendor_id"] == "0x10de");
  const auto none = toJson(std::vector<DeviceCaps>{loadFixture("synthetic-empty.json")});
  CHECK(none["devices"][0]["best_f16_f32"].is_null());
}

TEST_CASE("every fixture survives toJson -> capsFromJson", "[probe][json]") {
  for (const char* name :
       {"nvidia-h100-580.json", "nvidia-h200-580-bf16.json", "intel-arc-a770-anv.json", "amd-rdna3-radv.json",
        "intel-hd5500-hasvk.json", "synthetic-tie-mn.json", "synthetic-workgroup-scope.json"}) {
    INFO(name);
    const auto original = loadFixture(name);
    const auto text = toJson(std::vector<DeviceCaps>{original, original}).dump(2);
    const auto back = capsFromJsonText(text);
    REQUIRE(back.size() == 2);
    CHECK(back[0] == original);
    CHECK(back[1] == original);
    CHECK(capsFromFixtureJson(toJson(original)) == original);
  }
  // The NV2 feature bits round-trip one by one (captures without them read all false).
  DeviceCaps c = loadFixture("nvidia-h100-580.json");
  CHECK(c.coop_nv2_features == CoopMatrix2Features{});
  bool CoopMatrix2Features::*const bits[] = {&CoopMatrix2Features::workgroupScope,
                                             &CoopMatrix2Features::flexibleDimensions,
                                             &CoopMatrix2Features::reductions,
                                             &CoopMatrix2Features::conversions,
                                             &CoopMatrix2Features::perElementOperations,
                                             &CoopMatrix2Features::tensorAddressing,
                                             &CoopMatrix2Features::blockLoads};
  for (auto bit : bits) {
    DeviceCaps one = c;
    one.coop_nv2_features.known = true;
    one.coop_nv2_features.*bit = true;
    CHECK(capsFromFixtureJson(toJson(one)) == one);
  }
}

TEST_CASE("missing and mistyped fields are named with their index", "[probe][json]") {
  auto doc = h100();
  doc["properties"][3].erase("K");
  CHECK_THAT(errorFor(doc.dump()), Equals("properties[3].K: missing"));

  doc = h100();
  doc["properties"][0]["A"] = "fp16";
  CHECK_THAT(errorFor(doc.dump()), ContainsSubstring("properties[0].A: unknown component type \"fp16\""));

  doc = h100();
  doc["properties"][2]["scope"] = "warp";
  CHECK_THAT(errorFor(doc.dump()), ContainsSubstring("properties[2].scope: unknown scope \"warp\""));

  doc = h100();
  doc["properties"][1]["M"] = "16";
  CHECK_THAT(errorFor(doc.dump()),
             ContainsSubstring("properties[1].M: expected a non-negative integer, got string"));

  doc = h100();
  doc["properties"][1]["N"] = -8;
  CHECK_THAT(errorFor(doc.dump()), ContainsSubstring("properties[1].N: expected a non-negative integer"));

  doc = h100();
  doc["properties"][1]["K"] = 0;
  CHECK_THAT(errorFor(doc.dump()), Equals("properties[1].K: must be greater than 0"));

  doc = h100();
  doc["properties"][1] = 5;
  CHECK_THAT(errorFor(doc.dump()), ContainsSubstring("properties[1]: expected an object"));

  doc = h100();
  doc.erase("properties");
  CHECK_THAT(errorFor(doc.dump()), Equals("properties: missing"));

  doc = h100();
  doc.erase("device");
  CHECK_THAT(errorFor(doc.dump()), Equals("device: missing"));

  doc = h100();
  doc["vendor_id"] = "nvidia";
  CHECK_THAT(errorFor(doc.dump()), ContainsSubstring("vendor_id: expected a number"));

  doc = h100();
  doc["nv_flexible_dimensions"] = json::array({{{"MGranularity", 16}}});
  CHECK_THAT(errorFor(doc.dump()), Equals("nv_flexible_dimensions[0].NGranularity: missing"));

  doc = h100();
  doc["properties"][0]["saturating"] = "no";
  CHECK_THAT(errorFor(doc.dump()), ContainsSubstring("properties[0].saturating: expected true or false"));

  CHECK_THAT(errorFor("[1,2]"), ContainsSubstring("document: expected an object"));
}

TEST_CASE("the devices form names the device index too", "[probe][json]") {
  auto doc = toJson(
      std::vector<DeviceCaps>{loadFixture("synthetic-tie-mn.json"), loadFixture("nvidia-h100-580.json")});
  doc["devices"][1]["coop_khr"][4].erase("Result");
  CHECK_THAT(errorFor(doc.dump()), Equals("devices[1].coop_khr[4].Result: missing"));
}

TEST_CASE("text that is not JSON reports the line", "[probe][json]") {
  const std::string text =
      "{\n  \"device\": \"X\",\n  \"vendor_id\": \"0x10de\",\n  \"subgroup_size\" 32\n}\n";
  CHECK_THAT(errorFor(text), ContainsSubstring("not valid JSON at line 4"));
  CHECK_THAT(errorFor(""), ContainsSubstring("not valid JSON at line 1"));
}

TEST_CASE("loadCapsFile prefixes errors with the path", "[probe][json]") {
  CHECK_THROWS_WITH(loadCapsFile(fixturePath("does-not-exist.json")),
                    ContainsSubstring("does-not-exist.json: cannot open the file"));
}
