#pragma once
// helios-train --init-from DIR: a Hugging Face directory (config.json; model.safetensors or sharded
// model-0000N-of-0000M.safetensors with model.safetensors.index.json; F32, F16 or BF16) as a Helios model.
// openImport() reads the configuration and every file's header and checks them against each other before
// any work: a tensor missing, unexpected, of the wrong shape or dtype, a missing shard, a bad field are
// refused naming the file and the tensor or field. loadImport() then streams the weights into the model one
// parameter at a time (q, k and v packed into attn.qkv, GPT-2's Conv1D weights transposed, f32 on the host
// for one parameter only; the files stay memory-mapped).
#include "engine/train/hf/weights.hpp"
#include "engine/train/model.hpp"
#include "engine/train/stored_tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace helios::train::hf {

struct Import {
  std::filesystem::path dir;
  model::GptConfig config; // the architecture only (packed QKV; precision and the rest at their defaults)
  std::unique_ptr<Weights> weights;
  std::map<std::string, std::string> fileNames; // canonical Hugging Face name -> the name in the file
  nlohmann::json tokenizer;                     // helios.tokenizer from a Helios export's metadata, else null
};

Import openImport(const std::filesystem::path& dir);

// One Helios parameter assembled from its Hugging Face tensors: f32 values and shape. Throws CheckpointError
// for a non-finite value (naming the file and tensor) or a name that no mapped tensor fills.
struct Assembled {
  std::vector<uint64_t> shape;
  std::vector<float> values;
};
Assembled assemble(const Import& import, const std::string& helios);

// Every parameter of `model` (built from import.config) uploaded from the files.
void loadImport(vk::Context& ctx, Model& model, const Import& import);

// The directory's tokenizer: a Helios export's byte or char tokenizer (from its metadata), else the files
// there that text::openTokenizer reads (tokenizer.json, tokenizer.model, vocab.json + merges.txt, ...);
// nullopt when it holds none. Files it cannot read are refused (std::invalid_argument naming them).
std::optional<Tokenizer> importTokenizer(const Import& import);

} // namespace helios::train::hf
