#pragma once
// A run directory has one owner. The trainer that writes it holds an exclusive advisory lock (flock) on
// RUN/helios.lock for the whole run, so a second trainer on the same directory is refused at once, naming
// the holder's pid, instead of interleaving metrics.jsonl and pruning the other's checkpoints. A fresh run
// starts only in a new or empty directory; a resumed one in the run directory of its checkpoint (or a new or
// empty one); --overwrite moves what the directory holds aside (RUN.replaced-N) and never deletes it. The
// lock file stays after the run (removing it would race with the next claimant); it holds the last owner's
// pid, host and start time. Readers do not take this lock: they pin the step they read
// (checkpoint_pin.hpp). Under MPI only rank 0, which writes, claims.
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace helios::train {

class RunDirectoryError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class RunStart : uint8_t { Fresh, Resume, Overwrite };

class RunDirectory {
public:
  // Claims `dir` (created when missing). With RunStart::Resume, `resumedRun` is the run directory of the
  // checkpoint read (empty for a step directory elsewhere): `dir` may hold that run. Throws
  // RunDirectoryError (in use, holds another run) or io::FileWriteError (cannot be created or written).
  static RunDirectory claim(const std::filesystem::path& dir, RunStart start,
                            const std::filesystem::path& resumedRun = {});

  RunDirectory(RunDirectory&& o) noexcept;
  RunDirectory& operator=(RunDirectory&& o) noexcept;
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;
  ~RunDirectory(); // releases the lock

  const std::filesystem::path& dir() const { return dir_; }
  // Where --overwrite moved the directory's previous contents; empty when nothing was moved.
  const std::filesystem::path& movedAside() const { return movedAside_; }

private:
  RunDirectory(std::filesystem::path dir, int fd) : dir_(std::move(dir)), fd_(fd) {}
  std::filesystem::path dir_, movedAside_;
  int fd_ = -1;
};

inline constexpr const char* kRunLockFile = "helios.lock";

} // namespace helios::train
