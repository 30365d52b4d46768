#include "engine/train/checkpoint.hpp"

#include "engine/train/durable_file.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mutex>
#include <set>

namespace helios::train {

namespace fs = std::filesystem;

namespace {

std::vector<uint64_t> shapeOf(const model::Parameter& p) {
  return std::vector<uint64_t>(p.shape.begin(), p.shape.end());
}

std::vector<float> download(vk::Context& ctx, const vk::BufferSlice& b, uint32_t n) {
  std::vector<float> v(n);
  ctx.download(b, std::as_writable_bytes(std::span<float>(v)));
  return v;
}

void upload(vk::Context& ctx, const vk::BufferSlice& b, const std::vector<float>& v) {
  ctx.upload(b, std::as_bytes(std::span<const float>(v)));
}

// The first NaN or infinity of a tensor, named; nothing when every value is finite.
void refuseNonFinite(const SafeTensor& t, const fs::path& path) {
  for (size_t i = 0; i < t.data.size(); ++i)
    if (!std::isfinite(t.data[i]))
      throw CheckpointError(fmt::format("{}: tensor '{}' holds {} at element {}: refusing a checkpoint with "
                                        "non-finite values",
                                        path.string(), t.name, std::isnan(t.data[i]) ? "NaN" : "an infinity",
                                        i));
}

uint64_t stepOf(const SafeTensorsFile& f, const fs::path& path) {
  auto it = f.metadata.find("helios.step");
  if (it == f.metadata.end())
    throw CheckpointError(
        fmt::format("{}: no helios.step in __metadata__: not a Helios checkpoint", path.string()));
  try {
    return std::stoull(it->second);
  } catch (const std::exception&) {
    throw CheckpointError(fmt::format("{}: helios.step '{}' is not a number", path.string(), it->second));
  }
}

nlohmann::json metadataJson(const SafeTensorsFile& f, const char* key, const fs::path& path) {
  auto it = f.metadata.find(key);
  if (it == f.metadata.end())
    throw CheckpointError(
        fmt::format("{}: no {} in __metadata__: not a Helios checkpoint", path.string(), key));
  try {
    return nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(fmt::format("{}: {} is not valid JSON ({})", path.string(), key, e.what()));
  }
}

// Every tensor of `f` named in `expected` with its shape, nothing more.
void checkTensors(const SafeTensorsFile& f, const fs::path& path,
                  const std::vector<std::pair<std::string, std::vector<uint64_t>>>& expected) {
  for (const auto& [name, shape] : expected) {
    const SafeTensor* t = f.find(name);
    if (!t) throw CheckpointError(fmt::format("{}: tensor '{}' is missing", path.string(), name));
    if (t->shape != shape)
      throw CheckpointError(fmt::format("{}: tensor '{}' has shape {}, the model expects {}", path.string(),
                                        name, shapeString(t->shape), shapeString(shape)));
  }
  if (f.tensors.size() != expected.size()) {
    for (const auto& t : f.tensors) {
      bool known = false;
      for (const auto& e : expected)
        known = known || e.first == t.name;
      if (!known)
        throw CheckpointError(
            fmt::format("{}: tensor '{}' is not a parameter of this model", path.string(), t.name));
    }
  }
}

} // namespace

void requireChecksums(const SafeTensorsFile& f, const fs::path& path) {
  if (!f.checksummed)
    throw CheckpointError(fmt::format(
        "{}: no tensor checksums ({}): written by a Helios before checkpoints carried them (the old layout "
        "kept model.safetensors at the top of the run directory), or the entry was removed; this version "
        "does not load such files",
        path.string(), "helios.crc32c"));
  if (f.sealed) return;
  static std::mutex mutex;
  static std::set<std::string> warned;
  const std::lock_guard lock(mutex);
  if (warned.insert(path.string()).second)
    std::fprintf(
        stderr,
        "helios: warning: %s: no helios.seal (written by a Helios before checkpoints sealed their "
        "checksum map): its tensors are checked, but two swapped together with their checksum entries "
        "would not be noticed; the next save of this run seals it\n",
        path.string().c_str());
}

SafeTensorsFile readCheckpointFile(const fs::path& path, bool headerOnly) {
  SafeTensorsFile f = readSafetensors(path, headerOnly);
  requireChecksums(f, path);
  return f;
}

void saveCheckpoint(vk::Context& ctx, const fs::path& dir, Model& model, uint64_t step,
                    const nlohmann::json& trainerState,
                    const std::vector<text::TokenizerFile>& tokenizerFiles) {
  fs::create_directories(dir);
  for (const auto& f : tokenizerFiles)
    writeFileDurably(dir / f.name, f.bytes);
  const std::string stepText = std::to_string(step);
  if (!trainerState.is_null()) {
    SafeTensorsFile opt;
    opt.metadata = {{"format", "pt"}, {"helios.step", stepText}, {"helios.trainer", trainerState.dump()}};
    for (auto& p : model.parameters()) {
      opt.tensors.push_back({p.name + ".m", shapeOf(p), download(ctx, p.m, p.elements)});
      opt.tensors.push_back({p.name + ".v", shapeOf(p), download(ctx, p.v, p.elements)});
    }
    writeSafetensors(dir / "optimizer.safetensors", opt);
  }
  SafeTensorsFile weights;
  weights.metadata = {
      {"format", "pt"}, {"helios.step", stepText}, {"helios.model", model.configJson().dump()}};
  if (!trainerState.is_null() && trainerState.contains("tokenizer"))
    weights.metadata["helios.tokenizer"] = trainerState["tokenizer"].dump();
  for (auto& p : model.parameters())
    weights.tensors.push_back({p.name, shapeOf(p), download(ctx, p.data, p.elements)});
  writeSafetensors(dir / "model.safetensors", weights);
  nlohmann::json human{{"step", step}, {"model", model.configJson()}};
  if (!trainerState.is_null() && trainerState.contains("config")) human["train"] = trainerState["config"];
  writeFileDurably(dir / "config.json", human.dump(2) + "\n");
}

nlohmann::json checkpointModelConfig(const fs::path& dir) {
  const fs::path path = dir / "model.safetensors";
  return metadataJson(readCheckpointFile(path, true), "helios.model", path);
}

nlohmann::json checkpointTokenizer(const fs::path& dir) {
  const fs::path path = dir / "model.safetensors";
  return metadataJson(readCheckpointFile(path, true), "helios.tokenizer", path);
}

Tokenizer loadCheckpointTokenizer(const fs::path& dir) {
  const nlohmann::json description = checkpointTokenizer(dir);
  try {
    return Tokenizer::fromJson(description, dir);
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(fmt::format("{}: its tokenizer: {}", dir.string(), e.what()));
  }
}

nlohmann::json checkpointTrainerState(const fs::path& dir) {
  const fs::path path = dir / "optimizer.safetensors";
  return metadataJson(readCheckpointFile(path, true), "helios.trainer", path);
}

nlohmann::json loadCheckpoint(vk::Context& ctx, const fs::path& dir, Model& model, bool withOptimizer) {
  const fs::path wpath = dir / "model.safetensors";
  const SafeTensorsFile weights = readCheckpointFile(wpath);
  nlohmann::json arch = metadataJson(weights, "helios.model", wpath);
  nlohmann::json mine = model.configJson();
  // How the model computes (precision, activation recomputation) may change between runs; its shape may not.
  for (const char* free : {"precision", "checkpoint_activations", "fused_casts", "f16_logits", "f16_grads",
                           "packed_attention", "f16_hidden"}) {
    arch.erase(free);
    mine.erase(free);
  }
  if (arch.value("kind", "") != mine.value("kind", ""))
    throw CheckpointError(fmt::format("{}: the checkpoint holds a {} model, this run builds a {} model",
                                      wpath.string(), arch.value("kind", "?"), mine.value("kind", "?")));
  if (arch != mine) {
    std::string diff;
    for (const auto& [k, v] : mine.items())
      if (!arch.contains(k) || arch[k] != v)
        diff += fmt::format("{}{} {} (checkpoint) vs {} (model)", diff.empty() ? "" : ", ", k,
                            arch.contains(k) ? arch[k].dump() : "missing", v.dump());
    throw CheckpointError(fmt::format("{}: the checkpoint's architecture differs from the model's: {}",
                                      wpath.string(), diff.empty() ? arch.dump() : diff));
  }
  std::vector<std::pair<std::string, std::vector<uint64_t>>> expected, expectedOpt;
  for (auto& p : model.parameters()) {
    expected.emplace_back(p.name, shapeOf(p));
    expectedOpt.emplace_back(p.name + ".m", shapeOf(p));
    expectedOpt.emplace_back(p.name + ".v", shapeOf(p));
  }
  checkTensors(weights, wpath, expected);
  for (const auto& t : weights.tensors)
    refuseNonFinite(t, wpath);
  nlohmann::json state;
  if (withOptimizer) {
    const fs::path opath = dir / "optimizer.safetensors";
    const SafeTensorsFile opt = readCheckpointFile(opath);
    checkTensors(opt, opath, expectedOpt);
    for (const auto& t : opt.tensors)
      refuseNonFinite(t, opath);
    const uint64_t ws = stepOf(weights, wpath), os = stepOf(opt, opath);
    if (ws != os)
      throw CheckpointError(
          fmt::format("{}: model.safetensors is from step {} but optimizer.safetensors from step {} "
                      "(an interrupted save?)",
                      dir.string(), ws, os));
    state = metadataJson(opt, "helios.trainer", opath);
    for (auto& p : model.parameters()) {
      upload(ctx, p.m, opt.find(p.name + ".m")->data);
      upload(ctx, p.v, opt.find(p.name + ".v")->data);
    }
  }
  for (auto& p : model.parameters())
    upload(ctx, p.data, weights.find(p.name)->data);
  return state;
}

void loadWeights(vk::Context& ctx, Model& model, const SafeTensorsFile& weights, const fs::path& what) {
  std::vector<std::pair<std::string, std::vector<uint64_t>>> expected;
  for (auto& p : model.parameters())
    expected.emplace_back(p.name, shapeOf(p));
  checkTensors(weights, what, expected);
  for (const auto& t : weights.tensors)
    refuseNonFinite(t, what);
  for (auto& p : model.parameters())
    upload(ctx, p.data, weights.find(p.name)->data);
}

} // namespace helios::train
