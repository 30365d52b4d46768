#pragma once
// Every kernel family's registration, for helios-spv (list/dump/validate) and the spirv-val sweep test.
#include "codegen/registry.hpp"

namespace helios::codegen {

void registerAllKernels(KernelRegistry& registry);

} // namespace helios::codegen
