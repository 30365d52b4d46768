#pragma once
// Added tokens (tokenizer.json's added_tokens, tokenizer_config.json's added_tokens_decoder): strings cut
// out of the text before normalization and pre-tokenization and encoded as their own id, as the tokenizers
// library does: the leftmost match wins, the longest at that place; single_word keeps only a match with no
// word character (Unicode \w) beside it, lstrip / rstrip take the whitespace on that side along. Tokens with
// normalized: false match the raw text, the others the normalized text of what lies between.
#include "engine/text/hf/json_field.hpp"
#include "engine/text/hf/regex.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace helios::text::hf {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false, singleWord = false, lstrip = false, rstrip = false, normalized = true;
};

// An added token's string and flags as tokenizer.json and tokenizer_config.json write them (the id is the
// caller's): normalized defaults to !special, the rest to false.
AddedToken addedTokenFromJson(const nlohmann::json& t, const Field& at);

// A stretch of text: an added token (id) or text to encode (no id).
struct Segment {
  Span span;
  std::optional<int32_t> id;
};

class AddedVocabulary {
public:
  AddedVocabulary() = default;
  // `normalize` is the normalizer: a normalized token matches its normalized content.
  AddedVocabulary(std::vector<AddedToken> tokens,
                  const std::function<std::string(std::string_view)>& normalize);

  // `text` cut at the tokens matched on raw text (normalizedPass false) or on normalized text (true).
  std::vector<Segment> split(std::string_view text, bool normalizedPass) const;

  // The whole cut, in text order: `text` is cut at the raw-text tokens, each stretch between is normalized by
  // `normalize` and cut at the normalized tokens; onToken gets each token's id, onText each stretch left (and
  // whether it starts the text).
  void walk(std::string_view text, const std::function<std::string(std::string_view)>& normalize,
            const std::function<void(int32_t)>& onToken,
            const std::function<void(std::string_view, bool)>& onText) const;

  std::optional<int32_t> id(std::string_view content) const;
  const AddedToken* byId(int32_t id) const;
  // What a token decodes from: a normalized token's normalized content (as the library), else its content.
  const std::string& spelling(int32_t id) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

private:
  // The byte trie of one pass's token strings.
  struct Trie {
    std::vector<int32_t> terminal{-1};           // node -> index into tokens_, or -1
    std::unordered_map<uint64_t, int32_t> edges; // node * 256 + byte -> node
    bool first[256] = {};
    void insert(std::string_view s, int32_t token);
    // The longest token starting at `pos`: (token index, length), or token -1.
    std::pair<int32_t, size_t> longestAt(std::string_view text, size_t pos) const;
  };
  std::vector<AddedToken> tokens_;
  std::vector<std::string> spellings_; // by index into tokens_
  std::unordered_map<std::string, int32_t> byContent_;
  std::unordered_map<int32_t, size_t> byId_;
  Trie raw_, normalized_;
};

} // namespace helios::text::hf
