#pragma once
// Edits a safetensors file the way a damaged or tampered one would look: its JSON header changed by `edit`
// (written back at the same length, padded with spaces, so the data offsets stay valid) and, optionally, its
// tensor bytes changed by `editData`.
#include "support/files.hpp"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace helios::test {

inline void editSafetensors(const std::filesystem::path& file,
                            const std::function<void(nlohmann::json&)>& edit,
                            const std::function<void(std::string&)>& editData = {}) {
  const std::string raw = slurp(file);
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  nlohmann::json header = nlohmann::json::parse(raw.substr(8, n));
  edit(header);
  std::string json = header.dump();
  if (json.size() > n)
    throw std::logic_error("editSafetensors: the edited header is longer than the original");
  json.append(n - json.size(), ' ');
  std::string data = raw.substr(8 + n);
  if (editData) editData(data);
  spit(file, raw.substr(0, 8) + json + data);
}

} // namespace helios::test
