// JSON -> DeviceCaps: the fixture form and the `helios-probe --json` form, with errors that name the field.
#include "probe/json.hpp"

#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>

namespace helios::probe {

namespace {

using nlohmann::json;

std::string describe(const json& v) {
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return fmt::format("{} {}", v.type_name(), text);
}

// A JSON object being read, with its path ("properties[3]") for error messages.
class Obj {
public:
  Obj(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object())
      throw CapsFormatError(fmt::format("{}: expected an object, got {}", where(), describe(j_)));
  }

  bool has(const char* key) const { return j_.contains(key); }
  std::string field(const char* key) const { return path_.empty() ? key : path_ + "." + key; }
  [[noreturn]] void fail(const char* key, const std::string& msg) const {
    throw CapsFormatError(fmt::format("{}: {}", field(key), msg));
  }

  const json& need(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end()) fail(key, "missing");
    return *it;
  }

  uint32_t u32(const char* key) const { return toU32(key, need(key)); }
  uint32_t u32(const char* key, uint32_t fallback) const { return has(key) ? u32(key) : fallback; }

  std::string str(const char* key) const {
    const json& v = need(key);
    if (!v.is_string()) fail(key, "expected a string, got " + describe(v));
    return v.get<std::string>();
  }
  std::string str(const char* key, const std::string& fallback) const {
    return has(key) ? str(key) : fallback;
  }

  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& v = j_.at(key);
    if (!v.is_boolean()) fail(key, "expected true or false, got " + describe(v));
    return v.get<bool>();
  }

  const json& array(const char* key) const {
    const json& v = need(key);
    if (!v.is_array()) fail(key, "expected an array, got " + describe(v));
    return v;
  }

  // A number, or a string holding a decimal or 0x-prefixed hex number (vendor_id: "0x10de").
  uint32_t id(const char* key) const {
    const json& v = need(key);
    if (!v.is_string()) return toU32(key, v);
    const std::string s = v.get<std::string>();
    const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    std::size_t used = 0;
    unsigned long long n = 0;
    try {
      n = std::stoull(hex ? s.substr(2) : s, &used, hex ? 16 : 10);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != s.size() - (hex ? 2 : 0) || n > std::numeric_limits<uint32_t>::max())
      fail(key, fmt::format("expected a number such as \"0x10de\", got \"{}\"", s));
    return static_cast<uint32_t>(n);
  }

  std::string componentType(const char* key) const {
    std::string s = str(key);
    if (!isComponentTypeName(s))
      fail(key, fmt::format("unknown component type \"{}\" (expected float16, float32, bfloat16, uint8, "
                            "sint8, uint32, sint32, float64, ...)",
                            s));
    return s;
  }

  std::string scope(const char* key) const {
    std::string s = str(key);
    if (!isScopeName(s))
      fail(key, fmt::format("unknown scope \"{}\" (expected subgroup, workgroup, device or queuefamily)", s));
    return s;
  }

  // The first of `keys` present, or the first key when none is (so "missing" names the canonical one).
  const char* pick(std::initializer_list<const char*> keys) const {
    for (const char* k : keys)
      if (has(k)) return k;
    return *keys.begin();
  }

  std::string where() const { return path_.empty() ? "document" : path_; }

private:
  uint32_t toU32(const char* key, const json& v) const {
    if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
      fail(key, "expected a non-negative integer, got " + describe(v));
    const uint64_t n = v.get<uint64_t>();
    if (n > std::numeric_limits<uint32_t>::max()) fail(key, fmt::format("{} is too large", n));
    return static_cast<uint32_t>(n);
  }

  const json& j_;
  std::string path_;
};

std::string join(const std::string& base, const char* key, std::size_t index) {
  return fmt::format("{}{}{}[{}]", base, base.empty() ? "" : ".", key, index);
}

uint32_t positive(const Obj& o, const char* key) {
  uint32_t v = o.u32(key);
  if (v == 0) o.fail(key, "must be greater than 0");
  return v;
}

