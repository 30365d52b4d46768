#pragma once
// A Hugging Face directory's weights: model.safetensors, or the shards model.safetensors.index.json names
// (its weight_map: tensor -> file). Opening maps every file and checks the set before any data is read: the
// index parses and names files that exist and hold the tensors it assigns them, no shard holds a tensor the
// index does not assign it, no tensor is in two files, and every dtype is F32, F16 or BF16 (refusals name the
// file and the tensor). Tensors are then read one at a time as f32.
#include "engine/train/safetensors.hpp"

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace helios::train::hf {

class Weights {
public:
  explicit Weights(const std::filesystem::path& dir);
  // Every tensor, in file order (shard by shard).
  std::vector<const TensorInfo*> tensors() const;
  const TensorInfo* find(const std::string& name) const;
  // The file holding `name` (for messages).
  std::filesystem::path fileOf(const std::string& name) const;
  std::vector<float> read(const std::string& name) const;
  // metadata of the first file (a Helios export's helios.* entries)
  const std::map<std::string, std::string>& metadata() const;
  size_t files() const { return files_.size(); }

private:
  std::vector<SafetensorsReader> files_;
  std::map<std::string, size_t> where_; // tensor -> index into files_
};

// The weights' file names a directory holds: "model.safetensors", or the index's file (whether sharded).
bool isSharded(const std::filesystem::path& dir);

} // namespace helios::train::hf
