#pragma once
// Readers and the pruner of a run's step directories (checkpoint_dir.hpp) meet through advisory locks on the
// step directories themselves (flock on a read-only descriptor of the directory; no file is created, so a
// reader needs no write access). A reader (sample, export, resume, an API loader) pins the step it reads
// with a shared lock for as long as it reads; the pruner takes an exclusive lock without waiting and leaves
// a pinned directory for a later save to remove. A reader that resolved a step just before the pruner
// removed it notices (the directory at that path is gone or another one) and resolves again.
#include <filesystem>

namespace helios::train {

class PinnedCheckpoint {
public:
  PinnedCheckpoint() = default;
  PinnedCheckpoint(std::filesystem::path dir, int fd) : dir_(std::move(dir)), fd_(fd) {}
  ~PinnedCheckpoint();
  PinnedCheckpoint(PinnedCheckpoint&& o) noexcept;
  PinnedCheckpoint& operator=(PinnedCheckpoint&& o) noexcept;
  PinnedCheckpoint(const PinnedCheckpoint&) = delete;
  PinnedCheckpoint& operator=(const PinnedCheckpoint&) = delete;

  const std::filesystem::path& dir() const { return dir_; } // the step directory, held while this lives

private:
  std::filesystem::path dir_;
  int fd_ = -1;
};

// The step directory --resume/--run PATH names (resolveCheckpoint), pinned. Where PATH is a run directory and
// its current step is pruned while being pinned, the newer current step is taken (a few tries). Throws
// CheckpointError as resolveCheckpoint does.
PinnedCheckpoint pinCheckpoint(const std::filesystem::path& path);

// The pruner's side: removes `dir` (recursively) unless a reader pins it; returns whether it was removed.
bool removeUnlessPinned(const std::filesystem::path& dir);

} // namespace helios::train
