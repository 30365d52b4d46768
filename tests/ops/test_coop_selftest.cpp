// The per-device coop self-test (engine/ops/coop_selftest.hpp): the HELIOS_COOP parser, the check runner, the
// verdict with its cache file (written, read back, ignored when its key differs or it is corrupt), and the
// live checks end to end with the tiled GEMM and fallback attention standing in for the coop kernels (this
// machine's lavapipe has no coop matrices), right and with a planted wrong output.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <unistd.h>

#include "engine/ops/coop_selftest.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "support/device_io.hpp"

using namespace helios;
using namespace helios::ops;
using Catch::Matchers::ContainsSubstring;

namespace {

// A fresh directory under the system's temporary one, removed with the object.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("helios-selftest-" + std::to_string(std::random_device{}()) + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

probe::SelfTestKey key() {
  return probe::selfTestKey(0x10de, 0x2330, 0x91000000u, "00112233445566778899aabbccddeeff");
}

// Checks that count their runs; `wrong` makes the second one report a wrong element.
struct FakeChecks {
  int runs = 0;
  bool wrong = false;
  std::vector<CoopCheck> operator()() {
    return {{"GEMM aligned", [this] { return ++runs, std::string(); }},
            {"GEMM bounded",
             [this] { return ++runs, wrong ? std::string("C[5] = 3, expected 1") : std::string(); }}};
  }
};

size_t lines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

CoopDeviceInfo coopLike() { // what a 16x16x16 f16 device reports; the stand-ins never compile a coop kernel
  CoopDeviceInfo d;
  d.coopMatrix = true;
  d.coopM = d.coopN = d.coopK = 16;
  return d;
}

} // namespace

TEST_CASE("coop self-test: checks stop at the first wrong result or throw", "[coop_selftest]") {
  CHECK(runCoopChecks({}).status == probe::SelfTestStatus::NotRun);
  FakeChecks fake;
  CHECK(runCoopChecks(fake()).status == probe::SelfTestStatus::Pass);
  CHECK(fake.runs == 2);
  fake.wrong = true;
  const auto r = runCoopChecks(fake());
  CHECK(r.status == probe::SelfTestStatus::Fail);
  CHECK(r.failure == "GEMM bounded: C[5] = 3, expected 1");
  const auto thrown =
      runCoopChecks({{"attention", []() -> std::string { throw std::runtime_error("no pipeline"); }},
                     {"never", [] { return std::string("reached"); }}});
  CHECK(thrown.failure == "attention: threw: no pipeline");
}

TEST_CASE("coop self-test: a right result keeps coop on, a wrong one turns it off with one warning",
          "[coop_selftest]") {
  TempDir dir;
  const auto file = probe::selfTestCacheFile(dir.path, key());
  FakeChecks fake;
  std::ostringstream warn;
  probe::SelfTestResult r;
  CHECK(decideCoop(CoopMode::Auto, "Test GPU", file, key(), std::ref(fake), warn, &r));
  CHECK(r.status == probe::SelfTestStatus::Pass);
  CHECK_FALSE(r.cached);
  CHECK(warn.str().empty());
  // Cached: the checks do not run again.
  CHECK(decideCoop(CoopMode::Auto, "Test GPU", file, key(), std::ref(fake), warn, &r));
  CHECK(fake.runs == 2);
  CHECK(r.cached);

  TempDir other;
  const auto badFile = probe::selfTestCacheFile(other.path, key());
  FakeChecks broken;
  broken.wrong = true;
  CHECK_FALSE(decideCoop(CoopMode::Auto, "Test GPU", badFile, key(), std::ref(broken), warn, &r));
  CHECK(r.status == probe::SelfTestStatus::Fail);
  CHECK(lines(warn.str()) == 1);
  CHECK_THAT(warn.str(), ContainsSubstring("cooperative matrices turned off on Test GPU") &&
                             ContainsSubstring("GEMM bounded: C[5] = 3, expected 1") &&
                             ContainsSubstring("HELIOS_COOP=on"));
  // The failure is cached too: off again without running.
  std::ostringstream again;
  CHECK_FALSE(decideCoop(CoopMode::Auto, "Test GPU", badFile, key(), std::ref(broken), again, &r));
  CHECK(broken.runs == 2);
  CHECK(r.cached);
  CHECK(lines(again.str()) == 1);

  // HELIOS_COOP=on|off decide without the test or its cache.
  FakeChecks untouched;
  CHECK(decideCoop(CoopMode::On, "Test GPU", badFile, key(), std::ref(untouched), warn, &r));
  CHECK(r.status == probe::SelfTestStatus::NotRun);
  CHECK_FALSE(decideCoop(CoopMode::Off, "Test GPU", file, key(), std::ref(untouched), warn, &r));
  CHECK(untouched.runs == 0);
}

