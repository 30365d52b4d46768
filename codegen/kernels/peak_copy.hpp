#pragma once
// The device's memory bandwidth (helios-bench peak): dst = src, one 16-byte vector per invocation and trip
// of a grid-stride loop (i = GlobalInvocationId.x; i < count; i += NumWorkgroups.x * localSize), so
// consecutive invocations touch consecutive vectors and any count works with any grid.
// Bindings: 0 src (uvec4, read), 1 dst (uvec4, write). Push constants: PeakCopyPush.
#include <cstdint>
#include <string>

#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

// Push constants: the op fills these, the generator declares them (push_block.hpp).
struct PeakCopyPush {
  uint32_t vectors = 0; // 16-byte vectors to copy
};
static_assert(isPushBlock<PeakCopyPush> && sizeof(PeakCopyPush) == 4);

struct PeakCopyParams {
  uint32_t localSize = 256;
  std::string cacheKey() const; // "peak_copy:wg256"
};

Kernel generatePeakCopy(const PeakCopyParams& p);
void registerPeakCopy(KernelRegistry& registry);

} // namespace helios::codegen
