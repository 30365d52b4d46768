#include "engine/ops/elem_support.hpp"

#include <stdexcept>

namespace helios::ops {

bool supportsElem(const vk::DeviceFeatures& f, Elem e) {
  switch (e) {
  case Elem::F32:
    return true;
  case Elem::F16:
    return f.shaderFloat16 && f.storageBuffer16BitAccess;
  case Elem::BF16:
    return f.shaderInt16 && f.storageBuffer16BitAccess;
  }
  return false;
}

void requireElem(const vk::Device& device, Elem e, const std::string& what) {
  if (supportsElem(device.features(), e)) return;
  const char* needs = e == Elem::F16 ? "shaderFloat16 and storageBuffer16BitAccess"
                                     : "shaderInt16 and storageBuffer16BitAccess";
  throw std::invalid_argument(what + ": " + codegen::elemName(e) + " storage needs " + needs + ", which " +
                              device.name() + " lacks");
}

} // namespace helios::ops
