#pragma once
// How an export splits its tensors over files (a pure plan): in order, a new file whenever the next tensor
// would take the current one past maxBytes (a tensor larger than that gets a file of its own). One file is
// model.safetensors; several are model-0000N-of-0000M.safetensors, named by model.safetensors.index.json.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace helios::train::hf {

struct ShardPlan {
  std::vector<std::string> files; // file names
  std::vector<size_t> fileOf;     // per tensor: its index into files
  uint64_t totalBytes = 0;
};

ShardPlan planShards(const std::vector<uint64_t>& tensorBytes, uint64_t maxBytes);

// model.safetensors.index.json: {"metadata": {"total_size"}, "weight_map": {tensor: file}}.
nlohmann::ordered_json shardIndex(const ShardPlan& plan, const std::vector<std::string>& tensorNames);

} // namespace helios::train::hf
