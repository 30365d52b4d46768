#pragma once
// The trainer's tokenizer as a stored value (stored_tokenizer; the interface it wraps is
// engine/text/tokenizer.hpp): a shared, immutable engine/text tokenizer (byte, char, SentencePiece, GPT-2 BPE
// or a Hugging Face tokenizer.json) as a value. Its description (toJson) is stored with checkpoints and token
// shards; file-backed kinds also save their files() beside it (saveFiles), and fromJson(description, dir)
// reads them back.
#include "engine/text/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace helios::train {

class Tokenizer {
public:
  static Tokenizer byteLevel();
  static Tokenizer charLevel(std::string_view corpus); // throws on an empty corpus
  // "byte" | "char" (char-level vocabulary from `corpus`); throws std::invalid_argument otherwise.
  static Tokenizer make(std::string_view kind, std::string_view corpus);
  // "byte", a SentencePiece .model, a Hugging Face or GPT-2 directory, tokenizer.json or encoder.json
  // (text/load.hpp).
  static Tokenizer open(const std::string& spec);
  // A description from toJson(); SentencePiece and GPT-2 read their files from `dir` (throws when absent).
  static Tokenizer fromJson(const nlohmann::json& j, const std::filesystem::path& dir = {});

  explicit Tokenizer(std::shared_ptr<const text::Tokenizer> impl);

  const char* kindName() const { return impl_->kind(); }
  uint32_t vocab() const { return impl_->vocab(); }
  std::optional<int32_t> endOfText() const { return impl_->endOfText(); }
  std::optional<int32_t> tokenId(std::string_view piece) const { return impl_->tokenId(piece); }
  std::optional<int32_t> bos() const { return impl_->bos(); }
  std::vector<int32_t> eosIds() const { return impl_->eosIds(); }
  std::string chatTemplate() const { return impl_->chatTemplate(); }
  std::vector<int32_t> encode(std::string_view text) const { return impl_->encode(text); }
  // Ids outside the vocabulary (a model vocabulary padded beyond the tokenizer's) decode to '?'.
  std::string decode(const std::vector<int32_t>& ids) const { return impl_->decode(ids); }
  std::string decode(int32_t id) const { return impl_->decodeToken(id); }

  nlohmann::json toJson() const { return impl_->describe(); }
  std::vector<text::TokenizerFile> files() const { return impl_->files(); }
  // Writes files() into `dir` (durably, through io::writeFileAtomically).
  void saveFiles(const std::filesystem::path& dir) const;
  const text::Tokenizer& impl() const { return *impl_; }
  bool operator==(const Tokenizer& o) const { return toJson() == o.toJson(); }

private:
  std::shared_ptr<const text::Tokenizer> impl_;
};

} // namespace helios::train
