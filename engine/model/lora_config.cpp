#include "engine/model/lora_config.hpp"

#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace helios::model {

const char* loraTargetName(LoraTarget t) {
  switch (t) {
  case LoraTarget::Q:
    return "q";
  case LoraTarget::K:
    return "k";
  case LoraTarget::V:
    return "v";
  case LoraTarget::O:
    return "o";
  case LoraTarget::Gate:
    return "gate";
  case LoraTarget::Up:
    return "up";
  case LoraTarget::Down:
    return "down";
  }
  return "?";
}

const char* peftModuleName(LoraTarget t) {
  switch (t) {
  case LoraTarget::Q:
    return "q_proj";
  case LoraTarget::K:
    return "k_proj";
  case LoraTarget::V:
    return "v_proj";
  case LoraTarget::O:
    return "o_proj";
  case LoraTarget::Gate:
    return "gate_proj";
  case LoraTarget::Up:
    return "up_proj";
  case LoraTarget::Down:
    return "down_proj";
  }
  return "?";
}

std::optional<LoraTarget> parseLoraTarget(const std::string& name) {
  for (LoraTarget t : kLoraTargets)
    if (name == loraTargetName(t) || name == peftModuleName(t)) return t;
  return std::nullopt;
}

std::string formatLoraTargets(LoraTargets s) {
  std::string out;
  for (LoraTarget t : kLoraTargets)
    if (s.has(t)) out += (out.empty() ? "" : ",") + std::string(loraTargetName(t));
  return out;
}

LoraTargets parseLoraTargets(const std::string& list) {
  LoraTargets s;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t end = std::min(list.find(',', at), list.size());
    const std::string name = list.substr(at, end - at);
    const auto t = parseLoraTarget(name);
    if (!t)
      throw std::invalid_argument(
          fmt::format("LoRA target '{}' is none of q, k, v, o, gate, up, down (or PEFT's "
                      "q_proj ... down_proj)",
                      name));
    if (s.has(*t)) throw std::invalid_argument(fmt::format("LoRA target '{}' is named twice", name));
    s.add(*t);
    at = end + 1;
  }
  return s;
}

std::string loraConfigError(const LoraConfig& c) {
  if (!c.enabled()) return "";
  if (!std::isfinite(c.alpha) || c.alpha <= 0) return fmt::format("LoRA alpha {} must be above 0", c.alpha);
  if (!std::isfinite(c.dropout) || c.dropout < 0 || c.dropout >= 1)
    return fmt::format("LoRA dropout {} is outside [0, 1)", c.dropout);
  if (c.targets.empty()) return "LoRA needs at least one target projection";
  return "";
}

} // namespace helios::model
