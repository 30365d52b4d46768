#include "engine/tuning/file.hpp"

#include <fmt/format.h>
#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "engine/io/atomic_file.hpp"
#include "engine/io/input_file.hpp"
#include "engine/tuning/values.hpp"

namespace helios::tuning {

namespace {

using nlohmann::json;

constexpr int kFormat = 1;

// ---- values to JSON
json put(bool v) {
  return v;
}
json put(uint32_t v) {
  return v;
}
json put(uint64_t v) {
  return v;
}
json put(double v) {
  return v;
}
json put(const MatShape& v) {
  return text(v);
}
json put(const CoopTile& v) {
  return text(v);
}
json put(const SharedPad& v) {
  return text(v);
}
json put(CoopMode v) {
  return name(v);
}
json put(BoundedMode v) {
  return name(v);
}
json put(DeltaMode v) {
  return name(v);
}
template <class T> json put(const std::optional<T>& v) {
  return v ? put(*v) : json(nullptr);
}

json put(const GemmChoice& c) {
  json j{{"shape", text(c.shape)}, {"kernel", name(c.kernel)}};
  if (c.tile) j["tile"] = text(*c.tile);
  if (c.groupM) j["groupM"] = *c.groupM;
  if (c.kSlices) j["kSlices"] = *c.kSlices;
  if (c.pad) j["pad"] = text(*c.pad);
  if (c.stagedStore) j["stagedStore"] = *c.stagedStore;
  if (c.producers) j["producers"] = *c.producers;
  if (c.coop2) j["coop2"] = *c.coop2;
  if (c.unroll) j["unroll"] = *c.unroll;
  if (c.tensorLayouts) j["tensorLayouts"] = *c.tensorLayouts;
  if (c.tiled) j["tiled"] = *c.tiled;
  return j;
}

json put(const AttentionChoice& c) {
  json j{{"pass", name(c.pass)}, {"headDim", c.headDim}, {"causal", c.causal}};
  if (c.tile) j["tile"] = *c.tile;
  if (c.subgroups) j["subgroups"] = *c.subgroups;
  if (c.prefetch) j["prefetch"] = *c.prefetch;
  if (c.pad) j["pad"] = *c.pad;
  return j;
}

template <class T> json put(const std::vector<T>& v) {
  json a = json::array();
  for (const T& e : v)
    a.push_back(put(e));
  return a;
}

// ---- JSON to values (each throws std::invalid_argument naming `what`)
[[noreturn]] void wrongType(const std::string& what, const json& j, const char* expected) {
  throw std::invalid_argument(what + "=" + j.dump() + ": expected " + expected);
}
std::string str(const std::string& what, const json& j) {
  if (!j.is_string()) wrongType(what, j, "a string");
  return j.get<std::string>();
}
void get(const std::string& what, const json& j, bool& v) {
  if (!j.is_boolean()) wrongType(what, j, "true or false");
  v = j.get<bool>();
}
void get(const std::string& what, const json& j, uint32_t& v) {
  if (!j.is_number_unsigned() || j.get<uint64_t>() > 0xffffffffu) wrongType(what, j, "a whole number");
  v = j.get<uint32_t>();
}
void get(const std::string& what, const json& j, uint64_t& v) {
  if (!j.is_number_unsigned()) wrongType(what, j, "a whole number");
  v = j.get<uint64_t>();
}
void get(const std::string& what, const json& j, double& v) {
  if (!j.is_number() || j.get<double>() < 0) wrongType(what, j, "a number >= 0");
  v = j.get<double>();
}
void get(const std::string& what, const json& j, MatShape& v) {
  v = parseMatShape(what, str(what, j));
}
void get(const std::string& what, const json& j, CoopTile& v) {
  v = parseCoopTile(what, str(what, j));
}
void get(const std::string& what, const json& j, SharedPad& v) {
  v = parseSharedPad(what, str(what, j));
}
void get(const std::string& what, const json& j, CoopMode& v) {
  v = parseCoopMode(what, str(what, j));
}
void get(const std::string& what, const json& j, BoundedMode& v) {
  v = parseBoundedMode(what, str(what, j));
}
void get(const std::string& what, const json& j, DeltaMode& v) {
  v = parseDeltaMode(what, str(what, j));
}
void get(const std::string& what, const json& j, std::string& v) {
  v = str(what, j);
}
template <class T> void get(const std::string& what, const json& j, std::optional<T>& v) {
  if (j.is_null()) {
    v.reset();
    return;
  }
  T x{};
  get(what, j, x);
  v = x;
}
// An optional member of an entry object.
template <class T> void member(const std::string& what, const json& j, const char* key, std::optional<T>& v) {
  if (j.contains(key)) get(what + "." + key, j.at(key), v);
}

void get(const std::string& what, const json& j, GemmChoice& c) {
  if (!j.is_object() || !j.contains("shape")) wrongType(what, j, "an object with a shape");
  c.shape = parseGemmShape(what + ".shape", str(what, j.at("shape")));
  if (j.contains("kernel")) c.kernel = parseGemmKernel(what + ".kernel", str(what, j.at("kernel")));
  member(what, j, "tile", c.tile);
  member(what, j, "groupM", c.groupM);
  member(what, j, "kSlices", c.kSlices);
  member(what, j, "pad", c.pad);
  member(what, j, "stagedStore", c.stagedStore);
  member(what, j, "producers", c.producers);
  member(what, j, "coop2", c.coop2);
  member(what, j, "unroll", c.unroll);
  member(what, j, "tensorLayouts", c.tensorLayouts);
  member(what, j, "tiled", c.tiled);
}

void get(const std::string& what, const json& j, AttentionChoice& c) {
  if (!j.is_object() || !j.contains("pass") || !j.contains("headDim"))
    wrongType(what, j, "an object with a pass and a headDim");
  c.pass = parseAttentionPass(what + ".pass", str(what, j.at("pass")));
  get(what + ".headDim", j.at("headDim"), c.headDim);
  if (j.contains("causal")) get(what + ".causal", j.at("causal"), c.causal);
  member(what, j, "tile", c.tile);
  member(what, j, "subgroups", c.subgroups);
  member(what, j, "prefetch", c.prefetch);
  member(what, j, "pad", c.pad);
}

template <class T> void get(const std::string& what, const json& j, std::vector<T>& v) {
  if (!j.is_array()) wrongType(what, j, "an array");
  v.clear();
  for (size_t i = 0; i < j.size(); ++i) {
    T e{};
    get(what + "[" + std::to_string(i) + "]", j[i], e);
    v.push_back(std::move(e));
  }
}

std::string describe(const TuningKey& k) {
  return fmt::format("vendor {:04x} device {:04x} driver {:#x} kernels {}", k.vendorId, k.deviceId,
                     k.driverVersion, k.kernelVersion);
}

} // namespace

json toJson(const Tuning& t, bool all) {
  json fields = json::object();
  forEachField(t, [&](const char* n, const auto& f) {
    if (all || f.source != Source::Default) fields[n] = put(f.value);
  });
  return {{"helios_tuning", kFormat},
          {"key",
           {{"vendor_id", t.key.vendorId},
            {"device_id", t.key.deviceId},
            {"driver_version", t.key.driverVersion},
            {"kernel_version", t.key.kernelVersion}}},
          {"fields", fields}};
}

json reportJson(const Tuning& t) {
  json fields = json::object();
  forEachField(t, [&](const char* n, const auto& f) {
    fields[n] = {{"value", put(f.value)}, {"source", sourceName(f.source)}};
  });
  json doc = toJson(t, false);
  doc["fields"] = fields;
  return doc;
}

std::string reportText(const Tuning& t) {
  std::string out = "tuning record for " + describe(t.key) + "\n";
  forEachField(t, [&](const char* n, const auto& f) {
    const json v = put(f.value);
    std::string value = v.is_string() ? v.get<std::string>() : v.is_null() ? "-" : v.dump();
    if (v.is_array()) value = std::to_string(v.size()) + " entries";
    out += fmt::format("  {:<28} {:<24} {}\n", n, value, sourceName(f.source));
    if (v.is_array())
      for (const json& e : v)
        out += "      " + e.dump() + "\n";
  });
  return out;
}

TuningKey keyOf(const json& doc) {
  if (!doc.is_object() || !doc.contains("key") || !doc.at("key").is_object())
    throw std::invalid_argument("no \"key\" object");
  const json& k = doc.at("key");
  TuningKey key;
  get("key.vendor_id", k.value("vendor_id", json()), key.vendorId);
  get("key.device_id", k.value("device_id", json()), key.deviceId);
  get("key.driver_version", k.value("driver_version", json()), key.driverVersion);
  key.kernelVersion = str("key.kernel_version", k.value("kernel_version", json()));
  return key;
}

void mergeJson(Tuning& t, const json& doc, Source source) {
  if (!doc.is_object() || doc.value("helios_tuning", 0) != kFormat)
    throw std::invalid_argument("not a Helios tuning file of format " + std::to_string(kFormat));
  const json fields = doc.value("fields", json::object());
  if (!fields.is_object()) throw std::invalid_argument("\"fields\" is not an object");
  for (const auto& [n, v] : fields.items()) {
    bool known = false;
    forEachField(t, [&](const char* fn, const auto&) { known = known || n == fn; });
    if (!known) throw std::invalid_argument("unknown field \"" + n + "\"");
  }
  Tuning next = t; // all or nothing
  forEachField(next, [&](const char* n, auto& f) {
    if (!fields.contains(n)) return;
    auto v = f.value;
    get(n, fields.at(n), v);
    f.set(std::move(v), source);
  });
  t = std::move(next);
}

std::filesystem::path tuningFilePath(const std::filesystem::path& cacheDir, const TuningKey& key) {
  return cacheDir / fmt::format("tuning-{:04x}-{:04x}-{:08x}-{}.json", key.vendorId, key.deviceId,
                                key.driverVersion, key.kernelVersion);
}

bool readTuningFile(Tuning& t, const std::filesystem::path& path, Source source, std::ostream& warn,
                    bool warnMissing) {
  const auto fallBack = [&](const std::string& why) {
    warn << "helios: tuning file " << path.string() << " " << why << "; the defaults stay\n";
    return false;
  };
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return warnMissing ? fallBack("does not exist") : false;
  if (const auto kind = io::fileKind(path); kind != "a regular file")
    return fallBack(fmt::format("is not a regular file (it is {})", kind));
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return fallBack("cannot be read");
  const json doc = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return fallBack("is not valid JSON");
  try {
    const TuningKey key = keyOf(doc);
    if (key != t.key)
      return fallBack("was measured on another device, driver or kernel version (" + describe(key) +
                      "; this is " + describe(t.key) + ")");
    mergeJson(t, doc, source);
  } catch (const std::exception& e) {
    return fallBack(std::string("is malformed: ") + e.what());
  }
  return true;
}

void writeTuningFile(const std::filesystem::path& path, const Tuning& t, bool all) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  io::writeFileAtomically(path, toJson(t, all).dump(2) + "\n");
}

} // namespace helios::tuning
