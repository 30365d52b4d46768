#include "engine/text/directory.hpp"

#include "engine/core/fnv1a.hpp"
#include "engine/text/load.hpp"

#include <fmt/format.h>

namespace helios::text {

std::vector<TokenizerFile> readTokenizerFiles(const std::filesystem::path& dir) {
  std::vector<TokenizerFile> files;
  for (const char* name : kTokenizerFileNames) {
    std::error_code ec;
    if (std::filesystem::exists(dir / name, ec)) files.push_back({name, readWholeFile(dir / name)});
  }
  return files;
}

std::string filesHash(const std::vector<TokenizerFile>& files) {
  uint64_t h = fnv1a64("");
  for (const auto& f : files)
    h = fnv1a64(f.bytes, fnv1a64(f.name + '\0', h));
  return fmt::format("{:016x}", h);
}

} // namespace helios::text
