#include "engine/train/run_dir.hpp"

#include "engine/io/atomic_file.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace helios::train {

namespace fs = std::filesystem;

namespace {

std::string hostName() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "?";
}

// What the lock file says about its holder: "pid 123 on host h since 2026-11-29 05:40:00 UTC".
std::string holderOf(int fd) {
  char buf[256] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s.empty() ? "a process that has not written its pid yet" : s;
}

void recordHolder(int fd) {
  const std::time_t now = std::time(nullptr);
  char when[32] = {};
  std::tm utc{};
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", ::gmtime_r(&now, &utc));
  const std::string text =
      fmt::format("pid {} on {} since {}\n", static_cast<long>(::getpid()), hostName(), when);
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    throw io::FileWriteError(fmt::format("cannot write the run lock file ({})", std::strerror(errno)));
}

// The exclusive lock on dir/helios.lock, taken without waiting; refused with the holder when another has it.
int lockOrRefuse(const fs::path& dir) {
  const fs::path file = dir / kRunLockFile;
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw io::FileWriteError(
        fmt::format("{}: cannot open the run lock file ({})", file.string(), std::strerror(errno)));
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    const std::string holder = err == EWOULDBLOCK ? holderOf(fd) : "";
    ::close(fd);
    if (err != EWOULDBLOCK)
      throw io::FileWriteError(
          fmt::format("{}: cannot lock the run directory ({})", file.string(), std::strerror(err)));
    throw RunDirectoryError(
        fmt::format("{} is in use by another training run: {} holds {} (two trainers on one "
                    "run directory would interleave metrics.jsonl and prune each other's "
                    "checkpoints); wait for it, stop it, or give another --out",
                    dir.string(), holder, file.string()));
  }
  try {
    recordHolder(fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
  return fd;
}

// What the directory holds besides the lock file and write probes (io::requireWritableDirectory).
std::vector<std::string> contents(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name != kRunLockFile && name.rfind(".helios-write-probe-", 0) != 0) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string listed(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 4; ++i)
    s += (i ? ", " : "") + names[i];
  return names.size() > 4 ? s + fmt::format(" and {} more", names.size() - 4) : s;
}

bool sameDirectory(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return !b.empty() && fs::equivalent(a, b, ec);
}

// The first free sibling name RUN.replaced-N.
fs::path asideName(const fs::path& dir) {
  const fs::path base =
      dir.lexically_normal().has_filename() ? dir.lexically_normal() : dir.lexically_normal().parent_path();
  for (int n = 1;; ++n) {
    fs::path p = base;
    p += fmt::format(".replaced-{}", n);
    if (!fs::exists(fs::symlink_status(p))) return p;
  }
}

void refuse(const fs::path& dir, RunStart start, const fs::path& resumedRun,
            const std::vector<std::string>& held) {
  if (start == RunStart::Resume)
    throw RunDirectoryError(fmt::format(
        "{} already holds files ({}) and is not the run directory of the checkpoint being resumed{}: give an "
        "empty or new --out, or --overwrite to move what it holds aside",
        dir.string(), listed(held), resumedRun.empty() ? "" : " (" + resumedRun.string() + ")"));
  throw RunDirectoryError(fmt::format(
      "{} already holds a run or other files ({}): a fresh run would overwrite metrics.jsonl and prune its "
      "checkpoints; --resume {} continues it, --overwrite moves it aside to {} and starts afresh, or give "
      "another --out",
      dir.string(), listed(held), dir.string(), asideName(dir).string()));
}

} // namespace

RunDirectory RunDirectory::claim(const fs::path& dir, RunStart start, const fs::path& resumedRun) {
  io::requireWritableDirectory(dir);
  RunDirectory owner(dir, lockOrRefuse(dir));
  const std::vector<std::string> held = contents(dir);
  if (held.empty()) return owner;
  if (start == RunStart::Resume && sameDirectory(dir, resumedRun)) return owner;
  if (start != RunStart::Overwrite) refuse(dir, start, resumedRun, held);
  if (sameDirectory(dir, resumedRun))
    throw RunDirectoryError(
        fmt::format("--overwrite would move aside {}, whose checkpoint --resume reads", dir.string()));
  // Moved whole while still locked (the lock file moves with it): no other trainer enters the old run.
  const fs::path aside = asideName(dir);
  std::error_code ec;
  fs::rename(dir, aside, ec);
  if (ec)
    throw io::FileWriteError(
        fmt::format("{}: cannot move it aside to {} ({})", dir.string(), aside.string(), ec.message()));
  RunDirectory fresh = claim(dir, RunStart::Fresh);
  fresh.movedAside_ = aside;
  return fresh;
}

RunDirectory::RunDirectory(RunDirectory&& o) noexcept
    : dir_(std::move(o.dir_)), movedAside_(std::move(o.movedAside_)), fd_(std::exchange(o.fd_, -1)) {}

RunDirectory& RunDirectory::operator=(RunDirectory&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    dir_ = std::move(o.dir_);
    movedAside_ = std::move(o.movedAside_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

RunDirectory::~RunDirectory() {
  if (fd_ >= 0) ::close(fd_);
}

} // namespace helios::train
