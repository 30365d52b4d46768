#pragma once
// The device's memory bandwidth (helios-bench peak): dst = src, one 16-byte vector per invocation and trip
// of a grid-stride loop (i = GlobalInvocationId.x; i < count; i += NumWorkgroups.x * localSize), so
// consecutive invocations touch consecutive vectors and any count works with any grid.
// Bindings: 0 src (uvec4, read), 1 dst (uvec4, write). Push constants: uint32 count (vectors).
#include <cstdint>
#include <string>

#include "codegen/kernel.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

struct PeakCopyParams {
  uint32_t localSize = 256;
  std::string cacheKey() const; // "peak_copy:wg256"
};

Kernel generatePeakCopy(const PeakCopyParams& p);
void registerPeakCopy(KernelRegistry& registry);

} // namespace helios::codegen
