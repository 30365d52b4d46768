#include "engine/train/peft/adapter_config.hpp"

#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <stdexcept>

namespace helios::train::peft {

namespace {

// lora_alpha: a whole number as an integer (PEFT types it int), else its shortest decimal form.
nlohmann::ordered_json alphaJson(float v) {
  if (std::floor(v) == v && std::fabs(v) < 1e9f) return static_cast<int64_t>(v);
  return std::stod(fmt::format("{}", v));
}

} // namespace

nlohmann::ordered_json adapterConfigJson(const model::LoraConfig& c, const std::string& baseModel) {
  nlohmann::ordered_json targets = nlohmann::ordered_json::array();
  for (model::LoraTarget t : model::kLoraTargets)
    if (c.targets.has(t)) targets.push_back(model::peftModuleName(t));
  nlohmann::ordered_json j;
  j["alpha_pattern"] = nlohmann::ordered_json::object();
  j["auto_mapping"] = nullptr;
  j["base_model_name_or_path"] = baseModel;
  j["bias"] = "none";
  j["exclude_modules"] = nullptr;
  j["fan_in_fan_out"] = false;
  j["inference_mode"] = true;
  j["init_lora_weights"] = true;
  j["layer_replication"] = nullptr;
  j["layers_pattern"] = nullptr;
  j["layers_to_transform"] = nullptr;
  j["loftq_config"] = nlohmann::ordered_json::object();
  j["lora_alpha"] = alphaJson(c.alpha);
  j["lora_bias"] = false;
  j["lora_dropout"] = std::stod(fmt::format("{}", c.dropout)); // a float, as PEFT writes it
  j["megatron_config"] = nullptr;
  j["megatron_core"] = "megatron.core";
  j["modules_to_save"] = nullptr;
  j["peft_type"] = "LORA";
  j["r"] = c.rank;
  j["rank_pattern"] = nlohmann::ordered_json::object();
  j["revision"] = nullptr;
  j["target_modules"] = targets;
  j["task_type"] = "CAUSAL_LM";
  j["use_dora"] = false;
  j["use_rslora"] = false;
  return j;
}

AdapterConfig parseAdapterConfig(const nlohmann::json& j, const std::filesystem::path& path) {
  const auto fail = [&](const std::string& key, const std::string& why) {
    return std::invalid_argument(fmt::format("{}: {}: {}", path.string(), key, why));
  };
  if (!j.is_object()) throw fail("(top level)", "not a JSON object");
  if (j.value("peft_type", "") != "LORA")
    throw fail("peft_type", fmt::format("{} is not LORA", j.value("peft_type", nlohmann::json()).dump()));
  const auto absentOr = [&](const char* key, const nlohmann::json& neutral, const char* why) {
    if (j.contains(key) && !j.at(key).is_null() && j.at(key) != neutral)
      throw fail(key, fmt::format("{} ({})", j.at(key).dump(), why));
  };
  absentOr("use_dora", false, "DoRA's magnitude vectors are not LoRA; Helios trains plain LoRA");
  absentOr("use_rslora", false, "rsLoRA scales by alpha / sqrt(r); Helios scales by alpha / r");
  absentOr("fan_in_fan_out", false, "weights stored [in, out] are GPT-2's Conv1D layout");
  absentOr("bias", "none", "Helios trains no biases in LoRA");
  absentOr("lora_bias", false, "Helios trains no biases in LoRA");
  absentOr("layers_to_transform", nullptr, "Helios adapts every layer");
  absentOr("modules_to_save", nullptr, "Helios trains only the adapters");
  absentOr("rank_pattern", nlohmann::json::object(), "Helios uses one rank for every module");
  absentOr("alpha_pattern", nlohmann::json::object(), "Helios uses one alpha for every module");
  AdapterConfig a;
  try {
    a.lora.rank = j.at("r").get<uint32_t>();
    a.lora.alpha = j.at("lora_alpha").get<float>();
    a.lora.dropout = j.value("lora_dropout", 0.0f);
  } catch (const nlohmann::json::exception& e) {
    throw fail("r / lora_alpha / lora_dropout", fmt::format("missing or not a number ({})", e.what()));
  }
  if (a.lora.rank == 0) throw fail("r", "0: a LoRA rank is at least 1");
  const nlohmann::json& targets = j.value("target_modules", nlohmann::json());
  a.lora.targets = {};
  if (targets == "all-linear") {
    a.lora.targets = model::LoraTargets::all();
  } else if (targets.is_array() && !targets.empty()) {
    for (const auto& t : targets) {
      const auto target = t.is_string() ? model::parseLoraTarget(t.get<std::string>()) : std::nullopt;
      if (!target)
        throw fail("target_modules", fmt::format("{} is none of q_proj, k_proj, v_proj, o_proj, gate_proj, "
                                                 "up_proj, down_proj",
                                                 t.dump()));
      a.lora.targets.add(*target);
    }
  } else {
    throw fail("target_modules", fmt::format("{} (a list of module names, or \"all-linear\"; regular "
                                             "expressions are not read)",
                                             targets.dump()));
  }
  if (const std::string e = model::loraConfigError(a.lora); !e.empty())
    throw fail("lora_alpha / lora_dropout", e);
  const nlohmann::json& base = j.value("base_model_name_or_path", nlohmann::json());
  if (base.is_string()) a.baseModel = base.get<std::string>();
  return a;
}

AdapterConfig readAdapterConfig(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in)
    throw std::invalid_argument(
        fmt::format("{}: cannot open (not a PEFT adapter directory?)", path.string()));
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw std::invalid_argument(fmt::format("{}: not valid JSON", path.string()));
  return parseAdapterConfig(j, path);
}

} // namespace helios::train::peft
