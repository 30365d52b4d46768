#pragma once
// Where a model's parameters live: four flat buffers per group (values, gradients, AdamW m and v), each
// parameter a slice aligned to the device's storage-buffer offset alignment. Values are f32 or bf16 (the
// parameter's dtype; gradients and moments are always f32). Parameters that take weight decay come first,
// the rest after (and one group holds one value type), so the optimizer runs one sum-of-squares and one AdamW
// dispatch per group instead of two per tensor (152 of a char-model step's 576 dispatches were per-tensor
// optimizer work). A group closes at 256 MiB per buffer (a larger tensor gets a group of its own), which
// keeps every range within what drivers allow a storage buffer binding.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/elem.hpp"
#include "engine/vk/buffer.hpp"
#include "engine/vk/context.hpp"

namespace helios::model {

// A trainable tensor: master weights (f32, or bf16: `dtype`), its gradient, and AdamW state, all persistent
// on the device (slices of its group's flat buffers).
struct Parameter {
  std::string name; // safetensors key, e.g. "blocks.0.attn.qkv.weight"
  std::vector<uint32_t> shape;
  uint32_t elements = 0;
  vk::BufferSlice data, grad, m, v; // data: `dtype`; grad, m, v: f32
  bool decay = true;                // weight decay applies (not to norms, biases, embeddings' positions)
  codegen::Elem dtype = codegen::Elem::F32; // F32 or BF16 (uint16 bits)
};

// A run of parameters that share one weight-decay setting, one value type and one set of flat buffers.
struct ParameterGroup {
  vk::BufferRange data, grad, m, v; // whole flat buffers (padding between parameters is zero)
  uint32_t elements = 0;            // elements per buffer, padding included (even for bf16 values)
  bool decay = true;
  codegen::Elem dtype = codegen::Elem::F32; // of `data`
};

// A parameter's values to or from the host as f32: bf16 values are rounded to nearest even on the way in and
// widened exactly on the way out (so f32 values that are bf16 already round-trip bit for bit).
void uploadValues(vk::Context& ctx, const Parameter& p, const std::vector<float>& values);
std::vector<float> downloadValues(vk::Context& ctx, const Parameter& p);

class ParameterStore {
public:
  // Lays out `params` (name, shape, elements, decay and dtype set), allocates the group buffers, zeroes them
  // and points every parameter's data/grad/m/v at its slice. Call once; the store must outlive the
  // parameters.
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
