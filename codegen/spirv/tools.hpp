#pragma once
// Thin wrapper over SPIRV-Tools (validator, disassembler), in its own target helios::spvtools so the
// builder itself does not depend on SPIRV-Tools.
#include <cstdint>
#include <string>
#include <vector>

namespace helios::spv {

enum class TargetEnv { Vulkan1_1, Vulkan1_2, Vulkan1_3, Universal1_6 };

struct ValidationResult {
  bool ok = false;
  std::string message; // the validator's diagnostics (empty when ok)
  explicit operator bool() const { return ok; }
};

ValidationResult validate(const std::vector<uint32_t>& words, TargetEnv env = TargetEnv::Vulkan1_3);
// Friendly disassembly (spirv-dis style, with ids named by OpName and indentation).
std::string disassemble(const std::vector<uint32_t>& words, TargetEnv env = TargetEnv::Vulkan1_3);

} // namespace helios::spv
