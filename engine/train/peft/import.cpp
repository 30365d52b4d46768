#include "engine/train/peft/import.hpp"

#include "engine/train/config.hpp"
#include "engine/train/lora_base.hpp"
#include "engine/train/peft/layout.hpp"

#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <set>

namespace helios::train::peft {

namespace fs = std::filesystem;

Adapter openAdapter(const fs::path& dir) {
  Adapter a;
  a.dir = dir;
  a.config = readAdapterConfig(dir / "adapter_config.json");
  const fs::path file = dir / "adapter_model.safetensors";
  if (!fs::exists(file))
    throw CheckpointError(
        fmt::format("{}: missing (adapters saved as .bin are not read; PEFT writes safetensors "
                    "by default)",
                    file.string()));
  a.weights = std::make_shared<SafetensorsReader>(file, AcceptTypes::Floats);
  auto it = a.weights->metadata().find("helios.lora_base");
  if (it != a.weights->metadata().end()) {
    const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
    if (j.is_object()) a.baseHash = j.value("hash", "");
  }
  return a;
}

std::string adapterMismatch(const Adapter& adapter, const model::LoraConfig& lora,
                            const std::string& baseHash) {
  const model::LoraConfig& a = adapter.config.lora;
  const std::string where = (adapter.dir / "adapter_config.json").string();
  if (a.rank != lora.rank)
    return fmt::format("{}: the adapter has rank {}, the run asks for {}", where, a.rank, lora.rank);
  if (a.alpha != lora.alpha)
    return fmt::format("{}: the adapter has lora_alpha {}, the run asks for {}", where, a.alpha, lora.alpha);
  if (a.targets != lora.targets)
    return fmt::format("{}: the adapter targets {}, the run asks for {}", where,
                       model::formatLoraTargets(a.targets), model::formatLoraTargets(lora.targets));
  if (!adapter.baseHash.empty() && !baseHash.empty() && adapter.baseHash != baseHash)
    return fmt::format(
        "{}: the adapter was trained on a base whose files hash to {}, this base's hash to {} (a "
        "different or changed base)",
        adapter.weights->path().string(), adapter.baseHash, baseHash);
  return "";
}

void loadAdapter(vk::Context& ctx, Model& model, const Adapter& adapter) {
  nlohmann::json arch = model.configJson();
  arch.erase("kind");
  arch.erase("lora_base");
  model::GptConfig c;
  fromJson(arch, c);
  const std::vector<AdapterTensor> map = adapterTensorMap(c);
  const SafetensorsReader& file = *adapter.weights;
  const fs::path& path = file.path();
  std::set<std::string> wanted;
  for (const AdapterTensor& t : map) {
    wanted.insert(t.peft);
    const TensorInfo* info = file.find(t.peft);
    if (!info)
      throw CheckpointError(
          fmt::format("{}: tensor '{}' is missing (the run's targets need it)", path.string(), t.peft));
    if (info->shape != t.shape)
      throw CheckpointError(
          fmt::format("{}: tensor '{}' has shape {}, this base needs {} (an adapter of another "
                      "base?)",
                      path.string(), t.peft, shapeString(info->shape), shapeString(t.shape)));
  }
  for (const TensorInfo& t : file.tensors())
    if (!wanted.count(t.name))
      throw CheckpointError(
          fmt::format("{}: tensor '{}' is not an adapter of this model's targets", path.string(), t.name));
  for (model::Parameter& p : model.parameters()) {
    std::vector<float> values(p.elements);
    const uint64_t cols = p.shape[1];
    for (const AdapterTensor& t : map) {
      if (t.helios != p.name) continue;
      const std::vector<float> v = file.read(t.peft);
      for (size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(v[i]))
          throw CheckpointError(fmt::format("{}: tensor '{}' holds a non-finite value at element {}",
                                            path.string(), t.peft, i));
      std::memcpy(values.data() + t.row * cols, v.data(), v.size() * 4);
    }
    ctx.uploadVector(p.data, values);
  }
}

} // namespace helios::train::peft
