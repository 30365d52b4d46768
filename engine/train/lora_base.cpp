#include "engine/train/lora_base.hpp"

#include "engine/io/mapped_file.hpp"
#include "engine/train/config.hpp"
#include "engine/train/crc32c.hpp"
#include "engine/train/hf/import.hpp"
#include "engine/train/hf/tensor_map.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <set>

namespace helios::train {

namespace fs = std::filesystem;

nlohmann::json loraBaseToJson(const LoraBase& b) {
  if (b.dir.empty()) return {{"seed", b.seed}};
  return {{"path", b.dir.string()}, {"hash", b.hash}};
}

LoraBase loraBaseFromJson(const nlohmann::json& j) {
  LoraBase b;
  try {
    if (j.contains("seed")) {
      b.seed = j.at("seed").get<uint64_t>();
      return b;
    }
    b.dir = j.at("path").get<std::string>();
    b.hash = j.value("hash", "");
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(fmt::format("lora_base {}: neither {{\"seed\": N}} nor {{\"path\": DIR, "
                                            "\"hash\": ...}}",
                                            j.dump()));
  }
  return b;
}

std::string hashHfDirectory(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() &&
        (name == "config.json" || name.ends_with(".safetensors") || name == "model.safetensors.index.json"))
      files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::string key = fs::absolute(dir).string(); // what the files looked like: a cached hash is theirs
  for (const fs::path& f : files)
    key += fmt::format("|{}:{}:{}", f.filename().string(), fs::file_size(f),
                       fs::last_write_time(f).time_since_epoch().count());
  static std::mutex mutex;
  static std::map<std::string, std::string> known;
  const std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(key); it != known.end()) return it->second;
  uint32_t crc = 0;
  for (const fs::path& f : files) {
    const io::MappedFile mapped(f);
    const std::string head = fmt::format("{}:{}:", f.filename().string(), mapped.size());
    crc = crc32c(std::as_bytes(std::span<const char>(head)), crc);
    crc = crc32c(mapped.bytes(), crc);
  }
  return known[key] = fmt::format("crc32c:{:08x}", crc);
}

void verifyLoraBase(LoraBase& base) {
  if (base.dir.empty()) return;
  const std::string hash = hashHfDirectory(base.dir);
  if (!base.hash.empty() && hash != base.hash)
    throw CheckpointError(
        fmt::format("{}: the LoRA base changed since the adapters were trained on it (its "
                    "files hash to {}, the checkpoint records {}); restore that base or start "
                    "new adapters",
                    base.dir.string(), hash, base.hash));
  base.hash = hash;
}

namespace {

// The directory's model must be the one gpt was built as (its architecture fields; how it computes aside).
void checkArchitecture(const hf::Import& im, const model::GptConfig& c) {
  const nlohmann::json want = toJson(c), have = toJson(model::withArchitectureOf(c, im.config));
  if (want == have) return;
  std::string diff;
  for (const auto& [k, v] : want.items())
    if (have.value(k, nlohmann::json()) != v)
      diff += fmt::format("{}{} {} (the adapters') vs {} (the directory's)", diff.empty() ? "" : ", ", k,
                          v.dump(), have.value(k, nlohmann::json()).dump());
  throw CheckpointError(fmt::format("{}: the LoRA base's architecture differs from the adapters' model: {}",
                                    im.dir.string(), diff));
}

} // namespace

void loadLoraBase(vk::Context& ctx, model::Gpt& gpt, LoraBase& base) {
  if (base.dir.empty()) return;
#if !HELIOS_TRAIN_HAVE_GPT
  (void)ctx;
  (void)gpt;
  throw std::runtime_error("this build has no GPT model");
#else
  verifyLoraBase(base);
  const hf::Import im = hf::openImport(base.dir);
  checkArchitecture(im, gpt.config());
  std::set<std::string> mapped;
  for (const hf::MappedTensor& m : hf::tensorMap(im.config))
    mapped.insert(m.helios);
  for (const model::FrozenTensor& f : gpt.frozen()) {
    if (!mapped.count(f.name))
      throw CheckpointError(fmt::format("{}: no tensor fills the base's '{}'", base.dir.string(), f.name));
    const hf::Assembled a = hf::assemble(im, f.name);
    if (a.values.size() != f.elements)
      throw CheckpointError(fmt::format("{}: the tensors for '{}' hold {} values, the model's has {}",
                                        base.dir.string(), f.name, a.values.size(), f.elements));
    model::FrozenStore::upload(ctx, f, a.values);
  }
#endif
}

} // namespace helios::train
