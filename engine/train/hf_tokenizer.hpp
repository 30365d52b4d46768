#pragma once
// The tokenizer of a Hugging Face export, in the files `transformers` reads beside the model:
//   GPT-2 BPE      vocab.json (encoder.json as it is) and merges.txt (vocab.bpe; GPT2Tokenizer drops the
//                  first line unread, so a "#version" line leads it), tokenizer_config.json naming
//                  GPT2Tokenizer and special_tokens_map.json naming <|endoftext|> where the vocabulary has
//                  it. AutoTokenizer and GPT2TokenizerFast load the directory.
//   SentencePiece  tokenizer.model alone for a model Helios trained (no transformers class encodes it as
//                  the sentencepiece library does); a Hugging Face directory's tokenizer.model with the
//                  configuration files it came with, unchanged.
//   hf             the tokenizer.json and the files beside it that it was loaded with, byte for byte, so
//                  AutoTokenizer loads the export as it loaded the original.
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
