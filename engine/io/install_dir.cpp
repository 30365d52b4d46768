#include "engine/io/install_dir.hpp"

#include <dlfcn.h>
#include <string_view>

namespace helios::io {

namespace fs = std::filesystem;

namespace {

bool isSharedObject(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.size() > 3 && (name.ends_with(".so") || name.find(".so.") != std::string::npos);
}

} // namespace

fs::path ownBinaryPath() {
  // dladdr names the shared object holding this function; for code linked into an executable it gives
  // argv[0] at best, so the kernel's /proc/self/exe is asked instead.
  Dl_info info{};
  std::error_code ec;
  if (dladdr(reinterpret_cast<void*>(&ownBinaryPath), &info) && info.dli_fname && *info.dli_fname) {
    const fs::path lib = fs::weakly_canonical(info.dli_fname, ec);
    if (!ec && isSharedObject(lib)) return lib;
  }
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

fs::path dataDirFor(const fs::path& binary) {
  if (binary.empty()) return {};
  return binary.parent_path().parent_path() / "share" / "helios";
}

fs::path installedDataDir() {
  return dataDirFor(ownBinaryPath());
}

} // namespace helios::io
