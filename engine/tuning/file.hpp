#pragma once
// The tuning file: JSON holding a record's non-default fields and the key of the device and build it was
// measured on (vendor id, device id, driver version, HELIOS_KERNEL_VERSION). The device's own file lives in
// the cache directory beside the pipeline cache (tuningFilePath).
#include <filesystem>
#include <iosfwd>
#include <nlohmann/json.hpp>

#include "engine/tuning/tuning.hpp"

namespace helios::tuning {

// {"helios_tuning": 1, "key": {...}, "fields": {...}}: the fields whose source is not Default, or every
// field when `all`.
nlohmann::json toJson(const Tuning& t, bool all = false);
// Every field with its value and source: {"key": {...}, "fields": {name: {"value": v, "source": s}}}
// (helios-probe --tuning --json).
nlohmann::json reportJson(const Tuning& t);
// The same as text, one field a line: name, value, source.
std::string reportText(const Tuning& t);
// The key stored in a document; throws std::invalid_argument when it has none.
TuningKey keyOf(const nlohmann::json& doc);
// Sets every field present in `doc["fields"]` on `t` with `source`. Throws std::invalid_argument naming the
// field and the value it could not read; `t` is unchanged then.
void mergeJson(Tuning& t, const nlohmann::json& doc, Source source);

// <cacheDir>/tuning-<vendor>-<device>-<driver>-<kernel version>.json
std::filesystem::path tuningFilePath(const std::filesystem::path& cacheDir, const TuningKey& key);

// Merges `path` into `t` with `source` when it reads, parses and belongs to `t.key`; otherwise `t` keeps
// its values and `warn` gets one line saying why and that the defaults stay (a missing file only when
// `warnMissing`). Never throws for the file's contents. Returns whether the file was applied.
bool readTuningFile(Tuning& t, const std::filesystem::path& path, Source source, std::ostream& warn,
                    bool warnMissing);
// Writes toJson(t, all) atomically (engine/io/atomic_file.hpp), creating the directory.
void writeTuningFile(const std::filesystem::path& path, const Tuning& t, bool all = false);

} // namespace helios::tuning
