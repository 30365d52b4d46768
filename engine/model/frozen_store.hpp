#pragma once
// Where a LoRA model's frozen base lives: values only (no gradient, no AdamW moments: the optimizer never
// sees them), each tensor in its storage type (BaseStorage: the GEMM weights and embeddings in half
// precision, norms, biases and learned positions in f32). Tensors are packed into flat buffers per storage
// type that close at 256 MiB (and within maxStorageBufferRange); a larger tensor gets a buffer of its own, so
// no allocation is larger than the largest tensor.
#include "engine/model/lora_config.hpp"
#include "engine/vk/buffer.hpp"
#include "engine/vk/context.hpp"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace helios::model {

struct FrozenTensor {
  std::string name; // the parameter name a full model would have, e.g. "blocks.0.attn.qkv.weight"
  std::vector<uint32_t> shape;
  uint32_t elements = 0;
  BaseStorage storage = BaseStorage::F32;
  vk::BufferSlice data;
  uint64_t bytes() const { return uint64_t(elements) * codegen::elemBytes(storage); }
};

class FrozenStore {
public:
  // Lays out `tensors` (name, shape, elements and storage set), allocates the buffers and points each tensor
  // at its slice. Call once; the store must outlive the tensors.
  void build(vk::Context& ctx, std::vector<FrozenTensor>& tensors);
  // Writes f32 values into a tensor, converted to its storage type.
  static void upload(vk::Context& ctx, const FrozenTensor& t, std::span<const float> values);
  uint64_t bytes() const { return bytes_; }
  uint64_t largestBuffer() const { return largest_; }

private:
  std::vector<std::unique_ptr<vk::Buffer>> buffers_; // stable addresses: tensors hold slices of these
  uint64_t bytes_ = 0, largest_ = 0;
};

} // namespace helios::model
