#include "codegen/spirv/tools.hpp"

#include <spirv-tools/libspirv.hpp>

namespace helios::spv {

namespace {
spv_target_env toSpvEnv(TargetEnv env) {
  switch (env) {
  case TargetEnv::Vulkan1_1:
    return SPV_ENV_VULKAN_1_1;
  case TargetEnv::Vulkan1_2:
    return SPV_ENV_VULKAN_1_2;
  case TargetEnv::Vulkan1_3:
    return SPV_ENV_VULKAN_1_3;
  case TargetEnv::Universal1_6:
    return SPV_ENV_UNIVERSAL_1_6;
  }
  return SPV_ENV_VULKAN_1_3;
}

std::string formatMessage(spv_message_level_t, const char*, const spv_position_t& pos, const char* msg) {
  return "error: " + std::to_string(pos.index) + ": " + msg + "\n";
}
} // namespace

ValidationResult validate(const std::vector<uint32_t>& words, TargetEnv env) {
  spvtools::SpirvTools tools(toSpvEnv(env));
  ValidationResult r;
  tools.SetMessageConsumer([&](spv_message_level_t level, const char* source, const spv_position_t& pos,
                               const char* msg) { r.message += formatMessage(level, source, pos, msg); });
  spvtools::ValidatorOptions options;
  r.ok = tools.Validate(words.data(), words.size(), options);
  return r;
}

std::string disassemble(const std::vector<uint32_t>& words, TargetEnv env) {
  spvtools::SpirvTools tools(toSpvEnv(env));
  std::string errors;
  tools.SetMessageConsumer([&](spv_message_level_t level, const char* source, const spv_position_t& pos,
                               const char* msg) { errors += formatMessage(level, source, pos, msg); });
  std::string text;
  const uint32_t opts = SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT |
                        SPV_BINARY_TO_TEXT_OPTION_COMMENT;
  if (!tools.Disassemble(words, &text, opts)) return "<disassembly failed>\n" + errors;
  return text;
}

} // namespace helios::spv
