#include "engine/io/mapped_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace helios::io {

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error(fmt::format("{}: cannot open ({})", path.string(), std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = errno;
    ::close(fd);
    throw std::runtime_error(
        fmt::format("{}: not a readable regular file ({})", path.string(), std::strerror(err)));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    map_ = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    const int err = errno;
    ::close(fd);
    if (map_ == MAP_FAILED) {
      map_ = nullptr;
      throw std::runtime_error(fmt::format("{}: mmap failed ({})", path.string(), std::strerror(err)));
    }
    ::madvise(map_, size_, MADV_SEQUENTIAL);
  } else {
    ::close(fd);
  }
}

MappedFile::~MappedFile() {
  if (map_) ::munmap(map_, size_);
}

} // namespace helios::io
