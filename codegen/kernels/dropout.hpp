#pragma once
// Dropout with a mask that is never stored: element i of a call is kept when
//   dropoutHash(i, counter, stream) >= threshold       (threshold = p * 2^32, rounded)
// and scaled by 1 / (1 - p), where `counter` is read from a device buffer (a step counter the model advances
// on the GPU, so replayed recordings draw new masks) and `stream` tells the calls of one step apart. The
// backward recomputes the same mask from the same three values.
//   Advance:  counter[0] += 1.                 Bindings: 0 counter (uint, read-write). One invocation.
//   Forward:  y[i] = keep(i) ? x[i] * scale : 0 (x, y f32, f16 or bf16; f32 arithmetic).
//             Bindings: 0 counter (uint, read), 1 x (read), 2 y (write).
//   Backward: dx[i] = (accumulate ? dx[i] : 0) + (keep(i) ? dy[i] * scale : 0) (f32).
//             Bindings: 0 counter (uint, read), 1 dy (read), 2 dx (read-write).
// Push constants (Forward, Backward): DropoutPush. Grid: one invocation per element, grid-stride.
#include <cstdint>
#include <string>

#include "codegen/elem.hpp"
#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

enum class DropoutKernel : uint8_t { Advance, Forward, Backward };

struct DropoutPush {
  uint32_t count = 0, stream = 0, threshold = 0;
  float scale = 1;
  uint32_t accumulate = 0;
};
static_assert(isPushBlock<DropoutPush>);

struct DropoutParams {
  DropoutKernel kernel = DropoutKernel::Forward;
  Elem type = Elem::F32; // Forward's x and y
  uint32_t localSize = 256;
  std::string cacheKey() const; // "dropout:forward:f32:wg256"
};

// The mask's hash, as the kernels compute it (tests and host references use this one).
constexpr uint32_t dropoutHash(uint32_t index, uint32_t counter, uint32_t stream) {
  uint32_t h = index * 0x9e3779b1u ^ counter * 0x85ebca77u ^ stream * 0xc2b2ae3du;
  for (int round = 0; round < 2; ++round) {
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
  }
  return h;
}

Kernel generateDropout(const DropoutParams& p);
void registerDropout(KernelRegistry& registry);

} // namespace helios::codegen
