#pragma once
// GPT-2's byte-level BPE, from the two files OpenAI published with the model: encoder.json (token -> id) and
// vocab.bpe (the merges, most frequent first). Encoding: pre-tokenize (gpt2_pretokenize.hpp), then within
// each piece start from its bytes and repeatedly merge the adjacent pair of lowest rank (every occurrence,
// left to right) until no pair is in the merge list; the symbols' ids are the tokens. Tokens in the files
// spell bytes through a byte -> printable-character map (byteToUnicode), which is undone on load.
#include "engine/text/tokenizer.hpp"

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace helios::text {

// The printable character that stands for each byte in encoder.json and vocab.bpe: '!'..'~', U+00A1..U+00AC
// and U+00AE..U+00FF stand for themselves, the other 68 bytes for U+0100, U+0101, ... in byte order.
const std::array<uint32_t, 256>& byteToUnicode();
// The bytes a token spelled in those characters stands for; nullopt when a character stands for no byte
// (the code point is in `stray`).
std::optional<std::string> spelledBytes(std::string_view spelled, uint32_t* stray = nullptr);

class Gpt2Tokenizer final : public Tokenizer {
public:
  // Throws std::invalid_argument naming the file and the entry that is wrong.
  Gpt2Tokenizer(std::string encoderJson, std::string vocabBpe);

  const char* kind() const override { return "gpt2"; }
  uint32_t vocab() const override { return static_cast<uint32_t>(decoder_.size()); }
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decodeToken(int32_t id) const override;
  std::optional<int32_t> endOfText() const override { return endOfText_; }
  nlohmann::json describe() const override;
  std::vector<TokenizerFile> files() const override;

private:
  void encodePiece(std::string_view piece, std::vector<int32_t>& out) const;
  int rank(const std::string& a, const std::string& b) const;

  std::string encoderJson_, vocabBpe_;               // kept to travel with checkpoints
  std::unordered_map<std::string, int32_t> encoder_; // raw bytes -> id
  std::vector<std::string> decoder_;                 // id -> raw bytes
  std::unordered_map<std::string, int> ranks_;       // mergeKey(a, b) -> rank
  std::optional<int32_t> endOfText_;
  mutable std::mutex cacheMutex_; // pieces seen before: most words repeat
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

} // namespace helios::text
