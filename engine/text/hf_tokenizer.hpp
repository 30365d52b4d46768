#pragma once
// A Hugging Face tokenizer.json with a BPE model (GPT-2, Llama 3, Qwen2/2.5, SmolLM2 and the byte-fallback
// BPE of Llama 2 / Mistral files), encoded exactly as the tokenizers library does (engine/text/hf: added
// tokens, normalizer, pre-tokenizer, BPE, decoder), with the special tokens, chat template and end-of-
// generation ids of tokenizer_config.json, special_tokens_map.json, chat_template.jinja and
// generation_config.json where the directory has them.
//
// encode() takes UTF-8 text (other bytes are refused, naming the offset: the library takes Unicode strings
// only) and returns the ids of the text alone; sequenceSpecials() tells what transformers would add around
// them. Kind "hf": its description lists the files, which travel byte for byte.
#include "engine/text/tokenizer.hpp"

#include <memory>

namespace helios::text {

class HfTokenizer final : public Tokenizer {
public:
  // `files` must hold tokenizer.json; the other files of directory.hpp where present. Throws
  // std::invalid_argument naming the file and the field that is wrong, or what Helios does not implement.
  explicit HfTokenizer(std::vector<TokenizerFile> files);
  ~HfTokenizer() override;

  const char* kind() const override { return "hf"; }
  uint32_t vocab() const override;
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decodeToken(int32_t id) const override;
  std::string decode(std::span<const int32_t> ids) const override;
  std::optional<int32_t> endOfText() const override;
  std::optional<int32_t> tokenId(std::string_view piece) const override;
  std::optional<int32_t> bos() const override;
  std::vector<int32_t> eosIds() const override;
  std::string chatTemplate() const override;
  SequenceSpecials sequenceSpecials() const override;
  nlohmann::json describe() const override;
  std::vector<TokenizerFile> files() const override { return files_; }

  // Added tokens whose id in tokenizer.json differs from the one the library (and Helios) gives them.
  const std::vector<std::string>& warnings() const;

private:
  struct Impl;
  std::vector<std::string> tokenStrings(std::span<const int32_t> ids) const;
  std::vector<TokenizerFile> files_;
  std::unique_ptr<Impl> impl_;
};

// Throws std::invalid_argument when `text` is not UTF-8, naming the first bad byte's offset.
void requireUtf8(std::string_view text);

} // namespace helios::text
