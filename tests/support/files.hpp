#pragma once
// Whole-file reads and writes for tests that build or inspect files byte for byte.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace helios::test {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

inline void spit(const std::filesystem::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << s;
}

} // namespace helios::test
