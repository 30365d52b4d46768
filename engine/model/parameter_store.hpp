#pragma once
// Where a model's parameters live: four flat buffers per group (values, gradients, AdamW m and v), each
// parameter a slice aligned to the device's storage-buffer offset alignment. Parameters that take weight
// decay come first, the rest after, so the optimizer runs one sum-of-squares and one AdamW dispatch per group
// instead of two per tensor (152 of a char-model step's 576 dispatches were per-tensor optimizer work).
// A group closes at 256 MiB per buffer (a larger tensor gets a group of its own), which keeps every range
// within what drivers allow a storage buffer binding.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/vk/buffer.hpp"
#include "engine/vk/context.hpp"

namespace helios::model {

// A trainable tensor: f32 master weights, its gradient, and AdamW state, all persistent on the device (slices
// of its group's flat buffers).
struct Parameter {
  std::string name; // safetensors key, e.g. "blocks.0.attn.qkv.weight"
  std::vector<uint32_t> shape;
  uint32_t elements = 0;
  vk::BufferSlice data, grad, m, v; // f32
  bool decay = true;                // weight decay applies (not to norms, biases, embeddings' positions)
};

// A run of parameters that share one weight-decay setting and one set of flat buffers.
struct ParameterGroup {
  vk::BufferRange data, grad, m, v; // whole flat buffers (padding between parameters is zero)
  uint32_t elements = 0;            // floats per buffer, padding included
  bool decay = true;
};

class ParameterStore {
public:
  // Lays out `params` (name, shape, elements and decay set), allocates the group buffers, zeroes them and
  // points every parameter's data/grad/m/v at its slice. Call once; the store must outlive the parameters.
  void build(vk::Context& ctx, std::vector<Parameter>& params);
  const std::vector<ParameterGroup>& groups() const { return groups_; }

private:
  struct Flat {
    vk::Buffer data, grad, m, v;
  };
  std::vector<std::unique_ptr<Flat>> flats_; // stable addresses: parameters hold slices of these
  std::vector<ParameterGroup> groups_;
};

} // namespace helios::model
