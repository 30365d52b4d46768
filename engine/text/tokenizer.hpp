#pragma once
// The tokenizer interface: text <-> token ids. Implementations: byte-level and char-level (simple.hpp),
// SentencePiece (sentencepiece.hpp), GPT-2's byte-level BPE (gpt2_bpe.hpp) and Hugging Face tokenizer.json
// BPE (hf_tokenizer.hpp); load.hpp builds any of them from its description and files. A tokenizer is
// immutable once built and safe to share between threads. encode() gives the ids of the text alone: no BOS
// or EOS is added (sequenceSpecials() says what transformers would add).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace helios::text {

// The ids Hugging Face's encode(text) puts around the text's own ids when it adds special tokens (its
// default): a beginning-of-sequence token before, an end-of-sequence token after, or none.
struct SequenceSpecials {
  std::vector<int32_t> prefix, suffix;
  bool operator==(const SequenceSpecials&) const = default;
};

// A file a tokenizer is made of (SentencePiece's .model, GPT-2's encoder.json and vocab.bpe): saved beside a
// checkpoint or token shards so that they decode the same way without the original files.
struct TokenizerFile {
  std::string name;
  std::string bytes;
};

class Tokenizer {
public:
  virtual ~Tokenizer() = default;
  virtual const char* kind() const = 0; // "byte", "char", "sentencepiece", "gpt2"
  virtual uint32_t vocab() const = 0;
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // One token's bytes, for streaming output (a multi-byte character may span tokens). Ids outside the
  // vocabulary (a model vocabulary padded beyond the tokenizer's) decode to "?".
  virtual std::string decodeToken(int32_t id) const = 0;
  // A whole sequence; the default concatenates decodeToken.
  virtual std::string decode(std::span<const int32_t> ids) const;
  // The token that separates documents in token shards (none for byte and char tokenizers).
  virtual std::optional<int32_t> endOfText() const { return std::nullopt; }
  // The id of a special or added token written exactly as `piece` (e.g. "<|im_start|>"), or of a vocabulary
  // entry spelled so; nullopt when there is none.
  virtual std::optional<int32_t> tokenId(std::string_view piece) const {
    (void)piece;
    return std::nullopt;
  }
  // The model's beginning-of-sequence token, where its tokenizer configuration names one.
  virtual std::optional<int32_t> bos() const { return std::nullopt; }
  // Every id that ends a generation (tokenizer_config.json's eos_token and generation_config.json's
  // eos_token_id list); by default the end-of-text token.
  virtual std::vector<int32_t> eosIds() const {
    const auto e = endOfText();
    return e ? std::vector<int32_t>{*e} : std::vector<int32_t>{};
  }
  // tokenizer_config.json's chat_template as written (a Jinja template), "" where there is none.
  virtual std::string chatTemplate() const { return {}; }
  // What transformers adds around encode()'s ids with add_special_tokens (tokenizer.json's post_processor,
  // or tokenizer_config.json's add_bos_token / add_eos_token for SentencePiece): encode() itself never adds
  // them; whoever builds model inputs decides.
  virtual SequenceSpecials sequenceSpecials() const { return {}; }
  // {"kind": ..., ...}: with files() all that is needed to rebuild it (load.hpp); equal descriptions mean
  // the same tokenization (file-backed kinds carry a hash of their files).
  virtual nlohmann::json describe() const = 0;
  virtual std::vector<TokenizerFile> files() const { return {}; }
};

} // namespace helios::text
