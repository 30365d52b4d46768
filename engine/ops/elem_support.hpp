#pragma once
// Whether a device can hold an element type (codegen/elem.hpp) in the buffers kernels read and write: f16
// needs shaderFloat16 and storageBuffer16BitAccess; bf16, held as uint16 bits, shaderInt16 and
// storageBuffer16BitAccess (no bf16 type: VK_KHR_shader_bfloat16 is only for the coop kernels).
#include <string>

#include "codegen/elem.hpp"
#include "engine/vk/device.hpp"

namespace helios::ops {

using codegen::Elem;

bool supportsElem(const vk::DeviceFeatures& features, Elem e);
// Throws std::invalid_argument "<what>: bf16 storage needs shaderInt16 and storageBuffer16BitAccess, which
// <device> lacks" where it cannot.
void requireElem(const vk::Device& device, Elem e, const std::string& what);

} // namespace helios::ops
