#include "engine/train/checkpoint_pin.hpp"

#include "engine/train/checkpoint_dir.hpp"
#include "engine/train/safetensors.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace helios::train {

namespace fs = std::filesystem;

namespace {

constexpr int kPinTries = 8;

int openDirectory(const fs::path& dir) {
  return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

// Whether `fd` still is the directory at `dir` (the pruner may have removed it, or a save exchanged it).
bool stillAt(int fd, const fs::path& dir) {
  struct stat held {
  }, named{};
  return ::fstat(fd, &held) == 0 && ::stat(dir.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
         held.st_ino == named.st_ino;
}

} // namespace

PinnedCheckpoint::~PinnedCheckpoint() {
  if (fd_ >= 0) ::close(fd_); // releases the shared lock
}

PinnedCheckpoint::PinnedCheckpoint(PinnedCheckpoint&& o) noexcept
    : dir_(std::move(o.dir_)), fd_(std::exchange(o.fd_, -1)) {}

PinnedCheckpoint& PinnedCheckpoint::operator=(PinnedCheckpoint&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    dir_ = std::move(o.dir_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

PinnedCheckpoint pinCheckpoint(const fs::path& path) {
  for (int attempt = 0; attempt < kPinTries; ++attempt) {
    const fs::path dir = resolveCheckpoint(path);
    const int fd = openDirectory(dir);
    if (fd < 0) {
      if (errno == ENOENT) continue; // pruned between resolving and opening: resolve again
      throw CheckpointError(
          fmt::format("{}: cannot open the checkpoint ({})", dir.string(), std::strerror(errno)));
    }
    // Shared: readers never wait for each other; the pruner holds its exclusive lock only while removing.
    while (::flock(fd, LOCK_SH) != 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw CheckpointError(
          fmt::format("{}: cannot lock the checkpoint ({})", dir.string(), std::strerror(err)));
    }
    if (stillAt(fd, dir)) return PinnedCheckpoint(dir, fd);
    ::close(fd);
  }
  throw CheckpointError(
      fmt::format("{}: its current checkpoint was pruned {} times while being opened (a run "
                  "saving faster than it can be read?)",
                  path.string(), kPinTries));
}

bool removeUnlessPinned(const fs::path& dir) {
  const int fd = openDirectory(dir);
  std::error_code ec;
  if (fd < 0) {
    if (errno == ENOENT) return true; // gone already
    fs::remove_all(dir, ec); // a file (a torn `latest` temporary), or no read access: no reader either
    if (ec) throw fs::filesystem_error("removing checkpoint debris", dir, ec);
    return true;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return false; // a reader holds it: a later save removes it
  }
  fs::remove_all(dir, ec);
  ::close(fd);
  if (ec) throw fs::filesystem_error("removing an old checkpoint", dir, ec);
  return true;
}

} // namespace helios::train
