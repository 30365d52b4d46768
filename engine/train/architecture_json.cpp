#include "engine/train/architecture_json.hpp"

#include "engine/train/json_keys.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace helios::train {

using json_keys::readKey;

namespace {

nlohmann::json scalingToJson(const model::RopeScaling& s) {
  return {{"type", "llama3"},
          {"factor", s.factor},
          {"low_freq_factor", s.lowFreqFactor},
          {"high_freq_factor", s.highFreqFactor},
          {"original_context", s.originalContext}};
}

model::RopeScaling scalingFromJson(const nlohmann::json& j) {
  json_keys::refuseUnknown(j, {"type", "factor", "low_freq_factor", "high_freq_factor", "original_context"},
                           "gpt config rope_scaling");
  model::RopeScaling s;
  std::string type;
  readKey(j, "type", type);
  if (type != "llama3")
    throw std::invalid_argument(fmt::format("gpt config: rope_scaling type '{}' (llama3 only)", type));
  s.kind = model::RopeScalingKind::Llama3;
  readKey(j, "factor", s.factor);
  readKey(j, "low_freq_factor", s.lowFreqFactor);
  readKey(j, "high_freq_factor", s.highFreqFactor);
  readKey(j, "original_context", s.originalContext);
  return s;
}

} // namespace

const std::set<std::string>& architectureKeys() {
  static const std::set<std::string> keys = {"head_dim",   "hidden",       "bias",   "tied_head",
                                             "rope_theta", "rope_scaling", "family", "sliding_window"};
  return keys;
}

void architectureToJson(const model::GptConfig& c, nlohmann::json& j) {
  const model::GptConfig d;
  if (c.headDim != d.headDim) j["head_dim"] = c.headDim;
  if (c.hidden != d.hidden) j["hidden"] = c.hidden;
  if (c.bias != d.bias) j["bias"] = model::biasPlacementName(c.bias);
  if (c.tiedHead != d.tiedHead) j["tied_head"] = c.tiedHead;
  if (c.ropeTheta != d.ropeTheta) j["rope_theta"] = c.ropeTheta;
  if (c.ropeScaling.kind != model::RopeScalingKind::None) j["rope_scaling"] = scalingToJson(c.ropeScaling);
  if (c.slidingWindow != d.slidingWindow) j["sliding_window"] = c.slidingWindow;
  if (c.family != d.family) j["family"] = model::familyName(c.family);
}

void architectureFromJson(const nlohmann::json& j, model::GptConfig& c) {
  readKey(j, "head_dim", c.headDim);
  readKey(j, "hidden", c.hidden);
  readKey(j, "tied_head", c.tiedHead);
  readKey(j, "rope_theta", c.ropeTheta);
  readKey(j, "sliding_window", c.slidingWindow);
  json_keys::readEnum(j, "bias", model::kBiasPlacementNames, c.bias);
  json_keys::readEnum(j, "family", model::kFamilyNames, c.family);
  if (j.contains("rope_scaling")) c.ropeScaling = scalingFromJson(j.at("rope_scaling"));
}

} // namespace helios::train
