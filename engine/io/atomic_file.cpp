#include "engine/io/atomic_file.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace helios::io {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxLinks = 40; // as the kernel's ELOOP limit

const char* kindOf(fs::file_type t) {
  switch (t) {
  case fs::file_type::directory:
    return "a directory";
  case fs::file_type::block:
  case fs::file_type::character:
    return "a device";
  case fs::file_type::fifo:
    return "a FIFO";
  case fs::file_type::socket:
    return "a socket";
  default:
    return "not a regular file";
  }
}

std::string lastError() {
  return std::strerror(errno);
}

// A name no other writer uses at the same time: the target's name, the process id and a counter.
fs::path temporaryBeside(const fs::path& target) {
  static std::atomic<unsigned> counter{0};
  fs::path tmp = target;
  tmp += fmt::format(".partial-{}-{}", static_cast<long>(::getpid()), counter++);
  return tmp;
}

bool writeAll(int fd, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
  return true;
}

} // namespace

fs::path resolveOutputPath(const fs::path& path) {
  fs::path p = path;
  for (int hops = 0; hops <= kMaxLinks; ++hops) {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(p, ec);
    if (st.type() == fs::file_type::not_found) return p;
    if (ec)
      throw FileWriteError(
          fmt::format("{}: cannot inspect the output path ({})", path.string(), ec.message()));
    if (st.type() == fs::file_type::regular) return p;
    if (st.type() != fs::file_type::symlink)
      throw FileWriteError(fmt::format("{}: is {}; refusing to write over it (name a regular file)",
                                       path.string(), kindOf(st.type())));
    const fs::path target = fs::read_symlink(p);
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  throw FileWriteError(fmt::format("{}: too many levels of symbolic links", path.string()));
}

AtomicFileWriter::AtomicFileWriter(const fs::path& path)
    : path_(path), target_(resolveOutputPath(path)), tmp_(temporaryBeside(target_)) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0)
    throw FileWriteError(fmt::format("{}: cannot open for writing ({})", path.string(), lastError()));
  struct stat old {};
  if (::stat(target_.c_str(), &old) == 0) ::fchmod(fd_, old.st_mode & 07777);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(tmp_.c_str());
}

void AtomicFileWriter::append(std::span<const std::byte> bytes) {
  if (fd_ < 0) throw FileWriteError(fmt::format("{}: written after commit", path_.string()));
  if (!writeAll(fd_, bytes))
    throw FileWriteError(fmt::format("{}: write failed ({})", path_.string(), lastError()));
  size_ += bytes.size();
}

void AtomicFileWriter::writeAt(uint64_t offset, std::span<const std::byte> bytes) {
  if (fd_ < 0 || offset + bytes.size() > size_)
    throw FileWriteError(fmt::format("{}: a patch outside the bytes written", path_.string()));
  while (!bytes.empty()) {
    const ssize_t n = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw FileWriteError(fmt::format("{}: write failed ({})", path_.string(), lastError()));
    bytes = bytes.subspan(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
}

void AtomicFileWriter::commit() {
  const bool synced = ::fsync(fd_) == 0;
  const std::string why = synced ? "" : lastError();
  const bool closed = ::close(fd_) == 0;
  fd_ = -1;
  if (!closed || !synced) {
    ::unlink(tmp_.c_str());
    throw FileWriteError(fmt::format("{}: write failed ({})", path_.string(), synced ? lastError() : why));
  }
  if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
    const std::string reason = lastError();
    ::unlink(tmp_.c_str());
    throw FileWriteError(fmt::format("{}: cannot replace the file ({})", path_.string(), reason));
  }
  syncDirectory(target_.has_parent_path() ? target_.parent_path() : fs::path("."));
}

void writeFileAtomically(const fs::path& path, std::span<const std::byte> bytes) {
  AtomicFileWriter writer(path);
  writer.append(bytes);
  writer.commit();
}

void syncDirectory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    throw FileWriteError(fmt::format("{}: cannot open the directory ({})", dir.string(), lastError()));
  const bool synced = ::fsync(fd) == 0;
  const std::string why = synced ? "" : lastError();
  ::close(fd);
  if (!synced) throw FileWriteError(fmt::format("{}: fsync of the directory failed ({})", dir.string(), why));
}

void writeFileAtomically(const fs::path& path, std::string_view text) {
  writeFileAtomically(path, std::as_bytes(std::span<const char>(text.data(), text.size())));
}

void requireWritableDirectory(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw FileWriteError(
        fmt::format("{}: cannot create the output directory ({})", dir.string(), ec.message()));
  if (!fs::is_directory(dir))
    throw FileWriteError(fmt::format("{}: the output directory is not a directory", dir.string()));
  const fs::path probe = dir / fmt::format(".helios-write-probe-{}", static_cast<long>(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    throw FileWriteError(
        fmt::format("{}: the output directory is not writable ({})", dir.string(), lastError()));
  ::close(fd);
  ::unlink(probe.c_str());
}

} // namespace helios::io
