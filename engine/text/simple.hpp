#pragma once
// The two tokenizers that need no files: byte-level (vocab 256, every text encodes) and character-level
// (the distinct bytes of a corpus in increasing order, listed in its description).
#include "engine/text/tokenizer.hpp"

namespace helios::text {

class ByteTokenizer final : public Tokenizer {
public:
  const char* kind() const override { return "byte"; }
  uint32_t vocab() const override { return 256; }
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decodeToken(int32_t id) const override;
  nlohmann::json describe() const override { return {{"kind", "byte"}}; }
};

class CharTokenizer final : public Tokenizer {
public:
  // Throws std::invalid_argument on an empty or repeating list.
  explicit CharTokenizer(std::vector<uint8_t> chars);
  static CharTokenizer fromCorpus(std::string_view corpus); // throws on an empty corpus

  const char* kind() const override { return "char"; }
  uint32_t vocab() const override { return static_cast<uint32_t>(chars_.size()); }
  // Throws std::invalid_argument naming the first character the vocabulary lacks.
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decodeToken(int32_t id) const override;
  nlohmann::json describe() const override { return {{"kind", "char"}, {"chars", chars_}}; }

private:
  std::vector<uint8_t> chars_;  // id -> byte
  std::vector<int32_t> lookup_; // byte -> id or -1
};

} // namespace helios::text
