// helios-bench peak and helios-probe --peak as a user runs them, on this device with its coop matrices
// lowered (HELIOS_COOP_EMULATE; lavapipe has none of its own): a tiny grid, a few trips, a 1 MiB copy. Every
// case the plan makes is measured, checked against float64 (ok) and written as JSON with the device, driver
// and commit.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/process.hpp"
#include "support/random.hpp"

using namespace helios;
using Catch::Matchers::ContainsSubstring;

namespace {

// The peak options both tools take, then helios-bench's timing options.
const std::string kTinyPeak = " --workgroups 3 --iterations 3 --copy-bytes 1048592";
const std::string kTiny = kTinyPeak + " --warmup-ms 0 --repeat 1 --windows 2";

std::string tempJson(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string(name) + "-" + std::to_string(test::testSeed()) + ".json"))
      .string();
}

} // namespace

TEST_CASE("helios-bench peak: lowered MMA cases and the copy, measured, checked, written", "[peak][cli]") {
  const std::string out = tempJson("helios-bench-peak");
  const auto r = test::runCommand("HELIOS_COOP_EMULATE=16x16x16 HELIOS_COMMIT=abc123 " +
                                  std::string(HELIOS_BENCH_EXE) + " peak" + kTiny + " --json " + out);
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  CHECK_THAT(r.output, ContainsSubstring("peak mma  16x16 x16"));
  CHECK_THAT(r.output, ContainsSubstring("peak copy 1 MiB"));
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::filesystem::remove(out);
  CHECK(j["benchmark"] == "peak");
  CHECK(j["commit"] == "abc123");
  CHECK_FALSE(j["device"].get<std::string>().empty());
  CHECK_FALSE(j["driver"].get<std::string>().empty());
  REQUIRE(j["results"].size() == 2); // f16 x f16 -> f32 and -> f16
  for (const auto& row : j["results"]) {
    INFO(row.dump());
    CHECK(row["source"] == "lowered");
    CHECK(row["ok"] == true);
    CHECK(row["workgroups"] == 3);
    CHECK(row["iterations"] == 3);
    CHECK(row["tflops"].get<double>() > 0);
  }
  CHECK(j["best"].size() == 2);
  REQUIRE(j["bandwidth"].size() == 1);
  const auto& copy = j["bandwidth"][0];
  CHECK(copy["ok"] == true);
  CHECK(copy["bytes_per_buffer"] == 1048592);
  CHECK(copy["gbps"].get<double>() > 0);
}

TEST_CASE("helios-probe --peak shows the same measurement; bad options are refused", "[peak][cli]") {
  const auto r = test::runCommand("HELIOS_COOP_EMULATE=16x8x16 " + std::string(HELIOS_BENCH_EXE) +
                                  " peak --parts copy" + kTiny);
  INFO(r.output);
  CHECK(r.exitCode == 0);
  CHECK_THAT(r.output, ContainsSubstring("peak copy"));
  CHECK_THAT(r.output, !ContainsSubstring("peak mma"));

  const std::string probe =
      "HELIOS_COOP_EMULATE=16x8x16 " + std::string(HELIOS_PROBE_EXE) + " --peak" + kTinyPeak;
  const auto lines = test::runCommand(probe);
  INFO(lines.output);
  CHECK(lines.exitCode == 0);
  CHECK_THAT(lines.output, ContainsSubstring("peak mma  16x8  x16"));
  CHECK_THAT(lines.output, ContainsSubstring("peak copy 1 MiB"));
  const auto json = test::runCommand("{ " + probe + " --json 2>/dev/null; }");
  INFO(json.output);
  REQUIRE(json.exitCode == 0);
  const nlohmann::json j = nlohmann::json::parse(json.output);
  CHECK(j["benchmark"] == "peak");
  CHECK(j["results"].size() == 2);
  CHECK(j["results"][0]["ok"] == true);
  CHECK(j["bandwidth"][0]["ok"] == true);

  const auto bad = test::runCommand(std::string(HELIOS_BENCH_EXE) + " peak --grid 4by4 --parts mma" + kTiny);
  CHECK(bad.exitCode != 0);
  const auto parts = test::runCommand(std::string(HELIOS_BENCH_EXE) + " peak --parts flops");
  CHECK(parts.exitCode != 0);
}
