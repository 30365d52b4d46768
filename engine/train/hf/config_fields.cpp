#include "engine/train/hf/config_fields.hpp"

#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace helios::train::hf {

void Fields::refuse(const char* key, const std::string& why) const {
  throw std::invalid_argument(fmt::format("{}: field '{}' {}", file_, key, why));
}

uint32_t Fields::count(const char* key, uint64_t lo, uint64_t hi) const {
  if (!has(key)) refuse(key, "is missing (required)");
  const nlohmann::json& v = cfg_[key];
  const bool whole = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  if (!whole || v.get<uint64_t>() < lo || v.get<uint64_t>() > hi)
    refuse(key, fmt::format("is {}: expected a whole number in [{}, {}]", v.dump(), lo, hi));
  return static_cast<uint32_t>(v.get<uint64_t>());
}

uint32_t Fields::count(const char* key, uint32_t fallback, uint64_t lo, uint64_t hi) const {
  return has(key) ? count(key, lo, hi) : fallback;
}

double Fields::number(const char* key, double fallback, double lo, double hi) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = cfg_[key];
  const double d = v.is_number() ? v.get<double>() : NAN;
  if (!std::isfinite(d) || !(d > lo) || d > hi)
    refuse(key, fmt::format("is {}: expected a number in ({}, {}]", v.dump(), lo, hi));
  return d;
}

bool Fields::flag(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  if (!cfg_[key].is_boolean()) refuse(key, fmt::format("is {}: expected true or false", cfg_[key].dump()));
  return cfg_[key].get<bool>();
}

std::string Fields::text(const char* key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  if (!cfg_[key].is_string()) refuse(key, fmt::format("is {}: expected a string", cfg_[key].dump()));
  return cfg_[key].get<std::string>();
}

} // namespace helios::train::hf
