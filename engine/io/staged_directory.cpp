#include "engine/io/staged_directory.hpp"

#include "engine/io/atomic_file.hpp"

#include <atomic>
#include <fmt/format.h>
#include <unistd.h>

namespace helios::io {

namespace fs = std::filesystem;

namespace {

fs::path beside(const fs::path& target, const char* what) {
  static std::atomic<unsigned> counter{0};
  fs::path p = target;
  p += fmt::format(".{}-{}-{}", what, static_cast<long>(::getpid()), counter++);
  return p;
}

fs::path parentOf(const fs::path& p) {
  return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

} // namespace

StagedDirectory::StagedDirectory(const fs::path& target, const std::string& marker)
    : target_(target.has_filename() ? target : target.parent_path()) {
  std::error_code ec;
  if (fs::exists(target_, ec)) {
    if (!fs::is_directory(target_, ec))
      throw FileWriteError(fmt::format("{}: exists and is not a directory", target_.string()));
    if (!fs::is_empty(target_, ec) && !fs::exists(target_ / marker, ec))
      throw FileWriteError(fmt::format("{}: exists and is not empty, and holds no {} of an earlier export: "
                                       "refusing to replace it (remove it or choose another directory)",
                                       target_.string(), marker));
  }
  fs::create_directories(parentOf(target_), ec);
  staged_ = beside(target_, "partial");
  if (!fs::create_directory(staged_, ec) || ec)
    throw FileWriteError(fmt::format("{}: cannot create the directory ({})", staged_.string(), ec.message()));
}

StagedDirectory::~StagedDirectory() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staged_, ec);
}

void StagedDirectory::commit() {
  syncDirectory(staged_);
  std::error_code ec;
  fs::path old;
  if (fs::exists(target_, ec)) {
    old = beside(target_, "old");
    fs::rename(target_, old, ec);
    if (ec)
      throw FileWriteError(fmt::format("{}: cannot move it aside ({})", target_.string(), ec.message()));
  }
  fs::rename(staged_, target_, ec);
  if (ec) {
    const std::string why = ec.message();
    if (!old.empty()) fs::rename(old, target_, ec);
    throw FileWriteError(
        fmt::format("{}: cannot rename the written directory into place ({})", target_.string(), why));
  }
  committed_ = true;
  syncDirectory(parentOf(target_));
  if (!old.empty()) fs::remove_all(old, ec);
}

} // namespace helios::io
