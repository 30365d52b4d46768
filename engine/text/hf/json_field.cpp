#include "engine/text/hf/json_field.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace helios::text::hf {

Field Field::operator[](std::string_view key) const {
  return {file_, path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key)};
}

Field Field::operator[](size_t index) const {
  return {file_, fmt::format("{}[{}]", path_, index)};
}

void Field::fail(std::string_view what) const {
  if (path_.empty()) throw std::invalid_argument(fmt::format("{}: {}", file_, what));
  throw std::invalid_argument(fmt::format("{}: {}: {}", file_, path_, what));
}

nlohmann::json parseJson(std::string_view bytes, const std::string& file) {
  try {
    return nlohmann::json::parse(bytes);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(fmt::format("{}: not valid JSON at byte {} ({})", file, e.byte, e.what()));
  }
}

const nlohmann::json& member(const nlohmann::json& object, const char* key, const Field& at) {
  static const nlohmann::json null;
  if (!object.is_object()) at.fail(fmt::format("expected an object, found {}", object.type_name()));
  const auto it = object.find(key);
  return it == object.end() ? null : *it;
}

const nlohmann::json& required(const nlohmann::json& object, const char* key, const Field& at) {
  const nlohmann::json& v = member(object, key, at);
  if (v.is_null()) at[key].fail("missing");
  return v;
}

std::string asString(const nlohmann::json& v, const Field& at) {
  if (!v.is_string()) at.fail(fmt::format("expected a string, found {}", v.type_name()));
  return v.get<std::string>();
}

bool asBool(const nlohmann::json& v, const Field& at) {
  if (!v.is_boolean()) at.fail(fmt::format("expected true or false, found {}", v.type_name()));
  return v.get<bool>();
}

int64_t asInt(const nlohmann::json& v, const Field& at) {
  if (!v.is_number_integer()) at.fail(fmt::format("expected an integer, found {}", v.dump()));
  return v.get<int64_t>();
}

int32_t asId(const nlohmann::json& v, const Field& at) {
  const int64_t id = asInt(v, at);
  if (id < 0 || id >= kMaxTokenId) at.fail(fmt::format("id {} is out of range [0, {})", id, kMaxTokenId));
  return static_cast<int32_t>(id);
}

void forEachIn(const nlohmann::json& object, const char* key, const Field& at,
               const std::function<void(const nlohmann::json&, const Field&)>& each) {
  const nlohmann::json& list = required(object, key, at);
  if (!list.is_array()) at[key].fail("expected a list");
  for (size_t i = 0; i < list.size(); ++i)
    each(list[i], at[key][i]);
}

std::optional<std::string> optString(const nlohmann::json& object, const char* key, const Field& at) {
  const nlohmann::json& v = member(object, key, at);
  if (v.is_null()) return std::nullopt;
  return asString(v, at[key]);
}

bool optBool(const nlohmann::json& object, const char* key, bool fallback, const Field& at) {
  const nlohmann::json& v = member(object, key, at);
  return v.is_null() ? fallback : asBool(v, at[key]);
}

} // namespace helios::text::hf
