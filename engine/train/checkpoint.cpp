#include "engine/train/checkpoint.hpp"

#include "engine/train/crc32c.hpp"
#include "engine/train/durable_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>

namespace helios::train {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxHeader = 100ull << 20;

std::string shapeString(const std::vector<uint64_t>& s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

std::vector<uint64_t> shapeOf(const model::Parameter& p) {
  return std::vector<uint64_t>(p.shape.begin(), p.shape.end());
}

uint64_t elementsOf(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (auto d : shape)
    n *= d;
  return n;
}

std::vector<float> download(vk::Context& ctx, const vk::BufferSlice& b, uint32_t n) {
  std::vector<float> v(n);
  ctx.download(b, std::as_writable_bytes(std::span<float>(v)));
  return v;
}

void upload(vk::Context& ctx, const vk::BufferSlice& b, const std::vector<float>& v) {
  ctx.upload(b, std::as_bytes(std::span<const float>(v)));
}

constexpr const char* kChecksumKey = "helios.crc32c"; // JSON: tensor name -> CRC-32C, "__metadata__" too

std::string hex32(uint32_t v) {
  return fmt::format("{:08x}", v);
}

uint32_t tensorCrc(const std::vector<float>& data) {
  return crc32c(std::as_bytes(std::span<const float>(data)));
}

// Every metadata entry but the checksums, as "key\0value\0" in key order.
uint32_t metadataCrc(const std::map<std::string, std::string>& metadata) {
  std::string text;
  for (const auto& [k, v] : metadata)
    if (k != kChecksumKey) text += k + '\0' + v + '\0';
  return crc32c(std::as_bytes(std::span<const char>(text)));
}

std::string checksumsJson(const SafeTensorsFile& file) {
  nlohmann::ordered_json j;
  j["__metadata__"] = hex32(metadataCrc(file.metadata));
  for (const auto& t : file.tensors)
    j[t.name] = hex32(tensorCrc(t.data));
  return j.dump();
}

// Checks the metadata's checksum, and the tensors' when their data was read; removes the checksum entry.
void verifyChecksums(SafeTensorsFile& f, const std::string& file, bool headerOnly) {
  auto it = f.metadata.find(kChecksumKey);
  if (it == f.metadata.end()) return;
  nlohmann::json sums = nlohmann::json::parse(it->second, nullptr, false);
  if (!sums.is_object())
    throw CheckpointError(fmt::format("{}: bad header: {} is not a JSON object", file, kChecksumKey));
  f.metadata.erase(it);
  auto expect = [&](const std::string& name) {
    if (!sums.contains(name) || !sums[name].is_string())
      throw CheckpointError(fmt::format("{}: no checksum for {} in {}", file, name, kChecksumKey));
    return sums[name].get<std::string>();
  };
  if (expect("__metadata__") != hex32(metadataCrc(f.metadata)))
    throw CheckpointError(fmt::format(
        "{}: checksum mismatch in __metadata__ (the step, configuration or trainer state was altered)",
        file));
  f.checksummed = true;
  if (headerOnly) return;
  for (const auto& t : f.tensors) {
    const std::string want = expect(t.name), got = hex32(tensorCrc(t.data));
    if (want != got)
      throw CheckpointError(fmt::format("{}: checksum mismatch in tensor '{}' (CRC-32C {} stored, {} read): "
                                        "its bytes were altered or belong to another tensor",
                                        file, t.name, want, got));
  }
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

void requireChecksums(const SafeTensorsFile& f, const fs::path& path) {
  if (!f.checksummed)
    throw CheckpointError(fmt::format(
        "{}: no tensor checksums ({}): written by a Helios before checkpoints carried them (the old layout "
        "kept model.safetensors at the top of the run directory); this version does not load such files",
        path.string(), kChecksumKey));
}

} // namespace

const SafeTensor* SafeTensorsFile::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

void writeSafetensors(const fs::path& path, const SafeTensorsFile& file) {
  nlohmann::ordered_json header;
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  for (const auto& [k, v] : file.metadata)
    if (k != kChecksumKey) meta[k] = v;
  header["__metadata__"] = meta;
  uint64_t offset = 0;
  for (const auto& t : file.tensors) {
    if (t.name == "__metadata__") throw CheckpointError("a tensor may not be called __metadata__");
    if (elementsOf(t.shape) != t.data.size())
      throw CheckpointError(fmt::format("{}: tensor '{}' has {} values for shape {}", path.string(), t.name,
                                        t.data.size(), shapeString(t.shape)));
    const uint64_t bytes = 4ull * t.data.size();
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  header["__metadata__"][kChecksumKey] = checksumsJson(file);
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string blob(8, '\0');
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i)
    blob[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  blob += json;
  blob.reserve(blob.size() + offset);
  for (const auto& t : file.tensors)
    blob.append(reinterpret_cast<const char*>(t.data.data()), 4 * t.data.size()); // little-endian hosts only
  writeFileDurably(path, blob);
}

SafeTensorsFile readSafetensors(const fs::path& path, bool headerOnly) {
  const std::string file = path.string();
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw CheckpointError(fmt::format("{}: cannot open (missing checkpoint file?)", file));
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  if (size < 8)
    throw CheckpointError(fmt::format("{}: truncated: {} bytes, not even a header length", file, size));
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= uint64_t(len[i]) << (8 * i);
  if (n > kMaxHeader)
    throw CheckpointError(fmt::format("{}: bad header: implausible header length {}", file, n));
  if (8 + n > size)
    throw CheckpointError(
        fmt::format("{}: truncated: the header needs {} bytes, the file has {}", file, 8 + n, size));
  std::string json(n, '\0');
  in.read(json.data(), static_cast<std::streamsize>(n));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(fmt::format("{}: bad header: not valid JSON ({})", file, e.what()));
  }
  if (!header.is_object()) throw CheckpointError(fmt::format("{}: bad header: not a JSON object", file));

  SafeTensorsFile out;
  struct Entry {
    std::string name;
    std::vector<uint64_t> shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  uint64_t dataBytes = 0;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object())
        throw CheckpointError(fmt::format("{}: bad header: __metadata__ is not an object", file));
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          throw CheckpointError(
              fmt::format("{}: bad header: __metadata__ value '{}' is not a string", file, mk));
        out.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    try {
      const std::string dtype = value.at("dtype").get<std::string>();
      if (dtype != "F32")
        throw CheckpointError(
            fmt::format("{}: tensor '{}' has dtype {}; Helios checkpoints hold F32 only", file, key, dtype));
      Entry e{key, value.at("shape").get<std::vector<uint64_t>>(), 0, 0};
      const auto offsets = value.at("data_offsets").get<std::vector<uint64_t>>();
      if (offsets.size() != 2 || offsets[0] > offsets[1])
        throw CheckpointError(fmt::format("{}: bad header: tensor '{}' has invalid data_offsets", file, key));
      e.begin = offsets[0];
      e.end = offsets[1];
      if (e.end - e.begin != 4 * elementsOf(e.shape))
        throw CheckpointError(fmt::format("{}: bad header: tensor '{}' of shape {} spans {} bytes, not {}",
                                          file, key, shapeString(e.shape), e.end - e.begin,
                                          4 * elementsOf(e.shape)));
      dataBytes = std::max(dataBytes, e.end);
      entries.push_back(std::move(e));
    } catch (const nlohmann::json::exception& ex) {
      throw CheckpointError(fmt::format("{}: bad header: tensor '{}': {}", file, key, ex.what()));
    }
  }
  if (8 + n + dataBytes != size)
    throw CheckpointError(
        fmt::format("{}: {}: the header describes {} bytes of tensor data, the file holds {}", file,
                    8 + n + dataBytes > size ? "truncated" : "trailing bytes", dataBytes, size - 8 - n));
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  for (const auto& e : entries) {
    if (headerOnly) {
      out.tensors.push_back({e.name, e.shape, {}});
      continue;
    }
    SafeTensor t{e.name, e.shape, std::vector<float>((e.end - e.begin) / 4)};
    in.seekg(static_cast<std::streamoff>(8 + n + e.begin));
    in.read(reinterpret_cast<char*>(t.data.data()), static_cast<std::streamsize>(e.end - e.begin));
    if (!in) throw CheckpointError(fmt::format("{}: read failed in tensor '{}'", file, e.name));
    out.tensors.push_back(std::move(t));
  }
  verifyChecksums(out, file, headerOnly);
  return out;
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
  return metadataJson(readSafetensors(path, true), "helios.model", path);
}

nlohmann::json checkpointTokenizer(const fs::path& dir) {
  const fs::path path = dir / "model.safetensors";
  return metadataJson(readSafetensors(path, true), "helios.tokenizer", path);
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
  return metadataJson(readSafetensors(path, true), "helios.trainer", path);
}

nlohmann::json loadCheckpoint(vk::Context& ctx, const fs::path& dir, Model& model, bool withOptimizer) {
  const fs::path wpath = dir / "model.safetensors";
  const SafeTensorsFile weights = readSafetensors(wpath);
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
  requireChecksums(weights, wpath);
  for (const auto& t : weights.tensors)
    refuseNonFinite(t, wpath);
  nlohmann::json state;
  if (withOptimizer) {
    const fs::path opath = dir / "optimizer.safetensors";
    const SafeTensorsFile opt = readSafetensors(opath);
    checkTensors(opt, opath, expectedOpt);
    requireChecksums(opt, opath);
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

} // namespace helios::train