TEST_CASE("coop self-test: the cache round-trips and ignores other keys and corrupt files",
          "[coop_selftest]") {
  TempDir dir;
  const auto file = probe::selfTestCacheFile(dir.path, key());
  CHECK_FALSE(probe::readSelfTestCache(file, key())); // missing
  const probe::SelfTestResult fail{probe::SelfTestStatus::Fail, "GEMM aligned: C[0] = nan", false};
  REQUIRE(probe::writeSelfTestCache(file, key(), fail));
  auto back = probe::readSelfTestCache(file, key());
  REQUIRE(back);
  CHECK(back->status == fail.status);
  CHECK(back->failure == fail.failure);
  CHECK(back->cached);
  // Only the file itself: the temporary was renamed over it.
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator()) ==
        1);

  for (auto change : {+[](probe::SelfTestKey& k) { k.driverVersion++; },
                      +[](probe::SelfTestKey& k) { k.kernelVersion += "x"; },
                      +[](probe::SelfTestKey& k) { k.deviceUuid[0] = 'f'; }}) {
    probe::SelfTestKey k = key();
    change(k);
    CHECK_FALSE(probe::readSelfTestCache(file, k));
  }
  for (const char* text : {"", "{", "[]", "{\"key\": 1}", "\x01\x02garbage"}) {
    std::ofstream(file, std::ios::trunc) << text;
    CHECK_FALSE(probe::readSelfTestCache(file, key()));
  }
  // A corrupt file re-runs the test and is replaced.
  FakeChecks fake;
  std::ostringstream warn;
  CHECK(decideCoop(CoopMode::Auto, "Test GPU", file, key(), std::ref(fake), warn));
  CHECK(fake.runs == 2);
  CHECK(probe::readSelfTestCache(file, key())->status == probe::SelfTestStatus::Pass);
  // Status strings other than pass and fail are not trusted.
  std::ofstream(file, std::ios::trunc)
      << R"({"key":{"vendor_id":4318,"device_id":9008,"driver_version":)" << key().driverVersion
      << R"(,"device_uuid":")" << key().deviceUuid << R"(","kernel_version":")" << key().kernelVersion
      << R"("},"status":"maybe","failure":""})";
  CHECK_FALSE(probe::readSelfTestCache(file, key()));
  CHECK_FALSE(key().kernelVersion.empty());
}

TEST_CASE("coop self-test: the GEMM checks plan the direct and the bounded coop kernel", "[coop_selftest]") {
  MatmulProblem aligned;
  aligned.M = aligned.N = aligned.K = 128;
  CHECK(planMatmul(aligned, coopLike()).decision == CoopDecision::DirectCoop);
  MatmulProblem odd;
  odd.M = 77, odd.N = 45, odd.K = 83;
  odd.vectorRows = false;
  CHECK(planMatmul(odd, coopLike(), selfTestBounded({})).decision == CoopDecision::Bounded);
}

TEST_CASE("coop self-test: the live checks pass with the stand-in kernels and catch a planted wrong output",
          "[coop_selftest]") {
  const auto right = runCoopChecks(liveCoopChecks(test::ctx(), coopLike(), {.standIn = true}));
  INFO(right.failure);
  CHECK(right.status == probe::SelfTestStatus::Pass);
  CHECK(liveCoopChecks(test::ctx(), coopLike(), {.standIn = true}).size() == 4);

  // One element off by 1 in the first result read back.
  int reads = 0;
  CoopCheckOptions planted{.standIn = true, .tamper = [&](std::vector<float>& v) {
                             if (reads++ == 0) v[v.size() / 3] += 1.0f;
                           }};
  const auto wrong = runCoopChecks(liveCoopChecks(test::ctx(), coopLike(), planted));
  CHECK(wrong.status == probe::SelfTestStatus::Fail);
  CHECK_THAT(wrong.failure, ContainsSubstring("GEMM 128x128x128") && ContainsSubstring("C["));
  // A wrong attention output (the GEMMs' two reads pass).
  reads = 0;
  planted.tamper = [&](std::vector<float>& v) {
    if (reads++ == 2) v[7] += 1.0f;
  };
  const auto wrongAttention = runCoopChecks(liveCoopChecks(test::ctx(), coopLike(), planted));
  CHECK_THAT(wrongAttention.failure, ContainsSubstring("attention forward") && ContainsSubstring("o[7]"));
}

TEST_CASE("coop self-test: the hook runs the coop kernels' checks once on a coop device", "[coop_selftest]") {
  const CoopDeviceInfo info = coopDeviceInfo(test::ctx().device());
  if (!info.coopMatrix) { // lavapipe: no coop, so the hook never runs the test
    CHECK(coopSelfTestResult(test::ctx().device()).status == probe::SelfTestStatus::NotRun);
    SKIP("no cooperative matrices on this device");
  }
  const auto hooked = coopSelfTestResult(test::ctx().device());
  INFO(hooked.failure);
  CHECK(hooked.status != probe::SelfTestStatus::Fail);
  // The real coop kernels, run again here (fresh inputs), against the references.
  const auto fresh = runCoopChecks(liveCoopChecks(test::ctx(), info));
  INFO(fresh.failure);
  CHECK(fresh.status == probe::SelfTestStatus::Pass);
}
