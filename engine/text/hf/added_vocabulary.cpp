#include "engine/text/hf/added_vocabulary.hpp"

#include "engine/text/unicode.hpp"

namespace helios::text::hf {

namespace {

// Rust's regex \w (tokenizers' single_word test): Alphabetic, marks, decimal digits, connectors, joiners.
bool isWordChar(std::string_view ch) {
  static const Regex word = Regex::oniguruma(R"(\A[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}]\z)");
  return !word.find(ch).empty();
}

std::string_view lastChar(std::string_view s) {
  size_t i = s.size();
  while (i > 0 && (static_cast<uint8_t>(s[i - 1]) & 0xC0) == 0x80)
    --i;
  return s.substr(i > 0 ? i - 1 : 0);
}

std::string_view firstChar(std::string_view s) {
  return s.substr(0, decodeUtf8(s, 0).length);
}

// Where the whitespace run that ends `s` starts.
size_t trailingSpaceStart(std::string_view s) {
  size_t i = s.size();
  while (i > 0) {
    const std::string_view c = lastChar(s.substr(0, i));
    if (!isWhiteSpace(decodeUtf8(c, 0).value)) break;
    i -= c.size();
  }
  return i;
}

size_t leadingSpaceLength(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const CodePoint cp = decodeUtf8(s, i);
    if (!isWhiteSpace(cp.value)) break;
    i += cp.length;
  }
  return i;
}

} // namespace

AddedToken addedTokenFromJson(const nlohmann::json& t, const Field& at) {
  AddedToken a;
  a.content = asString(required(t, "content", at), at["content"]);
  a.special = optBool(t, "special", false, at);
  a.singleWord = optBool(t, "single_word", false, at);
  a.lstrip = optBool(t, "lstrip", false, at);
  a.rstrip = optBool(t, "rstrip", false, at);
  a.normalized = optBool(t, "normalized", !a.special, at);
  return a;
}

void AddedVocabulary::Trie::insert(std::string_view s, int32_t token) {
  int32_t node = 0;
  for (char c : s) {
    const uint64_t key = static_cast<uint64_t>(node) * 256 + static_cast<uint8_t>(c);
    auto it = edges.find(key);
    if (it == edges.end()) {
      it = edges.emplace(key, static_cast<int32_t>(terminal.size())).first;
      terminal.push_back(-1);
    }
    node = it->second;
  }
  terminal[node] = token;
  first[static_cast<uint8_t>(s[0])] = true;
}

std::pair<int32_t, size_t> AddedVocabulary::Trie::longestAt(std::string_view text, size_t pos) const {
  std::pair<int32_t, size_t> best{-1, 0};
  if (!first[static_cast<uint8_t>(text[pos])]) return best;
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto it = edges.find(static_cast<uint64_t>(node) * 256 + static_cast<uint8_t>(text[i]));
    if (it == edges.end()) break;
    node = it->second;
    if (terminal[node] >= 0) best = {terminal[node], i + 1 - pos};
  }
  return best;
}

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens,
                                 const std::function<std::string(std::string_view)>& normalize)
    : tokens_(std::move(tokens)) {
  for (size_t k = 0; k < tokens_.size(); ++k) {
    const AddedToken& t = tokens_[k];
    byContent_[t.content] = t.id;
    byId_[t.id] = k;
    spellings_.push_back(t.normalized ? normalize(t.content) : t.content);
    if (spellings_.back().empty()) continue;
    (t.normalized ? normalized_ : raw_).insert(spellings_.back(), static_cast<int32_t>(k));
  }
}

std::vector<Segment> AddedVocabulary::split(std::string_view text, bool normalizedPass) const {
  const Trie& trie = normalizedPass ? normalized_ : raw_;
  std::vector<Segment> out;
  size_t startOffset = 0;
  for (size_t pos = 0; pos < text.size();) {
    const auto [k, length] = trie.longestAt(text, pos);
    if (k < 0) {
      ++pos;
      continue;
    }
    const AddedToken& t = tokens_[static_cast<size_t>(k)];
    size_t start = pos, stop = pos + length;
    pos = stop;
    if (t.singleWord) {
      const bool before = start > 0 && isWordChar(lastChar(text.substr(0, start)));
      const bool after = stop < text.size() && isWordChar(firstChar(text.substr(stop)));
      if (before || after) continue;
    }
    if (t.lstrip) start = std::max(trailingSpaceStart(text.substr(0, start)), startOffset);
    if (t.rstrip) stop += leadingSpaceLength(text.substr(stop)), pos = stop;
    if (startOffset < start) out.push_back({{startOffset, start}, std::nullopt});
    out.push_back({{start, stop}, t.id});
    startOffset = stop;
  }
  if (startOffset < text.size()) out.push_back({{startOffset, text.size()}, std::nullopt});
  return out;
}

void AddedVocabulary::walk(std::string_view text,
                           const std::function<std::string(std::string_view)>& normalize,
                           const std::function<void(int32_t)>& onToken,
                           const std::function<void(std::string_view, bool)>& onText) const {
  for (const Segment& raw : split(text, false)) {
    if (raw.id) {
      onToken(*raw.id);
      continue;
    }
    const std::string normalized = normalize(text.substr(raw.span.begin, raw.span.end - raw.span.begin));
    for (const Segment& s : split(normalized, true)) {
      if (s.id)
        onToken(*s.id);
      else
        onText(std::string_view(normalized).substr(s.span.begin, s.span.end - s.span.begin),
               raw.span.begin == 0 && s.span.begin == 0);
    }
  }
}

std::optional<int32_t> AddedVocabulary::id(std::string_view content) const {
  const auto it = byContent_.find(std::string(content));
  return it == byContent_.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

const std::string& AddedVocabulary::spelling(int32_t id) const {
  return spellings_.at(byId_.at(id));
}

const AddedToken* AddedVocabulary::byId(int32_t id) const {
  const auto it = byId_.find(id);
  return it == byId_.end() ? nullptr : &tokens_[it->second];
}

} // namespace helios::text::hf
