#include "codegen/kernels/all.hpp"

// Each family adds one include and one call, in alphabetical order.

namespace helios::codegen {

void registerAllKernels(KernelRegistry& registry) {
  (void)registry;
}

} // namespace helios::codegen
