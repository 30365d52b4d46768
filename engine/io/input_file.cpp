#include "engine/io/input_file.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

namespace helios::io {

std::string_view fileKind(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "missing";
  if (S_ISREG(st.st_mode)) return "a regular file";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISFIFO(st.st_mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  return "not a regular file";
}

void requireRegularFile(const std::filesystem::path& path, std::string_view what) {
  const std::string_view kind = fileKind(path);
  if (kind == "missing" || kind == "a regular file") return;
  throw InputFileError(fmt::format("{}: the {} is not a regular file (it is {})", path.string(), what, kind));
}

} // namespace helios::io
