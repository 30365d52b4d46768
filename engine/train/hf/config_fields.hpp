#pragma once
// Internal to engine/train/hf: reading config.json's fields with the file and the field named in every
// refusal. Required fields throw when missing or null; optional ones take the given default.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace helios::train::hf {

class Fields {
public:
  Fields(const nlohmann::json& cfg, std::string file) : cfg_(cfg), file_(std::move(file)) {}
  bool has(const char* key) const { return cfg_.contains(key) && !cfg_[key].is_null(); }
  bool present(const char* key) const { return cfg_.contains(key); } // null included
  const nlohmann::json& raw(const char* key) const { return cfg_[key]; }
  // A whole number in [lo, hi]; the default when absent (required when no default is given).
  uint32_t count(const char* key, uint64_t lo, uint64_t hi) const;
  uint32_t count(const char* key, uint32_t fallback, uint64_t lo, uint64_t hi) const;
  // A finite number in (lo, hi] (lo excluded: positive quantities).
  double number(const char* key, double fallback, double lo, double hi) const;
  bool flag(const char* key, bool fallback) const;
  std::string text(const char* key, const std::string& fallback) const;
  [[noreturn]] void refuse(const char* key, const std::string& why) const;
  const std::string& file() const { return file_; }

private:
  const nlohmann::json& cfg_;
  std::string file_;
};

} // namespace helios::train::hf
