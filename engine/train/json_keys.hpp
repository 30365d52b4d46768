#pragma once
// Reading configuration keys from JSON with the checks every config file gets: counts must be whole numbers
// >= 0 that fit (nlohmann would wrap -5 and truncate 2.5 or 1e10), other values must convert, and objects
// name no key the reader does not know. Errors are std::invalid_argument naming the key.
#include "engine/core/enum_names.hpp"

#include <nlohmann/json.hpp>

#include <fmt/format.h>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace helios::train::json_keys {

template <class T> void requireCount(const nlohmann::json& v, const char* key) {
  if (!v.is_number_unsigned() || v.get<uint64_t>() > std::numeric_limits<T>::max())
    throw std::invalid_argument(fmt::format("config key '{}': {} is not a whole number in [0, {}]", key,
                                            v.dump(), std::numeric_limits<T>::max()));
}

// Reads j[key] into `out` when present (otherwise `out` stays as it is).
template <class T> void readKey(const nlohmann::json& j, const char* key, T& out) {
  if (!j.contains(key)) return;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) requireCount<T>(j.at(key), key);
  try {
    out = j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(
        fmt::format("config key '{}': {} is not a valid value", key, j.at(key).dump()));
  }
}

// Reads j[key], one of `table`'s names, into `out` when present; a name the table does not hold is refused
// with the key and the accepted spellings.
template <class E, size_t N>
void readEnum(const nlohmann::json& j, const char* key, const EnumName<E> (&table)[N], E& out) {
  if (!j.contains(key)) return;
  std::string name;
  readKey(j, key, name);
  out = parseEnum(table, name, key);
}

inline void refuseUnknown(const nlohmann::json& j, const std::set<std::string>& known, const char* where) {
  if (!j.is_object()) throw std::invalid_argument(fmt::format("{} must be a JSON object", where));
  for (const auto& [k, v] : j.items())
    if (!known.count(k)) throw std::invalid_argument(fmt::format("{}: unknown key '{}'", where, k));
}

} // namespace helios::train::json_keys
