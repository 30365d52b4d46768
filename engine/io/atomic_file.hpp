#pragma once
// Safe output files. Every writer in Helios goes through writeFileAtomically(): the bytes go to a fresh
// temporary file beside the final target and are renamed over it, so a reader sees the old file or the new
// one, never half of one, and a failure leaves nothing behind. The file and its directory are flushed to the
// disk (fsync) before it returns, so the new file also survives a crash or a power loss. A symlink is written
// through (its target is replaced, the link stays); a directory, device, FIFO or socket is refused before
// anything is written.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string_view>

namespace helios::io {

class FileWriteError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The regular file that writing `path` replaces: `path` itself, or the end of its chain of symlinks. Throws
// FileWriteError when that is a directory, device, FIFO or socket, or the chain loops.
std::filesystem::path resolveOutputPath(const std::filesystem::path& path);

// The same, written in pieces: the bytes go to the temporary as they come (appended, or patched at an
// offset already written), and commit() fsyncs it and renames it over the target. Destroyed uncommitted, it
// removes the temporary: the target is never touched.
class AtomicFileWriter {
public:
  explicit AtomicFileWriter(const std::filesystem::path& path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  void append(std::span<const std::byte> bytes);
  void writeAt(uint64_t offset, std::span<const std::byte> bytes); // within what was appended
  uint64_t size() const { return size_; }
  void commit();

private:
  std::filesystem::path path_, target_, tmp_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Replaces (or creates) the file at resolveOutputPath(path) with `bytes`; an existing file keeps its mode.
void writeFileAtomically(const std::filesystem::path& path, std::span<const std::byte> bytes);
void writeFileAtomically(const std::filesystem::path& path, std::string_view text);

// fsync of a directory: its entries (created, renamed, removed files) reach the disk.
void syncDirectory(const std::filesystem::path& dir);

// Creates `dir` when missing, then writes and removes a probe file in it: a run directory that cannot be
// written is found before any work is done. Throws FileWriteError naming the directory and the reason.
void requireWritableDirectory(const std::filesystem::path& dir);

} // namespace helios::io
