#pragma once
// A small Hugging Face tokenizer.json for tests: GPT-2's configuration (ByteLevel pre-tokenizer and decoder)
// over the 256 bytes (id = byte, spelled as GPT-2 spells them) and three merges: " t" 256, "he" 257,
// " the" 258 (the last in the [a, b] form); added tokens <|endoftext|> 259 and <|im_end|> 260, and a
// post-processor that puts <|endoftext|> first.
#include "engine/text/gpt2_bpe.hpp"

#include <nlohmann/json.hpp>
#include <string>

namespace helios::test {

// `bytes` in GPT-2's byte spelling (U+0120 for a space, ...).
inline std::string gpt2Spelled(const std::string& bytes) {
  std::string s;
  for (unsigned char b : bytes) {
    const uint32_t cp = text::byteToUnicode()[b];
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return s;
}

inline nlohmann::json smallTokenizerJson() {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b)
    vocab[gpt2Spelled(std::string(1, static_cast<char>(b)))] = b;
  vocab[gpt2Spelled(" t")] = 256;
  vocab["he"] = 257;
  vocab[gpt2Spelled(" the")] = 258;
  const nlohmann::json byteLevel = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  const nlohmann::json single =
      nlohmann::json::array({{{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}},
                             {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}});
  return {{"version", "1.0"},
          {"added_tokens",
           {{{"id", 259}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", false}},
            {{"id", 260}, {"content", "<|im_end|>"}, {"special", true}, {"normalized", false}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", byteLevel},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single", single},
            {"special_tokens", {{"<|endoftext|>", {{"id", "<|endoftext|>"}, {"ids", {259}}}}}}}},
          {"decoder", byteLevel},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"vocab", vocab},
            {"merges", nlohmann::json::array({gpt2Spelled(" ") + " t", "h e",
                                              nlohmann::json::array({gpt2Spelled(" t"), "he"})})}}}};
}

} // namespace helios::test
