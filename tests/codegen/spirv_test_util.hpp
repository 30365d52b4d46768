#pragma once
// Helpers for the SPIR-V builder tests: decode a module into instructions, capabilities, extensions.
#include <algorithm>
#include <cstdint>
#include <map>
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

// The subgroup (OpGroupNonUniform*) instructions whose result is narrower than 32 bits per component: valid
// only where the device enables shaderSubgroupExtendedTypes. Their names, one per instruction.
inline std::vector<std::string> narrowSubgroupOps(const std::vector<uint32_t>& words) {
  std::map<uint32_t, uint32_t> width; // type id -> bits per component
  std::vector<std::string> narrow;
  for (const Inst& i : decode(words)) {
    if (i.op == Op::OpTypeInt || i.op == Op::OpTypeFloat) width[i.operands[0]] = i.operands[1];
    if (i.op == Op::OpTypeVector) width[i.operands[0]] = width[i.operands[1]];
    const std::string name = ::spv::OpToString(i.op);
    if (name.rfind("OpGroupNonUniform", 0) == 0 && width.count(i.operands[0]) && width[i.operands[0]] < 32)
      narrow.push_back(name);
  }
  return narrow;
}

} // namespace helios::spv::test
