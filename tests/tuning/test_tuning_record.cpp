// The Tuning record: defaults, the environment overrides' parser, tuning files (round trip, corrupt,
// mismatched) and the fill order with each field's source.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>

#include "engine/tuning/defaults.hpp"
#include "engine/tuning/file.hpp"
#include "engine/tuning/overrides.hpp"
#include "engine/tuning/resolve.hpp"
#include "engine/tuning/values.hpp"
#include "support/files.hpp"

using namespace helios::tuning;
using Catch::Matchers::ContainsSubstring;

namespace {

DeviceFacts facts() {
  DeviceFacts f;
  f.key = {0x10de, 0x2330, 0x91000000, "0123456789abcdef"};
  f.computeUnits = 132;
  return f;
}

EnvLookup env(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

Tuning withEnv(const std::map<std::string, std::string>& vars) {
  Tuning t = defaultTuning(facts());
  applyEnvironment(t, env(vars));
  return t;
}

std::filesystem::path scratchDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("helios-tuning-" + name + "-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  return dir;
}

// A record with every kind of value away from its default, from a random seed.
Tuning scrambled(uint32_t seed) {
  std::mt19937 rng(seed);
  const auto u = [&](uint32_t lo, uint32_t hi) {
    return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
  };
  Tuning t = defaultTuning(facts());
  const Source s = Source::File;
  t.gemm.coop.set(CoopMode::Off, s);
  t.gemm.coopShape.set(MatShape{16, 8, 16}, s);
  t.gemm.coopSubgroup.set(16, s);
  t.gemm.coop2.set(true, s);
  t.gemm.fillWorkgroups.set(u(1, 500), s);
  t.gemm.paddingCap.set(u(1, 90) / 100.0, s);
  t.gemm.bounded.set(BoundedMode::AllVectors, s);
  t.gemm.crosswiseB.set(false, s);
  t.gemm.maxKSlices.set(u(1, 32), s);
  t.gemm.directTile.set(CoopTile{64, 128, 32, 2, 4, 2}, s);
  t.gemm.pad.set(SharedPad{8, 16}, s);
  t.gemm.tilings.set({CoopTile{128, 128, 64, 2, 2, 1}, CoopTile{64, 64, u(1, 2) * 32, 2, 2, 2}}, s);
  t.gemm.groupM.set(u(0, 16), s);
  GemmChoice c;
  c.shape = {u(1, 4096), u(1, 4096), u(1, 4096), 1, true, false, true};
  c.tile = CoopTile{128, 128, 32, 2, 2, 1};
  c.kSlices = u(1, 8);
  c.stagedStore = false;
  c.producers = u(0, 2);
  putGemm(t, c, s);
  GemmChoice nv2;
  nv2.shape = {u(1, 4096), 64, 64, 1, false, false, false};
  nv2.coop2 = true;
  nv2.unroll = u(1, 8);
  nv2.tensorLayouts = false;
  putGemm(t, nv2, s);
  GemmChoice tiled;
  tiled.shape = {u(1, 999), 7, 9, 3, false, true, false};
  tiled.kernel = GemmKernel::Tiled;
  tiled.tiled = "64x64x8_4x4_p4_s2";
  putGemm(t, tiled, s);
  AttentionChoice a;
  a.pass = AttentionPassId::KeyValueGrad;
  a.headDim = 128;
  a.causal = true;
  a.tile = 64;
  a.subgroups = u(1, 8);
  a.prefetch = false;
  putAttention(t, a, s);
  t.attention.rowOps.set(false, s);
  return t;
}

} // namespace

TEST_CASE("tuning: defaults derive the wave from the compute units and leave every source default",
          "[tuning]") {
  DeviceFacts f = facts();
  CHECK(defaultTuning(f).gemm.fillWorkgroups.value == 120); // the H100's 132 SMs
  f.computeUnits = 24;
  const Tuning t = defaultTuning(f);
  CHECK(t.gemm.fillWorkgroups.value == 22);
  CHECK(t.key == f.key);
  forEachField(t, [](const char* name, const auto& field) {
    INFO(name);
    CHECK(field.source == Source::Default);
  });
  CHECK(toJson(t)["fields"].empty());
}

TEST_CASE("tuning: the environment sets fields with source env", "[tuning]") {
  const Tuning t = withEnv({{"HELIOS_COOP", "off"},
                            {"HELIOS_COOP_KSLICES", "4"},
                            {"HELIOS_COOP_CROSSWISE", "a"},
                            {"HELIOS_COOP_DIRECT_TILE", "64x64x32_sg2x2_s2"},
                            {"HELIOS_COOP_PAD", "8x0"},
                            {"HELIOS_COOP_BOUNDED", "0"},
                            {"HELIOS_COOP2", "1"},
                            {"HELIOS_GEMM_STAGED_STORE", "0"},
                            {"HELIOS_ATTENTION_TILE", "64"},
                            {"HELIOS_ATTENTION_PREFETCH", "0"},
                            {"HELIOS_COOP_EMULATE", "16x8x16"},
                            {"HELIOS_COOP_GROUP_M", ""}}); // empty: unset
  CHECK(t.gemm.coop.value == CoopMode::Off);
  CHECK(t.gemm.kSlices.value == 4u);
  CHECK(t.gemm.kSlices.source == Source::Env);
  CHECK(t.gemm.crosswiseA.value);
  CHECK_FALSE(t.gemm.crosswiseB.value);
  CHECK(t.gemm.directTile.value == CoopTile{64, 64, 32, 2, 2, 2});
  CHECK(t.gemm.pad.value == SharedPad{8, 0});
  CHECK(t.gemm.bounded.value == BoundedMode::Never);
  CHECK(t.gemm.coop2.value);
  CHECK_FALSE(t.gemm.stagedStore.value);
  CHECK(t.attention.tile.value == 64u);
  CHECK_FALSE(t.attention.prefetch.value);
  CHECK(t.gemm.coopEmulate.value == MatShape{16, 8, 16});
  CHECK_FALSE(t.gemm.groupM.value);
  CHECK(t.gemm.groupM.source == Source::Default);
  CHECK(t.gemm.boundedTile.source == Source::Default);
}

TEST_CASE("tuning: bad environment values are errors naming the variable and the value", "[tuning]") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"HELIOS_COOP_KSLICES", "abc"},
      {"HELIOS_COOP_KSLICES", "0"},
      {"HELIOS_COOP_KSLICES", "-2"},
      {"HELIOS_COOP_KSLICES", "4x"},
      {"HELIOS_COOP", "yes"},
      {"HELIOS_COOP", "ON"},
      {"HELIOS_COOP_SUBGROUP", "24"},
      {"HELIOS_COOP2", "true"},
      {"HELIOS_COOP_BOUNDED", "sometimes"},
      {"HELIOS_COOP_CROSSWISE", "c"},
      {"HELIOS_COOP_SMALL_TILE_BK", "48"},
      {"HELIOS_COOP_EDGE_SHIFT", "on"},
      {"HELIOS_COOP_DIRECT_TILE", "64x64x32"},
      {"HELIOS_COOP_BOUNDED_TILE", "64x60x32_sg2x2_s2"},
      {"HELIOS_COOP_GROUP_M", "eight"},
      {"HELIOS_COOP_PAD", "8"},
      {"HELIOS_GEMM_STAGED_STORE", "1"},
      {"HELIOS_ATTENTION_TILE", "6 4"},
      {"HELIOS_ATTENTION_ROWOPS", "no"},
      {"HELIOS_COOP_EMULATE", "12x8x8"},
      {"HELIOS_COOP_SHAPE", "16x16"},
      {"HELIOS_COOP_EMULATE", "16x8x8 "}};
  for (const auto& [name, value] : bad) {
    INFO(name << "=" << value);
    CHECK_THROWS_WITH(withEnv({{name, value}}), ContainsSubstring(name + "='" + value + "'"));
  }
  CHECK_THROWS_WITH(withEnv({{"HELIOS_COOP_EMULATE", "16x16x16"}, {"HELIOS_COOP_SHAPE", "16x8x16"}}),
                    ContainsSubstring("both set"));
  // Every variable the parser reads is one docs/TUNING.md documents.
  const std::string doc = helios::test::slurp(std::filesystem::path(HELIOS_SOURCE_DIR) / "docs/TUNING.md");
  for (const std::string& name : environmentNames()) {
    INFO(name);
    CHECK(doc.find(name) != std::string::npos);
  }
}

