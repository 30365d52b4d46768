#pragma once
// The files beside a model's tokenizer that name its special tokens: tokenizer_config.json (bos_token,
// eos_token, unk_token, pad_token as strings or {"content": ...}; add_bos_token, add_eos_token;
// chat_template as a string or a list of named templates; added_tokens_decoder), special_tokens_map.json
// (the same token fields, where tokenizer_config.json leaves them out), chat_template.jinja (the template
// as transformers now saves it, preferred) and generation_config.json (eos_token_id: an id or a list).
#include "engine/text/hf/added_vocabulary.hpp"
#include "engine/text/tokenizer.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace helios::text::hf {

struct TokenizerConfig {
  std::optional<std::string> bos, eos, unk, pad; // the tokens' strings
  std::optional<bool> addBos, addEos;
  std::string chatTemplate;
  std::vector<AddedToken> addedTokens; // added_tokens_decoder, in id order
  std::vector<int32_t> generationEos;  // generation_config.json's eos_token_id
};

// The ids the configuration names, looked up by `idOf` (the tokenizer's tokenId): bos; eos (eos_token, then
// generation_config.json's ids); the end-of-text token that separates documents (eos_token, else the first
// generation eos id, else a token "<|endoftext|>"). A named token the tokenizer lacks is refused.
struct SpecialIds {
  std::optional<int32_t> bos, endOfText;
  std::vector<int32_t> eos;
};
SpecialIds resolveSpecialIds(const TokenizerConfig& c,
                             const std::function<std::optional<int32_t>(std::string_view)>& idOf);

// From whichever of the files are among `files` (none: an empty configuration). Throws std::invalid_argument
// naming the file and field that is malformed.
TokenizerConfig readTokenizerConfig(const std::vector<TokenizerFile>& files);

// The file named `name` among `files`, or null.
const TokenizerFile* findFile(const std::vector<TokenizerFile>& files, std::string_view name);

} // namespace helios::text::hf
