#pragma once
// Umbrella header for kernel generators: the SPIR-V module builder (helios::codegen_spirv).
#include "codegen/spirv/binary_writer.hpp"
#include "codegen/spirv/function_builder.hpp"
#include "codegen/spirv/ids.hpp"
#include "codegen/spirv/module.hpp"
#include "codegen/spirv/types.hpp"
