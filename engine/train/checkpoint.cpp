#include "engine/train/checkpoint.hpp"

#include "engine/train/durable_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mutex>
#include <optional>
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

// A tensor of a checkpoint file: one of a parameter's slices (values or a moment).
struct DeviceTensor {
  std::string name;
  const model::Parameter* param;
  const vk::BufferSlice* slice;
};

// Writes the tensors as one F32 safetensors file, downloading one at a time: the host holds one tensor, not
// the model (or its moments) whole.
void writeFromDevice(vk::Context& ctx, const fs::path& path, std::map<std::string, std::string> metadata,
                     const std::vector<DeviceTensor>& tensors) {
  std::vector<TensorInfo> infos;
  for (const DeviceTensor& t : tensors)
    infos.push_back({t.name, shapeOf(*t.param), StoredType::F32});
  SafetensorsWriter writer(path, std::move(metadata), std::move(infos));
  for (const DeviceTensor& t : tensors)
    writer.write(t.slice == &t.param->data ? model::downloadValues(ctx, *t.param) // bf16 widened exactly
                                           : download(ctx, *t.slice, t.param->elements));
  writer.commit();
}

void upload(vk::Context& ctx, const vk::BufferSlice& b, const std::vector<float>& v) {
  ctx.upload(b, std::as_bytes(std::span<const float>(v)));
}

// The first NaN or infinity of a tensor, named; nothing when every value is finite.
void refuseNonFinite(const std::string& name, const std::vector<float>& data, const fs::path& path) {
  for (size_t i = 0; i < data.size(); ++i)
    if (!std::isfinite(data[i]))
      throw CheckpointError(fmt::format("{}: tensor '{}' holds {} at element {}: refusing a checkpoint with "
                                        "non-finite values",
                                        path.string(), name, std::isnan(data[i]) ? "NaN" : "an infinity", i));
}

using Metadata = std::map<std::string, std::string>;

uint64_t stepOf(const Metadata& metadata, const fs::path& path) {
  auto it = metadata.find("helios.step");
  if (it == metadata.end())
    throw CheckpointError(
        fmt::format("{}: no helios.step in __metadata__: not a Helios checkpoint", path.string()));
  try {
    return std::stoull(it->second);
  } catch (const std::exception&) {
    throw CheckpointError(fmt::format("{}: helios.step '{}' is not a number", path.string(), it->second));
  }
}

nlohmann::json metadataJson(const Metadata& metadata, const char* key, const fs::path& path) {
  auto it = metadata.find(key);
  if (it == metadata.end())
    throw CheckpointError(
        fmt::format("{}: no {} in __metadata__: not a Helios checkpoint", path.string(), key));
  try {
    return nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(fmt::format("{}: {} is not valid JSON ({})", path.string(), key, e.what()));
  }
}

using Expected = std::vector<std::pair<std::string, std::vector<uint64_t>>>;

// Every tensor of `f` named in `expected` with its shape, nothing more.
void checkTensors(const SafetensorsReader& f, const fs::path& path, const Expected& expected) {
  for (const auto& [name, shape] : expected) {
    const TensorInfo* t = f.find(name);
    if (!t) throw CheckpointError(fmt::format("{}: tensor '{}' is missing", path.string(), name));
    if (t->shape != shape)
      throw CheckpointError(fmt::format("{}: tensor '{}' has shape {}, the model expects {}", path.string(),
                                        name, shapeString(t->shape), shapeString(shape)));
  }
  if (f.tensors().size() != expected.size()) {
    for (const auto& t : f.tensors()) {
      bool known = false;
      for (const auto& e : expected)
        known = known || e.first == t.name;
      if (!known)
        throw CheckpointError(
            fmt::format("{}: tensor '{}' is not a parameter of this model", path.string(), t.name));
    }
  }
}

// A checkpoint file without checksums is refused; one without the seal warns, once per file.
void requireChecksums(bool checksummed, bool sealed, const fs::path& path) {
  if (!checksummed)
    throw CheckpointError(fmt::format(
        "{}: no tensor checksums ({}): written by a Helios before checkpoints carried them (the old layout "
        "kept model.safetensors at the top of the run directory), or the entry was removed; this version "
        "does not load such files",
        path.string(), "helios.crc32c"));
  if (sealed) return;
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

// A checkpoint file whose tensors are the expected ones (checksums required on opening), each read once to
// verify its checksum and that it is finite (one at a time), before anything is uploaded from it.
void verifyTensors(const SafetensorsReader& f, const fs::path& path, const Expected& expected) {
  checkTensors(f, path, expected);
  for (const TensorInfo& t : f.tensors())
    refuseNonFinite(t.name, f.read(t.name), path);
}

} // namespace

