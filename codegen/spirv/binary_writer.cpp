#include "codegen/spirv/binary_writer.hpp"

#include <cstring>

namespace helios::spv {

void appendString(std::vector<uint32_t>& out, std::string_view s) {
  const size_t nwords = s.size() / 4 + 1; // always room for the terminating nul
  const size_t base = out.size();
  out.resize(base + nwords, 0u);
  for (size_t i = 0; i < s.size(); ++i)
    out[base + i / 4] |= static_cast<uint32_t>(static_cast<unsigned char>(s[i])) << (8 * (i % 4));
}

std::string decodeString(std::span<const uint32_t> words) {
  std::string s;
  for (uint32_t w : words) {
    for (int b = 0; b < 4; ++b) {
      const char c = static_cast<char>((w >> (8 * b)) & 0xffu);
      if (c == '\0') return s;
      s.push_back(c);
    }
  }
  throw BuildError("decodeString: unterminated string operand");
}

InstBuilder& InstBuilder::string(std::string_view s) {
  appendString(operands_, s);
  return *this;
}

void InstBuilder::appendTo(std::vector<uint32_t>& out) const {
  const size_t count = operands_.size() + 1;
  if (count > 0xffffu) throw BuildError("instruction too long (" + std::to_string(count) + " words)");
  out.push_back(static_cast<uint32_t>(count) << 16 | static_cast<uint32_t>(op_));
  out.insert(out.end(), operands_.begin(), operands_.end());
}

Header parseHeader(std::span<const uint32_t> module) {
  if (module.size() < 5) throw BuildError("SPIR-V module shorter than its 5-word header");
  Header h{module[0], module[1], module[2], module[3], module[4]};
  if (h.magic != ::spv::MagicNumber) throw BuildError("bad SPIR-V magic number");
  return h;
}

void forEachInstruction(std::span<const uint32_t> module, const std::function<void(const ParsedInst&)>& fn) {
  parseHeader(module);
  size_t pos = 5;
  while (pos < module.size()) {
    const uint32_t count = module[pos] >> 16;
    if (count == 0 || pos + count > module.size())
      throw BuildError("malformed instruction at word " + std::to_string(pos));
    fn(ParsedInst{static_cast<Op>(module[pos] & 0xffffu), module.subspan(pos + 1, count - 1)});
    pos += count;
  }
}

} // namespace helios::spv
