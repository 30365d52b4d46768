#include "engine/train/lora_json.hpp"

#include "engine/train/json_keys.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace helios::train {

namespace {

// Floats as their shortest decimal form, so that they read back as the same bits.
double shortest(float v) {
  return std::stod(fmt::format("{}", v));
}

} // namespace

nlohmann::json loraToJson(const model::LoraConfig& c) {
  return {{"rank", c.rank},
          {"alpha", shortest(c.alpha)},
          {"dropout", shortest(c.dropout)},
          {"targets", model::formatLoraTargets(c.targets)},
          {"base_dtype", codegen::elemName(c.base)}};
}

model::LoraConfig loraFromJson(const nlohmann::json& j) {
  json_keys::refuseUnknown(j, {"rank", "alpha", "dropout", "targets", "base_dtype"}, "gpt config lora");
  model::LoraConfig c;
  json_keys::readKey(j, "rank", c.rank);
  json_keys::readKey(j, "alpha", c.alpha);
  json_keys::readKey(j, "dropout", c.dropout);
  std::string s;
  if (j.contains("targets")) {
    json_keys::readKey(j, "targets", s);
    c.targets = model::parseLoraTargets(s);
  }
  if (j.contains("base_dtype")) {
    json_keys::readKey(j, "base_dtype", s);
    c.base = codegen::parseElem(s, "gpt config lora: base_dtype");
  }
  if (const std::string e = model::loraConfigError(c); !e.empty())
    throw std::invalid_argument("gpt config lora: " + e);
  return c;
}

} // namespace helios::train
