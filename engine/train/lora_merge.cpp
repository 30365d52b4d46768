#include "engine/train/lora_merge.hpp"

#include "engine/model/lora_sites.hpp"

#include <fmt/format.h>

namespace helios::train {

namespace fs = std::filesystem;

namespace {

hf::Import openBase(const LoraBase& base) {
  if (base.dir.empty())
    throw std::invalid_argument(
        "the LoRA base is Helios' seeded initialisation, not a directory: there is no base "
        "to merge into (train LoRA over an --init-from directory to export merged)");
  LoraBase checked = base;
  verifyLoraBase(checked);
  return hf::openImport(base.dir);
}

} // namespace

LoraMerge::LoraMerge(const fs::path& checkpointDir, const model::GptConfig& c, const LoraBase& base)
    : base_(openBase(base)), adapters_(checkpointDir / "model.safetensors"), config_(c) {}

std::vector<float> LoraMerge::values(const std::string& name) const {
  hf::Assembled w = hf::assemble(base_, name);
  const size_t dot = name.find('.', name.find('.') + 1); // "blocks.N." ends here
  if (!name.starts_with("blocks.") || !name.ends_with(".weight") || dot == std::string::npos) return w.values;
  const uint32_t layer = static_cast<uint32_t>(std::stoul(name.substr(7, dot - 7)));
  const std::string site = name.substr(dot + 1, name.size() - dot - 1 - 7);
  for (const model::LoraSite& s : model::loraSites(config_)) {
    if (s.base != site) continue;
    const std::vector<float> A = adapters_.read(model::loraParamName(layer, s, 'A'));
    const std::vector<float> B = adapters_.read(model::loraParamName(layer, s, 'B'));
    const uint32_t r = config_.lora.rank;
    const double scale = double(config_.lora.alpha) / double(r);
    for (size_t p = 0; p < s.parts.size(); ++p) {
      const model::LoraPart& part = s.parts[p];
      for (uint32_t o = 0; o < part.rows; ++o)
        for (uint32_t i = 0; i < s.in; ++i) {
          double delta = 0;
          for (uint32_t j = 0; j < r; ++j)
            delta += double(B[size_t(part.bRow + o) * r + j]) * double(A[(p * r + j) * s.in + i]);
          float& x = w.values[size_t(part.row + o) * s.in + i];
          x = static_cast<float>(double(x) + scale * delta);
        }
    }
  }
  return w.values;
}

} // namespace helios::train
