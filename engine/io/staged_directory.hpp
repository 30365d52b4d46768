#pragma once
// An output directory that appears whole or not at all: its files are written into a temporary directory
// beside the target (`<target>.partial-<pid>-<n>`), and commit() renames that into place. Destroyed
// uncommitted, the temporary is removed and the target is untouched. An existing target is replaced only
// when it is empty or holds `marker` (a file an earlier run of the same writer left there, e.g. an export's
// config.json); anything else is refused on construction, before any work, so nothing of the user's is lost.
// Errors throw io::FileWriteError naming the directory.
#include <filesystem>
#include <string>

namespace helios::io {

class StagedDirectory {
public:
  StagedDirectory(const std::filesystem::path& target, const std::string& marker);
  ~StagedDirectory();
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;
  const std::filesystem::path& path() const { return staged_; } // where to write
  const std::filesystem::path& target() const { return target_; }
  void commit();

private:
  std::filesystem::path target_, staged_;
  bool committed_ = false;
};

} // namespace helios::io