CoopMatrixProperty readCoop(const Obj& o) {
  CoopMatrixProperty p;
  p.M = positive(o, "M");
  p.N = positive(o, "N");
  p.K = positive(o, "K");
  p.A = o.componentType("A");
  p.B = o.componentType("B");
  p.C = o.componentType("C");
  p.Result = o.componentType("Result");
  p.saturating = o.boolean("saturating", false);
  p.scope = o.scope("scope");
  return p;
}

FlexibleDimensionsProperty readFlex(const Obj& o) {
  FlexibleDimensionsProperty p;
  p.MGranularity = positive(o, "MGranularity");
  p.NGranularity = positive(o, "NGranularity");
  p.KGranularity = positive(o, "KGranularity");
  p.A = o.componentType("A");
  p.B = o.componentType("B");
  p.C = o.componentType("C");
  p.Result = o.componentType("Result");
  p.saturatingAccumulation = o.boolean("saturatingAccumulation", false);
  p.scope = o.scope("scope");
  p.workgroupInvocations = o.u32("workgroupInvocations", 0);
  return p;
}

DeviceCaps readDevice(const json& doc, const std::string& path) {
  const Obj o(doc, path);
  DeviceCaps c;
  c.name = o.str(o.pick({"device", "name"}));
  c.vendor_id = o.id("vendor_id");
  if (o.has("device_id")) c.device_id = o.id("device_id");
  if (o.has("device_type") && !parseDeviceType(o.str("device_type"), c.type))
    o.fail("device_type", fmt::format("unknown device type \"{}\" (expected discrete-gpu, integrated-gpu, "
                                      "virtual-gpu, cpu or other)",
                                      o.str("device_type")));
  c.driver = o.str("driver", "");
  c.driver_name = o.str("driver_name", "");
  c.driver_info = o.str("driver_info", "");
  c.driver_version_raw = o.u32("driver_version_raw", 0);
  c.driver_version = o.str("driver_version", "");
  c.api_version = o.str("api_version", "");
  c.subgroup_size = o.u32("subgroup_size");
  c.min_subgroup_size = o.u32("min_subgroup_size", c.subgroup_size);
  c.max_subgroup_size = o.u32("max_subgroup_size", c.subgroup_size);
  c.max_compute_shared_memory = o.u32("max_compute_shared_memory_size", 0);
  if (o.has("max_workgroup_size")) {
    const json& a = o.array("max_workgroup_size");
    if (a.size() != 3) o.fail("max_workgroup_size", fmt::format("expected 3 numbers, got {}", a.size()));
    for (std::size_t i = 0; i < 3; ++i) {
      const std::string item = fmt::format("max_workgroup_size[{}]", i);
      if (!a[i].is_number_unsigned())
        throw CapsFormatError(fmt::format("{}: expected a non-negative integer, got {}",
                                          path.empty() ? item : path + "." + item, describe(a[i])));
      c.max_workgroup_size[i] = a[i].get<uint32_t>();
    }
  }
  c.max_workgroup_invocations = o.u32("max_workgroup_invocations", 0);
  c.shader_float16 = o.boolean("shader_float16", false);
  c.storage_buffer_16bit = o.boolean("storage_buffer_16bit", false);
  c.source = o.str("source", "");

  const char* coopKey = o.pick({"properties", "coop_khr"});
  const json& coop = o.array(coopKey);
  for (std::size_t i = 0; i < coop.size(); ++i)
    c.coop_khr.push_back(readCoop(Obj(coop[i], join(path, coopKey, i))));
  const char* flexKey = o.pick({"nv_flexible_dimensions", "coop_nv2"});
  if (o.has(flexKey)) {
    const json& flex = o.array(flexKey);
    for (std::size_t i = 0; i < flex.size(); ++i)
      c.coop_nv2.push_back(readFlex(Obj(flex[i], join(path, flexKey, i))));
  }

  if (o.has("coop_nv2_features")) { // captures before this field: all false
    const Obj f(o.need("coop_nv2_features"), o.field("coop_nv2_features"));
    c.coop_nv2_features = {true,
                           f.boolean("workgroup_scope", false),
                           f.boolean("flexible_dimensions", false),
                           f.boolean("reductions", false),
                           f.boolean("conversions", false),
                           f.boolean("per_element_operations", false),
                           f.boolean("tensor_addressing", false),
                           f.boolean("block_loads", false)};
  }

  if (o.has("shader_bfloat16")) { // captures before this field, or without VK_KHR_shader_bfloat16: all false
    const Obj f(o.need("shader_bfloat16"), o.field("shader_bfloat16"));
    c.shader_bfloat16 = {true, f.boolean("type", false), f.boolean("dot_product", false),
                         f.boolean("cooperative_matrix", false)};
  }

  if (o.has("shader_cores")) { // optional: captures before this field, or devices without the extensions
    const Obj sc(o.need("shader_cores"), o.field("shader_cores"));
    c.shader_cores = {
        sc.str("source", ""),        positive(sc, "compute_units"),   sc.u32("subgroups_per_unit", 0),
        sc.u32("shader_engines", 0), sc.u32("arrays_per_engine", 0),  sc.u32("units_per_array", 0),
        sc.u32("simd_per_unit", 0),  sc.u32("wavefronts_per_simd", 0)};
  }

  c.device_uuid = o.str("device_uuid", "");
  if (o.has("coop_self_test")) { // optional: --json output since the self-test; fixtures lack it
    const Obj t(o.need("coop_self_test"), o.field("coop_self_test"));
    const std::string status = t.str("status");
    if (status == "pass")
      c.coop_self_test.status = SelfTestStatus::Pass;
    else if (status == "fail")
      c.coop_self_test.status = SelfTestStatus::Fail;
    else if (status != "not run")
      t.fail("status", fmt::format("unknown status \"{}\" (expected pass, fail or not run)", status));
    c.coop_self_test.cached = t.boolean("cached", false);
    c.coop_self_test.failure = t.str("failure", "");
  }

  if (o.has("extensions")) {
    const json& exts = o.array("extensions");
    for (std::size_t i = 0; i < exts.size(); ++i) {
      if (!exts[i].is_string())
        throw CapsFormatError(
            fmt::format("{}: expected a string, got {}", join(path, "extensions", i), describe(exts[i])));
      c.extensions.push_back(exts[i].get<std::string>());
    }
  } else {
    // A capture without an extension list: the property lists imply their extensions.
    if (!c.coop_khr.empty()) c.extensions.emplace_back("VK_KHR_cooperative_matrix");
    if (!c.coop_nv2.empty()) c.extensions.emplace_back("VK_NV_cooperative_matrix2");
  }
  return c;
}

} // namespace

