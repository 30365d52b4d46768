#include "engine/train/hf/export.hpp"

#include "engine/train/checkpoint.hpp"
#include "engine/train/config.hpp"
#include "engine/train/durable_file.hpp"
#include "engine/train/hf/shards.hpp"
#include "engine/train/hf/tensor_map.hpp"
#include "engine/train/lora_merge.hpp"

#include <cmath>
#include <fmt/format.h>
#include <list>
#include <optional>

namespace helios::train::hf {

namespace fs = std::filesystem;

namespace {

// The checkpoint's parameters as the packed-QKV map names them (separate q, k, v stacked into attn.qkv),
// f32 and finite; the last two parameters read are kept (q, k, v and their biases alternate).
class Source {
public:
  // merge: a LoRA checkpoint's base plus its adapters instead of the checkpoint's own parameters.
  Source(const fs::path& file, const model::GptConfig& c, const LoraMerge* merge = nullptr)
      : reader_(openCheckpointFile(file)), config_(c), merge_(merge) {}
  const SafetensorsReader& reader() const { return reader_; }

  const std::vector<float>& values(const std::string& name) {
    for (const auto& [n, v] : cache_)
      if (n == name) return v;
    if (cache_.size() == 2) cache_.pop_front();
    cache_.emplace_back(name, load(name));
    return cache_.back().second;
  }

private:
  std::vector<float> load(const std::string& name) const {
    if (merge_) return merge_->values(name);
    const size_t at = name.find(".attn.qkv.");
    if (config_.packedQkv || at == std::string::npos) return finite(name);
    std::vector<float> out;
    for (const char* part : {".attn.q.", ".attn.k.", ".attn.v."}) {
      const std::vector<float> v = finite(name.substr(0, at) + part + name.substr(at + 10));
      out.insert(out.end(), v.begin(), v.end());
    }
    return out;
  }

  std::vector<float> finite(const std::string& name) const {
    if (!reader_.find(name))
      throw CheckpointError(fmt::format("{}: tensor '{}' is missing", reader_.path().string(), name));
    std::vector<float> v = reader_.read(name);
    for (size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i]))
        throw CheckpointError(fmt::format("{}: tensor '{}' holds a non-finite value at element {}",
                                          reader_.path().string(), name, i));
    return v;
  }

  SafetensorsReader reader_;
  model::GptConfig config_;
  const LoraMerge* merge_;
  std::list<std::pair<std::string, std::vector<float>>> cache_;
};

// One Hugging Face tensor's values out of its Helios parameter.
std::vector<float> extract(const MappedTensor& m, const std::vector<float>& param) {
  if (m.transpose) { // Helios [out, in] -> Conv1D [in, out]
    const uint64_t in = m.shape[0], out = m.shape[1];
    std::vector<float> t(param.size());
    for (uint64_t r = 0; r < out; ++r)
      for (uint64_t c = 0; c < in; ++c)
        t[c * out + r] = param[r * in + c];
    return t;
  }
  uint64_t elements = 1;
  for (uint64_t d : m.shape)
    elements *= d;
  const uint64_t rowElements = m.shape.size() > 1 ? elements / m.shape[0] : 1;
  const auto begin = param.begin() + static_cast<std::ptrdiff_t>(m.row * rowElements);
  if (m.row * rowElements + elements > param.size())
    throw CheckpointError(fmt::format("tensor '{}': rows past its parameter '{}'", m.hf, m.helios));
  return {begin, begin + static_cast<std::ptrdiff_t>(elements)};
}

std::map<std::string, std::string> exportMetadata(const SafetensorsReader& src, const model::GptConfig& c) {
  std::map<std::string, std::string> meta{{"format", "pt"}, {"helios.model", toJson(c).dump()}};
  if (auto it = src.metadata().find("helios.tokenizer"); it != src.metadata().end())
    meta["helios.tokenizer"] = it->second;
  return meta;
}

} // namespace

model::GptConfig exportableArchitecture(const fs::path& checkpointDir) {
  const fs::path src = checkpointDir / "model.safetensors";
  const SafetensorsReader reader = openCheckpointFile(src); // checksums required
  auto it = reader.metadata().find("helios.model");
  nlohmann::json arch =
      it == reader.metadata().end() ? nlohmann::json() : nlohmann::json::parse(it->second, nullptr, false);
  if (!arch.is_object()) throw CheckpointError(src.string() + ": no helios.model in __metadata__");
  if (arch.value("kind", "") != "gpt")
    throw std::invalid_argument(
        fmt::format("{}: a {} model has no Hugging Face form", src.string(), arch.value("kind", "?")));
  arch.erase("kind");
  arch.erase("lora_base");
  model::GptConfig c;
  fromJson(arch, c);
  if (const std::string why = exportIncompatibility(c); !why.empty())
    throw std::invalid_argument(fmt::format("{}: cannot export as Hugging Face {} ({}): {}", src.string(),
                                            architectureName(c.family), model::familyName(c.family), why));
  return c;
}

std::vector<std::string> exportHf(const fs::path& checkpointDir, const fs::path& outDir,
                                  const ExportOptions& o) {
  model::GptConfig c = exportableArchitecture(checkpointDir);
  std::optional<LoraMerge> merge;
  if (c.lora.enabled() && !o.merge)
    throw std::invalid_argument(
        fmt::format("{}: a LoRA checkpoint holds adapters only: --format peft writes them as "
                    "a PEFT adapter, --merge writes base + adapters as a plain model",
                    checkpointDir.string()));
  if (!c.lora.enabled() && o.merge)
    throw std::invalid_argument(
        fmt::format("{}: --merge: the checkpoint has no LoRA adapters to merge (it was "
                    "trained in full)",
                    checkpointDir.string()));
  if (o.merge) {
    merge.emplace(checkpointDir, c, loraBaseFromJson(checkpointModelConfig(checkpointDir).at("lora_base")));
    c.lora = {}; // the merged model is a plain one
  }
  Source source(checkpointDir / "model.safetensors", c, merge ? &*merge : nullptr);
  const std::vector<MappedTensor> map = tensorMap(c);
  std::vector<uint64_t> bytes;
  std::vector<std::string> names;
  for (const MappedTensor& m : map) {
    names.push_back(m.hf);
    bytes.push_back(TensorInfo{m.hf, m.shape, o.dtype}.bytes());
  }
  const ShardPlan plan = planShards(bytes, o.maxShardBytes);
  const std::map<std::string, std::string> meta = exportMetadata(source.reader(), c);
  std::vector<std::string> written{"config.json"};
  writeFileDurably(outDir / "config.json", hfConfig(c, o.dtype, o.ids).dump(2) + "\n");
  for (size_t f = 0; f < plan.files.size(); ++f) {
    std::vector<TensorInfo> infos;
    for (size_t i = 0; i < map.size(); ++i)
      if (plan.fileOf[i] == f) infos.push_back({map[i].hf, map[i].shape, o.dtype});
    SafetensorsWriter writer(outDir / plan.files[f], meta, infos);
    for (size_t i = 0; i < map.size(); ++i)
      if (plan.fileOf[i] == f) writer.write(extract(map[i], source.values(map[i].helios)));
    writer.commit();
    written.push_back(plan.files[f]);
  }
  if (plan.files.size() > 1) {
    writeFileDurably(outDir / "model.safetensors.index.json", shardIndex(plan, names).dump(2) + "\n");
    written.push_back("model.safetensors.index.json");
  }
  return written;
}

} // namespace helios::train::hf
