#pragma once
// Encoding and decoding of SPIR-V instruction words: one instruction = (word count << 16 | opcode) followed
// by its operands; strings are UTF-8, nul-terminated, padded to a word boundary.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/spirv/ids.hpp"

namespace helios::spv {

// Assembles one instruction; appendTo() writes it with the correct word count.
class InstBuilder {
public:
  explicit InstBuilder(Op op) : op_(op) {}
  InstBuilder& word(uint32_t w) {
    operands_.push_back(w);
    return *this;
  }
  InstBuilder& words(std::span<const uint32_t> ws) {
    operands_.insert(operands_.end(), ws.begin(), ws.end());
    return *this;
  }
  InstBuilder& string(std::string_view s);
  void appendTo(std::vector<uint32_t>& out) const;

private:
  Op op_;
  std::vector<uint32_t> operands_;
};

// Appends the words of a literal string operand.
void appendString(std::vector<uint32_t>& out, std::string_view s);
// Decodes a literal string operand starting at words[0].
std::string decodeString(std::span<const uint32_t> words);

// Module header: magic, version, generator, bound, schema.
struct Header {
  uint32_t magic = 0;
  uint32_t version = 0;
  uint32_t generator = 0;
  uint32_t bound = 0;
  uint32_t schema = 0;
};

// One decoded instruction: opcode and operand words (excluding the opcode/word-count word).
struct ParsedInst {
  Op op;
  std::span<const uint32_t> operands;
};

// Walks a module; throws BuildError on a malformed stream.
Header parseHeader(std::span<const uint32_t> module);
void forEachInstruction(std::span<const uint32_t> module, const std::function<void(const ParsedInst&)>& fn);

} // namespace helios::spv