void requireChecksums(const SafeTensorsFile& f, const fs::path& path) {
  requireChecksums(f.checksummed, f.sealed, path);
}

void requireChecksums(const SafetensorsReader& f, const fs::path& path) {
  requireChecksums(f.checksummed(), f.sealed(), path);
}

SafetensorsReader openCheckpointFile(const fs::path& path) {
  SafetensorsReader f(path);
  requireChecksums(f, path);
  return f;
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
    std::vector<DeviceTensor> moments;
    for (auto& p : model.parameters()) {
      moments.push_back({p.name + ".m", &p, &p.m});
      moments.push_back({p.name + ".v", &p, &p.v});
    }
    writeFromDevice(ctx, dir / "optimizer.safetensors",
                    {{"format", "pt"}, {"helios.step", stepText}, {"helios.trainer", trainerState.dump()}},
                    moments);
  }
  std::map<std::string, std::string> metadata{
      {"format", "pt"}, {"helios.step", stepText}, {"helios.model", model.configJson().dump()}};
  if (!trainerState.is_null() && trainerState.contains("tokenizer"))
    metadata["helios.tokenizer"] = trainerState["tokenizer"].dump();
  std::vector<DeviceTensor> weights;
  for (auto& p : model.parameters())
    weights.push_back({p.name, &p, &p.data});
  writeFromDevice(ctx, dir / "model.safetensors", std::move(metadata), weights);
  nlohmann::json human{{"step", step}, {"model", model.configJson()}};
  if (!trainerState.is_null() && trainerState.contains("config")) human["train"] = trainerState["config"];
  writeFileDurably(dir / "config.json", human.dump(2) + "\n");
}

nlohmann::json checkpointModelConfig(const fs::path& dir) {
  const fs::path path = dir / "model.safetensors";
  return metadataJson(openCheckpointFile(path).metadata(), "helios.model", path);
}

nlohmann::json checkpointTokenizer(const fs::path& dir) {
  const fs::path path = dir / "model.safetensors";
  return metadataJson(openCheckpointFile(path).metadata(), "helios.tokenizer", path);
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
  return metadataJson(openCheckpointFile(path).metadata(), "helios.trainer", path);
}

nlohmann::json loadCheckpoint(vk::Context& ctx, const fs::path& dir, Model& model, bool withOptimizer) {
  const fs::path wpath = dir / "model.safetensors";
  const SafetensorsReader weights = openCheckpointFile(wpath);
  nlohmann::json arch = metadataJson(weights.metadata(), "helios.model", wpath);
  nlohmann::json mine = model.configJson();
  // How the model computes (precision, activation recomputation) may change between runs; its shape may not.
  for (const char* free :
       {"precision", "param_dtype", "checkpoint_activations", "fused_casts", "group_casts", "norm_half_grads",
        "residual_norms", "f16_logits", "f16_grads", "packed_attention", "f16_hidden"}) {
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
  Expected expected, expectedOpt;
  for (auto& p : model.parameters()) {
    expected.emplace_back(p.name, shapeOf(p));
    expectedOpt.emplace_back(p.name + ".m", shapeOf(p));
    expectedOpt.emplace_back(p.name + ".v", shapeOf(p));
  }
  verifyTensors(weights, wpath, expected);
  nlohmann::json state;
  std::optional<SafetensorsReader> opt;
  if (withOptimizer) {
    const fs::path opath = dir / "optimizer.safetensors";
    opt.emplace(openCheckpointFile(opath));
    verifyTensors(*opt, opath, expectedOpt);
    const uint64_t ws = stepOf(weights.metadata(), wpath), os = stepOf(opt->metadata(), opath);
    if (ws != os)
      throw CheckpointError(
          fmt::format("{}: model.safetensors is from step {} but optimizer.safetensors from step {} "
                      "(an interrupted save?)",
                      dir.string(), ws, os));
    state = metadataJson(opt->metadata(), "helios.trainer", opath);
  }
  // Everything verified: now the uploads, one tensor on the host at a time.
  for (auto& p : model.parameters()) {
    model::uploadValues(ctx, p, weights.read(p.name)); // bf16: rounded to nearest even (exact for own saves)
    if (opt) upload(ctx, p.m, opt->read(p.name + ".m"));
    if (opt) upload(ctx, p.v, opt->read(p.name + ".v"));
  }
  return state;
}

} // namespace helios::train
