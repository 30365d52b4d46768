#pragma once
// tokenizer.json's "model" of type BPE, as the tokenizers library computes it: a piece's characters (with
// continuing_subword_prefix before every character but the first, end_of_word_suffix after the last) are
// looked up in the vocabulary — missing ones become <0xXX> byte tokens where byte_fallback is set, else the
// unk_token (consecutive ones fused where fuse_unk is set), else nothing (the library drops them too) —
// then the adjacent pair of lowest merge rank is merged, leftmost first, until no pair has a merge. With
// ignore_merges a piece that is itself in the vocabulary is that one token. Pieces are cached, as the
// library does. dropout (random merges skipped while training) is refused.
#include "engine/text/hf/json_field.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace helios::text::hf {

class BpeModel {
public:
  static BpeModel fromJson(const nlohmann::json& model, const Field& at);

  // Appends the ids of one pre-tokenized piece (in the vocabulary's spelling).
  void tokenize(std::string_view piece, std::vector<int32_t>& out) const;

  std::optional<int32_t> id(std::string_view token) const;
  // The token with this id, or null.
  const std::string* token(int32_t id) const;
  size_t size() const { return vocab_.size(); } // entries, as tokenizers' get_vocab_size
  int32_t maxId() const { return static_cast<int32_t>(tokens_.size()) - 1; }

private:
  struct Merge {
    uint32_t rank;
    int32_t id;
  };
  struct Cache;
  std::vector<int32_t> mergeWord(std::string_view piece) const;
  std::vector<int32_t> initialSymbols(std::string_view piece) const;
  const Merge* merge(int32_t a, int32_t b) const;
  void readMerges(const nlohmann::json& merges, const Field& at);

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> tokens_; // by id; "" where no entry has the id
  std::vector<bool> present_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::optional<std::string> unk_;
  std::string prefix_, suffix_;
  bool fuseUnk_ = false, byteFallback_ = false, ignoreMerges_ = false;
  std::shared_ptr<Cache> cache_;
};

} // namespace helios::text::hf
