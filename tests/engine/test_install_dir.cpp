// Where an installed Helios looks for its data: <prefix>/share/helios beside the running binary.
#include "engine/io/install_dir.hpp"

#include <catch2/catch_test_macros.hpp>
#include <filesystem>

namespace fs = std::filesystem;
using namespace helios::io;

TEST_CASE("install dir: share/helios sits beside the binary's folder", "[io][install]") {
  CHECK(dataDirFor("/opt/helios/lib/libhelios.so.0.1") == fs::path("/opt/helios/share/helios"));
  CHECK(dataDirFor("/opt/helios/bin/helios-train") == fs::path("/opt/helios/share/helios"));
  CHECK(dataDirFor("build/lib/libhelios.so") == fs::path("build/share/helios"));
  CHECK(dataDirFor("").empty());
}

TEST_CASE("install dir: the running binary is this test executable", "[io][install]") {
  // Linked statically into the test, so dladdr names no shared object and /proc/self/exe answers.
  const fs::path self = ownBinaryPath();
  CHECK(self == fs::read_symlink("/proc/self/exe"));
  CHECK(fs::is_regular_file(self));
  CHECK(installedDataDir() == self.parent_path().parent_path() / "share" / "helios");
}
