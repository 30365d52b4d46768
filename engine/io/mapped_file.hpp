#pragma once
// A whole file mapped read-only (mmap), for reading large files piece by piece without copying them into
// memory first: the pages come from the page cache as they are touched. Errors throw std::runtime_error
// naming the file.
#include <cstddef>
#include <filesystem>
#include <span>

namespace helios::io {

class MappedFile {
public:
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(map_), size_}; }
  size_t size() const { return size_; }

private:
  std::filesystem::path path_;
  void* map_ = nullptr;
  size_t size_ = 0;
};

} // namespace helios::io
