#pragma once
// Loads a SPIR-V binary compiled from shaders/ (the GLSL oracles) as a kernel the engine can run.
#include "codegen/kernel.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace helios::test {

inline codegen::Kernel glslOracle(const std::string& name, uint32_t numBuffers, uint32_t pushBytes,
                                  std::array<uint32_t, 3> localSize) {
  std::string path = std::string(HELIOS_SHADER_DIR) + "/" + name + ".spv";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open GLSL oracle " + path);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (bytes.size() % 4 != 0) throw std::runtime_error(path + " is not a whole number of SPIR-V words");
  codegen::Kernel k;
  k.name = "glsl_" + name;
  k.cacheKey = "glsl:" + name;
  k.spirv.resize(bytes.size() / 4);
  std::memcpy(k.spirv.data(), bytes.data(), bytes.size());
  k.numBuffers = numBuffers;
  k.pushConstantBytes = pushBytes;
  k.localSize = localSize;
  return k;
}

} // namespace helios::test
