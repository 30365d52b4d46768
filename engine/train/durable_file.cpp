#include "engine/train/durable_file.hpp"

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdexcept>
#include <thread>
#include <unistd.h>
#include <utility>

namespace helios::train {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const char* what, const fs::path& path) {
  throw std::runtime_error(fmt::format("{}: {} failed: {}", path.string(), what, std::strerror(errno)));
}

class Fd {
public:
  Fd(const fs::path& path, int flags, mode_t mode = 0) : fd_(::open(path.c_str(), flags | O_CLOEXEC, mode)) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

private:
  int fd_;
};

void writeAll(int fd, std::string_view bytes, const fs::path& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write", path);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

} // namespace

void writeFileDurably(const fs::path& path, std::string_view bytes) {
  fs::path tmp = path;
  tmp += ".partial";
  {
    // A fresh file, never through whatever an earlier crash or someone else left under the temporary name
    // (a symlink there must not redirect the write).
    if (::unlink(tmp.c_str()) != 0 && errno != ENOENT) fail("remove the stale temporary file", tmp);
    Fd fd(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
    if (fd.get() < 0) fail("open for writing", tmp);
    const size_t half = bytes.size() / 2;
    writeAll(fd.get(), bytes.substr(0, half), tmp);
    savePause(); // a crash test's kill may land here: a torn temporary file
    writeAll(fd.get(), bytes.substr(half), tmp);
    if (::fsync(fd.get()) != 0) fail("fsync", tmp);
    if (::close(fd.release()) != 0) fail("close", tmp);
  }
  savePause();
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    throw std::runtime_error(
        fmt::format("{}: rename from {} failed: {}", path.string(), tmp.string(), ec.message()));
  syncDirectory(path.has_parent_path() ? path.parent_path() : fs::path("."));
}

void syncDirectory(const fs::path& dir) {
  Fd fd(dir, O_RDONLY | O_DIRECTORY);
  if (fd.get() < 0) fail("open directory", dir);
  if (::fsync(fd.get()) != 0) fail("fsync directory", dir);
}

std::optional<uint32_t> parseSavePauseMs(const char* text) {
  if (!text) return std::nullopt;
  const std::string_view s(text);
  uint32_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v > 10000)
    throw std::invalid_argument(
        fmt::format("HELIOS_TEST_SAVE_PAUSE_MS='{}': expected milliseconds, an integer 0..10000", s));
  return v;
}

void savePause() {
  static const std::optional<uint32_t> ms = parseSavePauseMs(std::getenv("HELIOS_TEST_SAVE_PAUSE_MS"));
  if (ms && *ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(*ms));
}

} // namespace helios::train
