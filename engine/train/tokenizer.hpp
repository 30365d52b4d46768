#pragma once
// Tokenizers: byte-level (vocab 256, every file encodes) and character-level (vocab = the distinct bytes of a
// corpus, in increasing order; saved with a checkpoint so that sampling decodes the same way).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace helios::train {

class Tokenizer {
public:
  enum class Kind { Byte, Char };

  static Tokenizer byteLevel();
  static Tokenizer charLevel(std::string_view corpus); // throws on an empty corpus
  // "byte" | "char" (char-level vocabulary from `corpus`); throws std::invalid_argument otherwise.
  static Tokenizer make(std::string_view kind, std::string_view corpus);

  Kind kind() const { return kind_; }
  const char* kindName() const { return kind_ == Kind::Byte ? "byte" : "char"; }
  uint32_t vocab() const { return kind_ == Kind::Byte ? 256u : static_cast<uint32_t>(chars_.size()); }
  // The end-of-text id that separates documents; byte and char vocabularies have none.
  std::optional<int32_t> endOfText() const { return std::nullopt; }

  // Throws std::invalid_argument naming the first character the char-level vocabulary lacks.
  std::vector<int32_t> encode(std::string_view text) const;
  // Ids outside the vocabulary (a model vocabulary padded beyond the tokenizer's) decode to '?'.
  std::string decode(const std::vector<int32_t>& ids) const;
  std::string decode(int32_t id) const;

  nlohmann::json toJson() const; // {"kind": "char", "chars": [10, 32, ...]}
  static Tokenizer fromJson(const nlohmann::json& j);
  bool operator==(const Tokenizer& o) const { return kind_ == o.kind_ && chars_ == o.chars_; }

private:
  Kind kind_ = Kind::Byte;
  std::vector<uint8_t> chars_;  // id -> byte (char-level)
  std::vector<int32_t> lookup_; // byte -> id or -1 (char-level)
};

} // namespace helios::train