TEST_CASE("tuning: files round-trip every kind of value", "[tuning]") {
  const auto dir = scratchDir("roundtrip");
  for (uint32_t seed : {1u, 2u, 3u}) {
    const Tuning t = scrambled(seed);
    const auto path = tuningFilePath(dir, t.key);
    writeTuningFile(path, t);
    Tuning back = defaultTuning(facts());
    std::ostringstream warn;
    REQUIRE(readTuningFile(back, path, Source::File, warn, true));
    CHECK(warn.str().empty());
    CHECK(back == t);
    // All fields written, read as --tuning: the same values, sources --tuning where the file had them.
    writeTuningFile(path, t, /*all=*/true);
    Tuning all = defaultTuning(facts());
    REQUIRE(readTuningFile(all, path, Source::Explicit, warn, true));
    forEachField(all, [](const char*, auto& f) { f.source = Source::File; });
    Tuning expected = t;
    forEachField(expected, [](const char*, auto& f) { f.source = Source::File; });
    CHECK(all == expected);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("tuning: corrupt, mismatched and missing files warn once and keep the defaults", "[tuning]") {
  const auto dir = scratchDir("fallback");
  const Tuning defaults = defaultTuning(facts());
  const Tuning good = scrambled(7);
  const auto path = dir / "t.json";
  const auto check = [&](const std::string& contents, const std::string& why) {
    helios::test::spit(path, contents);
    Tuning t = defaults;
    std::ostringstream warn;
    CHECK_FALSE(readTuningFile(t, path, Source::Explicit, warn, true));
    CHECK(t == defaults);
    INFO(warn.str());
    CHECK(warn.str().find('\n') == warn.str().size() - 1); // one line
    CHECK_THAT(warn.str(), ContainsSubstring(why) && ContainsSubstring("the defaults stay"));
  };
  const std::string text = toJson(good).dump();
  check(text.substr(0, text.size() / 2), "not valid JSON");
  check("[1, 2]", "malformed");
  check("{}", "malformed");
  for (const auto& edit :
       std::vector<std::pair<std::string, nlohmann::json>>{{"/key/device_id", 0x2331},
                                                           {"/key/driver_version", 1},
                                                           {"/key/kernel_version", "fedcba9876543210"},
                                                           {"/key/vendor_id", 0x1002}}) {
    nlohmann::json doc = toJson(good);
    doc[nlohmann::json::json_pointer(edit.first)] = edit.second;
    check(doc.dump(), "another device, driver or kernel version");
  }
  nlohmann::json doc = toJson(good);
  doc["fields"]["gemm.kSlices"] = "abc";
  check(doc.dump(), "gemm.kSlices");
  doc = toJson(good);
  doc["fields"]["gemm.noSuchKnob"] = 1;
  check(doc.dump(), "unknown field");
  doc = toJson(good);
  doc["fields"]["gemm.shapes"][0]["tile"] = "64x64";
  check(doc.dump(), "gemm.shapes[0].tile");
  // Missing: a warning for an explicit file, silence for the device's own.
  Tuning t = defaults;
  std::ostringstream warn;
  CHECK_FALSE(readTuningFile(t, dir / "none.json", Source::Explicit, warn, true));
  CHECK_THAT(warn.str(), ContainsSubstring("does not exist"));
  std::ostringstream quiet;
  CHECK_FALSE(readTuningFile(t, dir / "none.json", Source::File, quiet, false));
  CHECK(quiet.str().empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("tuning: layers fill in order, each field naming its source", "[tuning]") {
  const auto dir = scratchDir("layers");
  Tuning device = defaultTuning(facts());
  device.gemm.maxKSlices.set(4, Source::File);
  device.gemm.smallTileBK.set(32, Source::File);
  device.gemm.minFlops.set(5e6, Source::File);
  writeTuningFile(tuningFilePath(dir, device.key), device);
  Tuning explicitLayer = defaultTuning(facts());
  explicitLayer.gemm.maxKSlices.set(8, Source::File);
  explicitLayer.gemm.kSlices.set(3u, Source::File);
  writeTuningFile(dir / "explicit.json", explicitLayer);
  ResolveOptions o;
  o.cacheDir = dir;
  o.explicitFile = dir / "explicit.json";
  o.env = env({{"HELIOS_COOP_KSLICES", "2"}});
  std::ostringstream warn;
  o.warn = &warn;
  const Tuning t = resolveTuning(facts(), o);
  CHECK(warn.str().empty());
  CHECK(t.gemm.smallTileBK.value == 32);
  CHECK(t.gemm.smallTileBK.source == Source::File);
  CHECK(t.gemm.maxKSlices.value == 8);
  CHECK(t.gemm.maxKSlices.source == Source::Explicit);
  CHECK(t.gemm.kSlices.value == 2u);
  CHECK(t.gemm.kSlices.source == Source::Env);
  CHECK(t.gemm.paddingCap.source == Source::Default);
  const nlohmann::json report = reportJson(t);
  CHECK(report["fields"]["gemm.maxKSlices"]["source"] == "--tuning");
  CHECK(report["fields"]["gemm.minFlops"]["source"] == "file");
  CHECK(report["fields"]["gemm.kSlices"]["source"] == "env");
  CHECK(report["fields"]["gemm.paddingCap"]["source"] == "default");
  CHECK_THAT(reportText(t), ContainsSubstring("gemm.kSlices") && ContainsSubstring("env"));
  // A bad environment value stops resolution with its error; a mismatched device file only warns.
  o.env = env({{"HELIOS_COOP_KSLICES", "abc"}});
  CHECK_THROWS_WITH(resolveTuning(facts(), o), ContainsSubstring("HELIOS_COOP_KSLICES='abc'"));
  DeviceFacts other = facts();
  other.key.driverVersion += 1;
  helios::test::spit(tuningFilePath(dir, other.key), toJson(device).dump());
  o.env = nullptr;
  o.explicitFile.clear();
  const Tuning fallback = resolveTuning(other, o);
  CHECK_THAT(warn.str(), ContainsSubstring("another device"));
  CHECK(fallback.gemm.maxKSlices.source == Source::Default);
  std::filesystem::remove_all(dir);
}
