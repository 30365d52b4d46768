#pragma once
// The tokenizer of a Hugging Face export, in the files `transformers` reads beside the model:
//   GPT-2 BPE      vocab.json (encoder.json as it is) and merges.txt (vocab.bpe; GPT2Tokenizer drops the
//                  first line unread, so a "#version" line leads it), tokenizer_config.json naming
//                  GPT2Tokenizer and special_tokens_map.json naming <|endoftext|> where the vocabulary has
//                  it. AutoTokenizer and GPT2TokenizerFast load the directory.
//   SentencePiece  tokenizer.model and a tokenizer_config.json naming LlamaTokenizer in its legacy form with
//                  no BOS/EOS added: that class encodes with the .model as it is. The fast conversion does
//                  not fit (it adds Llama's normalizer, a prefix space, which Helios' models do not use).
//   byte, char     nothing: transformers has no such tokenizer; the note says so.
#include "engine/text/tokenizer.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace helios::train {

struct HfTokenizerFiles {
  std::vector<text::TokenizerFile> files; // written beside config.json
  std::string note;                       // one line for the export's output: what was written, what not
};

// What an export writes for `tok`. modelMaxLength: the model's context (tokenizer_config.json's
// model_max_length).
HfTokenizerFiles hfTokenizerFiles(const text::Tokenizer& tok, uint32_t modelMaxLength);

// Writes the files into `dir` and returns the note.
std::string writeHfTokenizer(const text::Tokenizer& tok, uint32_t modelMaxLength,
                             const std::filesystem::path& dir);

} // namespace helios::train
