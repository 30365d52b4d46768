#pragma once
// Helpers for the SPIR-V builder tests: decode a module into instructions, capabilities, extensions.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/spirv/binary_writer.hpp"

namespace helios::spv::test {

struct Inst {
  Op op;
  std::vector<uint32_t> operands;
};

inline std::vector<Inst> decode(const std::vector<uint32_t>& words) {
  std::vector<Inst> out;
  forEachInstruction(words, [&](const ParsedInst& p) {
    out.push_back(Inst{p.op, std::vector<uint32_t>(p.operands.begin(), p.operands.end())});
  });
  return out;
}

inline std::vector<Capability> capabilities(const std::vector<uint32_t>& words) {
  std::vector<Capability> caps;
  for (const Inst& i : decode(words))
    if (i.op == Op::OpCapability) caps.push_back(static_cast<Capability>(i.operands[0]));
  return caps;
}

inline bool hasCapability(const std::vector<uint32_t>& words, Capability c) {
  const auto caps = capabilities(words);
  return std::find(caps.begin(), caps.end(), c) != caps.end();
}

inline std::vector<std::string> extensions(const std::vector<uint32_t>& words) {
  std::vector<std::string> exts;
  for (const Inst& i : decode(words))
    if (i.op == Op::OpExtension) exts.push_back(decodeString(i.operands));
  return exts;
}

inline size_t count(const std::vector<uint32_t>& words, Op op) {
  const auto insts = decode(words);
  return static_cast<size_t>(
      std::count_if(insts.begin(), insts.end(), [&](const Inst& i) { return i.op == op; }));
}

} // namespace helios::spv::test
