#pragma once
// SentencePiece tokenizers (Debian's libsentencepiece): load a trained .model, or train a BPE or unigram
// model on text files. Trained models use the identity normalization, keep whitespace as it is and fall
// back to bytes for characters outside the vocabulary, so decode(encode(text)) gives the text back; their
// end-of-sequence piece (</s>) separates documents.
//
// A Hugging Face directory's tokenizer.model (Llama 2, Mistral) comes with its tokenizer_config.json (and
// special_tokens_map.json, generation_config.json, chat_template.jinja): their BOS, EOS and chat template,
// and the added tokens of added_tokens_decoder, which encode() cuts out of the text first, as transformers
// does, encoding each stretch between them with SentencePiece as a text of its own (and which decode back
// to their strings). Those files travel with the model, byte for byte.
#include "engine/text/tokenizer.hpp"

#include <filesystem>
#include <functional>
#include <memory>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace helios::text {

class SentencePieceTokenizer final : public Tokenizer {
public:
  // `model`: the bytes of a .model file; `config`: the directory's other tokenizer files (directory.hpp).
  // Throws std::invalid_argument with SentencePiece's message, or naming the configuration field that is
  // wrong.
  explicit SentencePieceTokenizer(std::string model, std::vector<TokenizerFile> config = {});
  ~SentencePieceTokenizer() override;

  const char* kind() const override { return "sentencepiece"; }
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
  std::vector<TokenizerFile> files() const override;

private:
  struct Config;
  std::vector<int32_t> encodePlain(std::string_view text) const;
  std::string model_;
  std::vector<TokenizerFile> configFiles_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::unique_ptr<Config> config_; // null without configuration files
};

struct SentencePieceTraining {
  std::vector<std::filesystem::path> files; // read line by line
  uint32_t vocab = 8192;
  std::string type = "bpe";        // bpe | unigram
  uint64_t maxSentences = 2000000; // lines kept for training, sampled uniformly from all that are read
  uint32_t threads = 0;            // 0 = the hardware's
  bool quiet = false;              // SentencePiece's own log lines (its trainer's progress) off
  // Called as lines are read: (lines so far, bytes so far, total bytes).
  std::function<void(uint64_t, uint64_t, uint64_t)> onRead;
};

// Returns the trained model's bytes (a .model file). Throws std::runtime_error with SentencePiece's message
// (for example a vocabulary larger than the text allows).
std::string trainSentencePiece(const SentencePieceTraining& options);

} // namespace helios::text
