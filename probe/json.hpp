#pragma once
// DeviceCaps <-> JSON. Writes the `helios-probe --json` form ({"devices":[...]}); reads that form and the
// captured-fixture form of tests/fixtures/coopmat/*.json (one device: "device", "properties",
// "nv_flexible_dimensions", ...).
#include "probe/caps.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

namespace helios::probe {

// A file or document that cannot be read as device capabilities. what() names the field and entry index,
// e.g. "properties[3].K: missing".
class CapsFormatError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

nlohmann::json toJson(const DeviceCaps& caps);
nlohmann::json toJson(const std::vector<DeviceCaps>& devices);

// One device in the fixture form (also accepts one element of the --json "devices" array).
DeviceCaps capsFromFixtureJson(const nlohmann::json& doc);

// Either form: {"devices":[...]} gives every device, a fixture gives one.
std::vector<DeviceCaps> capsFromJson(const nlohmann::json& doc);

// Parses `text` (errors: "not valid JSON at line 4, column 7: ...") and then capsFromJson.
std::vector<DeviceCaps> capsFromJsonText(const std::string& text);

// Reads a file; errors are prefixed with its path.
std::vector<DeviceCaps> loadCapsFile(const std::filesystem::path& path);

} // namespace helios::probe
