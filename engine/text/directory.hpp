#pragma once
// A Hugging Face model directory's tokenizer files, carried byte for byte (into checkpoints, token shards and
// exports) so that transformers' AutoTokenizer loads what Helios saves.
#include "engine/text/tokenizer.hpp"

#include <array>
#include <filesystem>
#include <vector>

namespace helios::text {

// In the order they are carried: tokenizer.json (the tokenizers library's file), tokenizer_config.json
// and special_tokens_map.json (special tokens, chat template), generation_config.json (the ids that end a
// generation), chat_template.jinja (the template where transformers saves it apart), tokenizer.model
// (SentencePiece).
inline constexpr std::array<const char*, 6> kTokenizerFileNames = {
    "tokenizer.json",         "tokenizer_config.json", "special_tokens_map.json",
    "generation_config.json", "chat_template.jinja",   "tokenizer.model"};

// Those of them present in `dir`.
std::vector<TokenizerFile> readTokenizerFiles(const std::filesystem::path& dir);

// The FNV-1a hash of the files' names and bytes, in order: a description's "fnv1a64".
std::string filesHash(const std::vector<TokenizerFile>& files);

} // namespace helios::text
