#include "engine/train/hf/weights.hpp"

#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

namespace helios::train::hf {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSingle = "model.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";

// The index's weight_map: tensor -> shard file name (a plain name inside the directory).
std::map<std::string, std::string> readIndex(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw CheckpointError(fmt::format("{}: cannot open", path.string()));
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw CheckpointError(fmt::format("{}: not a JSON object", path.string()));
  if (!j.contains("weight_map") || !j["weight_map"].is_object())
    throw CheckpointError(fmt::format("{}: field 'weight_map' is missing or not an object", path.string()));
  std::map<std::string, std::string> map;
  for (const auto& [tensor, file] : j["weight_map"].items()) {
    if (!file.is_string())
      throw CheckpointError(
          fmt::format("{}: weight_map entry '{}' is not a file name", path.string(), tensor));
    const std::string name = file.get<std::string>();
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      throw CheckpointError(fmt::format("{}: weight_map entry '{}' names '{}', not a file in the directory",
                                        path.string(), tensor, name));
    map[tensor] = name;
  }
  return map;
}

} // namespace

bool isSharded(const fs::path& dir) {
  return !fs::exists(dir / kSingle) && fs::exists(dir / kIndex);
}

Weights::Weights(const fs::path& dir) {
  if (!isSharded(dir)) {
    if (!fs::exists(dir / kSingle))
      throw CheckpointError(
          fmt::format("{}: neither {} nor {} (sharded weights) is there", dir.string(), kSingle, kIndex));
    files_.emplace_back(dir / kSingle, AcceptTypes::Floats);
    for (const TensorInfo& t : files_[0].tensors())
      where_[t.name] = 0;
    return;
  }
  const std::map<std::string, std::string> index = readIndex(dir / kIndex);
  std::map<std::string, size_t> fileIndex;
  for (const auto& [tensor, file] : index)
    if (!fileIndex.count(file)) {
      if (!fs::exists(dir / file))
        throw CheckpointError(fmt::format("{}: shard {} (named for tensor '{}') is missing",
                                          (dir / kIndex).string(), file, tensor));
      fileIndex[file] = files_.size();
      files_.emplace_back(dir / file, AcceptTypes::Floats);
    }
  for (const auto& [tensor, file] : index) {
    const size_t i = fileIndex.at(file);
    if (!files_[i].find(tensor))
      throw CheckpointError(fmt::format("{}: tensor '{}' is missing (the index names this shard for it)",
                                        files_[i].path().string(), tensor));
    where_[tensor] = i;
  }
  for (const SafetensorsReader& f : files_)
    for (const TensorInfo& t : f.tensors())
      if (!index.count(t.name) || files_[where_.at(t.name)].path() != f.path())
        throw CheckpointError(fmt::format("{}: tensor '{}' is not assigned to this shard by {}",
                                          f.path().string(), t.name, kIndex));
}

std::vector<const TensorInfo*> Weights::tensors() const {
  std::vector<const TensorInfo*> out;
  for (const SafetensorsReader& f : files_)
    for (const TensorInfo& t : f.tensors())
      out.push_back(&t);
  return out;
}

const TensorInfo* Weights::find(const std::string& name) const {
  auto it = where_.find(name);
  return it == where_.end() ? nullptr : files_[it->second].find(name);
}

fs::path Weights::fileOf(const std::string& name) const {
  return files_.at(where_.at(name)).path();
}

std::vector<float> Weights::read(const std::string& name) const {
  return files_.at(where_.at(name)).read(name);
}

const std::map<std::string, std::string>& Weights::metadata() const {
  return files_.at(0).metadata();
}

} // namespace helios::train::hf
