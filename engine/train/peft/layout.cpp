#include "engine/train/peft/layout.hpp"

#include "engine/model/lora_sites.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace helios::train::peft {

namespace {

std::string modulePath(uint32_t layer, model::LoraTarget t) {
  const bool attention = t == model::LoraTarget::Q || t == model::LoraTarget::K ||
                         t == model::LoraTarget::V || t == model::LoraTarget::O;
  return fmt::format("base_model.model.model.layers.{}.{}.{}", layer, attention ? "self_attn" : "mlp",
                     model::peftModuleName(t));
}

} // namespace

std::string peftIncompatibility(const model::GptConfig& c) {
  if (!c.lora.enabled()) return "the model has no LoRA adapters (it was trained in full)";
  if (c.family == model::Family::Gpt2)
    return "PEFT adapts GPT-2's q, k and v as one Conv1D module (c_attn) and Helios trains them separately; "
           "write the merged model instead (export --format hf --merge)";
  return "";
}

std::vector<AdapterTensor> adapterTensorMap(const model::GptConfig& c) {
  if (const std::string why = peftIncompatibility(c); !why.empty()) throw std::invalid_argument(why);
  const uint64_t r = c.lora.rank;
  std::vector<AdapterTensor> map;
  for (uint32_t l = 0; l < c.layers; ++l)
    for (const model::LoraSite& s : model::loraSites(c))
      for (size_t p = 0; p < s.parts.size(); ++p) {
        const model::LoraPart& part = s.parts[p];
        const std::string module = modulePath(l, part.target);
        map.push_back({module + ".lora_A.weight", {r, s.in}, model::loraParamName(l, s, 'A'), p * r});
        map.push_back(
            {module + ".lora_B.weight", {part.rows, r}, model::loraParamName(l, s, 'B'), part.bRow});
      }
  return map;
}

} // namespace helios::train::peft
