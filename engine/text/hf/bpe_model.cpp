#include "engine/text/hf/bpe_model.hpp"

#include "engine/text/unicode.hpp"

#include <fmt/format.h>
#include <mutex>
#include <queue>
#include <stdexcept>

namespace helios::text::hf {

namespace {

constexpr size_t kCacheLimit = 1u << 18; // pieces cached before the cache starts over
constexpr size_t kCachedLength = 256;    // longer pieces are not cached (as the library)

uint64_t pairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

// The two tokens of a merge: "a b" (the legacy form; a line starting "#version" is skipped) or [a, b].
std::optional<std::pair<std::string, std::string>> mergePair(const nlohmann::json& m, const Field& at) {
  if (m.is_array()) {
    if (m.size() != 2) at.fail("expected two tokens");
    return std::pair{asString(m[0], at[0]), asString(m[1], at[1])};
  }
  const std::string line = asString(m, at);
  if (line.starts_with("#version")) return std::nullopt;
  const size_t space = line.find(' ');
  if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
    at.fail(fmt::format("'{}' is not two tokens separated by one space", line));
  return std::pair{line.substr(0, space), line.substr(space + 1)};
}

struct QueuedMerge {
  uint32_t rank;
  size_t pos;
  int32_t id;
  bool operator>(const QueuedMerge& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

} // namespace

struct BpeModel::Cache {
  std::mutex mutex;
  std::unordered_map<std::string, std::vector<int32_t>> pieces;
};

BpeModel BpeModel::fromJson(const nlohmann::json& j, const Field& at) {
  BpeModel m;
  const nlohmann::json& dropout = member(j, "dropout", at);
  if (!dropout.is_null() && !(dropout.is_number() && dropout.get<double>() == 0.0))
    at["dropout"].fail("BPE dropout (random merges skipped) is for training; Helios encodes without it");
  m.unk_ = optString(j, "unk_token", at);
  m.prefix_ = optString(j, "continuing_subword_prefix", at).value_or("");
  m.suffix_ = optString(j, "end_of_word_suffix", at).value_or("");
  m.fuseUnk_ = optBool(j, "fuse_unk", false, at);
  m.byteFallback_ = optBool(j, "byte_fallback", false, at);
  m.ignoreMerges_ = optBool(j, "ignore_merges", false, at);
  const nlohmann::json& vocab = required(j, "vocab", at);
  if (!vocab.is_object()) at["vocab"].fail("expected an object of token -> id");
  for (const auto& [token, idJson] : vocab.items()) {
    const int32_t id = asId(idJson, at["vocab"][token]);
    if (static_cast<size_t>(id) >= m.tokens_.size()) {
      m.tokens_.resize(static_cast<size_t>(id) + 1);
      m.present_.resize(static_cast<size_t>(id) + 1);
    }
    if (m.present_[id])
      at["vocab"].fail(fmt::format("tokens '{}' and '{}' both have id {}", m.tokens_[id], token, id));
    m.tokens_[id] = token;
    m.present_[id] = true;
    m.vocab_.emplace(token, id);
  }
  m.readMerges(required(j, "merges", at), at["merges"]);
  m.cache_ = std::make_shared<Cache>();
  return m;
}

void BpeModel::readMerges(const nlohmann::json& merges, const Field& at) {
  if (!merges.is_array()) at.fail("expected a list");
  uint32_t rank = 0;
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto pair = mergePair(merges[i], at[i]);
    if (!pair) continue;
    const auto& [a, b] = *pair;
    const auto ia = vocab_.find(a), ib = vocab_.find(b);
    if (ia == vocab_.end()) at[i].fail(fmt::format("token '{}' is not in the vocabulary", a));
    if (ib == vocab_.end()) at[i].fail(fmt::format("token '{}' is not in the vocabulary", b));
    if (b.size() < prefix_.size())
      at[i].fail(fmt::format("token '{}' is shorter than the subword prefix", b));
    const std::string joined = a + b.substr(prefix_.size());
    const auto merged = vocab_.find(joined);
    if (merged == vocab_.end())
      at[i].fail(fmt::format("the merged token '{}' is not in the vocabulary", joined));
    merges_.insert_or_assign(pairKey(ia->second, ib->second), Merge{rank++, merged->second});
  }
}

std::optional<int32_t> BpeModel::id(std::string_view token) const {
  const auto it = vocab_.find(std::string(token));
  return it == vocab_.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

const std::string* BpeModel::token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size() || !present_[id]) return nullptr;
  return &tokens_[id];
}

const BpeModel::Merge* BpeModel::merge(int32_t a, int32_t b) const {
  const auto it = merges_.find(pairKey(a, b));
  return it == merges_.end() ? nullptr : &it->second;
}

// The piece's characters as ids, before any merge (tokenizers' BPE::merge_word up to merge_all).
std::vector<int32_t> BpeModel::initialSymbols(std::string_view piece) const {
  std::vector<int32_t> ids;
  int32_t unk = -1; // an unknown symbol not yet added (-1: none); fuse_unk extends it
  for (size_t i = 0; i < piece.size();) {
    const uint32_t n = decodeUtf8(piece, i).length;
    std::string s(piece.substr(i, n));
    if (i > 0) s = prefix_ + s;
    if (i + n == piece.size()) s += suffix_;
    i += n;
    if (const auto it = vocab_.find(s); it != vocab_.end()) {
      if (unk >= 0) ids.push_back(unk);
      unk = -1;
      ids.push_back(it->second);
      continue;
    }
    if (byteFallback_) {
      std::vector<int32_t> bytes;
      for (char c : s)
        if (const auto b = id(fmt::format("<0x{:02X}>", static_cast<uint8_t>(c)))) bytes.push_back(*b);
      if (bytes.size() == s.size()) { // every byte has its token (a pending unknown stays pending, as there)
        ids.insert(ids.end(), bytes.begin(), bytes.end());
        continue;
      }
    }
    if (!unk_) continue;
    const auto unkId = id(*unk_);
    if (!unkId)
      throw std::invalid_argument(fmt::format("BPE: the unk_token '{}' is not in the vocabulary", *unk_));
    if (unk >= 0 && !fuseUnk_) ids.push_back(unk);
    unk = *unkId;
  }
  if (unk >= 0) ids.push_back(unk);
  return ids;
}

std::vector<int32_t> BpeModel::mergeWord(std::string_view piece) const {
  std::vector<int32_t> ids = initialSymbols(piece);
  const size_t n = ids.size();
  std::vector<ptrdiff_t> prev(n), next(n);
  std::vector<bool> removed(n, false);
  std::priority_queue<QueuedMerge, std::vector<QueuedMerge>, std::greater<>> queue;
  for (size_t k = 0; k < n; ++k) {
    prev[k] = static_cast<ptrdiff_t>(k) - 1;
    next[k] = k + 1 < n ? static_cast<ptrdiff_t>(k + 1) : -1;
    if (k + 1 < n)
      if (const Merge* m = merge(ids[k], ids[k + 1])) queue.push({m->rank, k, m->id});
  }
  while (!queue.empty()) {
    const QueuedMerge top = queue.top();
    queue.pop();
    if (removed[top.pos] || next[top.pos] < 0) continue;
    const auto right = static_cast<size_t>(next[top.pos]);
    const Merge* current = merge(ids[top.pos], ids[right]);
    if (!current || current->id != top.id) continue; // an expired entry
    ids[top.pos] = top.id;
    removed[right] = true;
    next[top.pos] = next[right];
    if (next[right] >= 0) prev[static_cast<size_t>(next[right])] = static_cast<ptrdiff_t>(top.pos);
    if (prev[top.pos] >= 0) {
      const auto left = static_cast<size_t>(prev[top.pos]);
      if (const Merge* m = merge(ids[left], ids[top.pos])) queue.push({m->rank, left, m->id});
    }
    if (next[top.pos] >= 0)
      if (const Merge* m = merge(ids[top.pos], ids[static_cast<size_t>(next[top.pos])]))
        queue.push({m->rank, top.pos, m->id});
  }
  std::vector<int32_t> out;
  for (size_t k = 0; k < n; ++k)
    if (!removed[k]) out.push_back(ids[k]);
  return out;
}

void BpeModel::tokenize(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (ignoreMerges_)
    if (const auto whole = id(piece)) {
      out.push_back(*whole);
      return;
    }
  const bool cacheable = piece.size() < kCachedLength;
  if (cacheable) {
    std::lock_guard lock(cache_->mutex);
    if (const auto it = cache_->pieces.find(std::string(piece)); it != cache_->pieces.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids = mergeWord(piece);
  out.insert(out.end(), ids.begin(), ids.end());
  if (!cacheable) return;
  std::lock_guard lock(cache_->mutex);
  if (cache_->pieces.size() >= kCacheLimit) cache_->pieces.clear();
  cache_->pieces.emplace(std::string(piece), std::move(ids));
}

} // namespace helios::text::hf
