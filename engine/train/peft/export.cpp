#include "engine/train/peft/export.hpp"

#include "engine/train/config.hpp"
#include "engine/train/durable_file.hpp"
#include "engine/train/lora_base.hpp"
#include "engine/train/peft/adapter_config.hpp"
#include "engine/train/peft/layout.hpp"
#include "engine/train/safetensors.hpp"

#include <fmt/format.h>

namespace helios::train::peft {

namespace fs = std::filesystem;

namespace {

nlohmann::json modelJson(const SafetensorsReader& r) {
  auto it = r.metadata().find("helios.model");
  nlohmann::json j =
      it == r.metadata().end() ? nlohmann::json() : nlohmann::json::parse(it->second, nullptr, false);
  if (!j.is_object()) throw CheckpointError(r.path().string() + ": no helios.model in __metadata__");
  return j;
}

// The rows [row, row + rows) of a [*, cols] parameter.
std::vector<float> rowsOf(const std::vector<float>& v, uint64_t row, const std::vector<uint64_t>& shape) {
  const uint64_t n = shape[0] * shape[1], at = row * shape[1];
  if (at + n > v.size()) throw CheckpointError("adapter rows lie past their parameter");
  return {v.begin() + std::ptrdiff_t(at), v.begin() + std::ptrdiff_t(at + n)};
}

} // namespace

std::vector<std::string> exportPeft(const fs::path& checkpointDir, const fs::path& outDir) {
  const fs::path src = checkpointDir / "model.safetensors";
  const SafetensorsReader reader(src);
  nlohmann::json arch = modelJson(reader);
  if (arch.value("kind", "") != "gpt")
    throw std::invalid_argument(
        fmt::format("{}: a {} model has no adapters", src.string(), arch.value("kind", "?")));
  const LoraBase base = arch.contains("lora_base") ? loraBaseFromJson(arch["lora_base"]) : LoraBase{};
  arch.erase("kind");
  arch.erase("lora_base");
  model::GptConfig c;
  fromJson(arch, c);
  if (const std::string why = peftIncompatibility(c); !why.empty())
    throw std::invalid_argument(fmt::format("{}: no PEFT adapter to write: {}", src.string(), why));
  const std::vector<AdapterTensor> map = adapterTensorMap(c);
  std::vector<TensorInfo> infos;
  for (const AdapterTensor& t : map)
    infos.push_back({t.peft, t.shape, StoredType::F32});
  const std::map<std::string, std::string> meta{{"format", "pt"},
                                                {"helios.lora_base", loraBaseToJson(base).dump()}};
  SafetensorsWriter writer(outDir / "adapter_model.safetensors", meta, infos);
  std::string cached;
  std::vector<float> values;
  for (const AdapterTensor& t : map) {
    if (t.helios != cached) {
      if (!reader.find(t.helios))
        throw CheckpointError(fmt::format("{}: adapter '{}' is missing", src.string(), t.helios));
      values = reader.read(t.helios);
      cached = t.helios;
    }
    writer.write(rowsOf(values, t.row, t.shape));
  }
  writer.commit();
  writeFileDurably(outDir / "adapter_config.json",
                   adapterConfigJson(c.lora, base.dir.string()).dump(2) + "\n");
  return {"adapter_config.json", "adapter_model.safetensors"};
}

} // namespace helios::train::peft