DeviceCaps capsFromFixtureJson(const json& doc) {
  return readDevice(doc, "");
}

std::vector<DeviceCaps> capsFromJson(const json& doc) {
  if (!doc.is_object() || !doc.contains("devices")) return {readDevice(doc, "")};
  const Obj top(doc, "");
  const json& list = top.array("devices");
  std::vector<DeviceCaps> out;
  for (std::size_t i = 0; i < list.size(); ++i)
    out.push_back(readDevice(list[i], join("", "devices", i)));
  return out;
}

std::vector<DeviceCaps> capsFromJsonText(const std::string& text) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    const std::size_t end = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    std::size_t line = 1, lineStart = 0;
    for (std::size_t i = 0; i < end; ++i)
      if (text[i] == '\n') ++line, lineStart = i + 1;
    std::string detail = e.what();
    if (auto col = detail.find("column "); col != std::string::npos)
      if (auto colon = detail.find(": ", col); colon != std::string::npos) detail = detail.substr(colon + 2);
    throw CapsFormatError(
        fmt::format("not valid JSON at line {}, column {}: {}", line, end - lineStart + 1, detail));
  }
  return capsFromJson(doc);
}

std::vector<DeviceCaps> loadCapsFile(const std::filesystem::path& path) {
  // A FIFO would block the read and a device never end it: only a regular file (or a missing path, which the
  // open below reports) is read.
  std::error_code ec;
  if (const auto st = std::filesystem::status(path, ec); std::filesystem::exists(st) && !is_regular_file(st))
    throw CapsFormatError(fmt::format("{}: not a regular file", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CapsFormatError(fmt::format("{}: cannot open the file", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return capsFromJsonText(text.str());
  } catch (const CapsFormatError& e) {
    throw CapsFormatError(fmt::format("{}: {}", path.string(), e.what()));
  }
}

} // namespace helios::probe
