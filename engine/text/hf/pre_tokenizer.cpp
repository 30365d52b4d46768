#include "engine/text/hf/pre_tokenizer.hpp"

#include "engine/text/gpt2_bpe.hpp"
#include "engine/text/hf/normalizer.hpp"
#include "engine/text/unicode.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <functional>

namespace helios::text::hf {

namespace {

// GPT-2's expression, as ByteLevel's use_regex applies it.
const Regex& gpt2Regex() {
  static const Regex r =
      Regex::oniguruma(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
  return r;
}

// The matches of a pattern as a covering list.
std::vector<Marked> markRegex(std::string_view text, const Regex& r, bool invert) {
  std::vector<Marked> out;
  size_t prev = 0;
  for (const Span& m : r.find(text)) {
    if (prev != m.begin) out.push_back({{prev, m.begin}, invert});
    out.push_back({m, !invert});
    prev = m.end;
  }
  if (prev != text.size()) out.push_back({{prev, text.size()}, invert});
  return out;
}

// Every character for which `is` holds is a match of its own.
std::vector<Marked> markChars(std::string_view text, const std::function<bool(uint32_t)>& is) {
  std::vector<Marked> out;
  size_t last = 0;
  for (size_t i = 0; i < text.size();) {
    const CodePoint cp = decodeUtf8(text, i);
    if (is(cp.value)) {
      if (last < i) out.push_back({{last, i}, false});
      out.push_back({{i, i + cp.length}, true});
      last = i + cp.length;
    }
    i += cp.length;
  }
  if (last < text.size()) out.push_back({{last, text.size()}, false});
  return out;
}

// Folds a match into its neighbour (tokenizers' MergedWithPrevious; MergedWithNext runs it reversed).
std::vector<Marked> mergeMatches(const std::vector<Marked>& marked, bool intoPrevious) {
  std::vector<Marked> acc;
  bool previousMatch = false;
  auto visit = [&](const Marked& m) {
    if (m.match && !previousMatch && !acc.empty()) {
      if (intoPrevious)
        acc.back().span.end = m.span.end;
      else
        acc.back().span.begin = m.span.begin;
    } else {
      acc.push_back({m.span, false});
    }
    previousMatch = m.match;
  };
  if (intoPrevious)
    std::for_each(marked.begin(), marked.end(), visit);
  else
    std::for_each(marked.rbegin(), marked.rend(), visit);
  if (!intoPrevious) std::reverse(acc.begin(), acc.end());
  return acc;
}

std::vector<Marked> contiguous(const std::vector<Marked>& marked) {
  std::vector<Marked> acc;
  bool previousMatch = false;
  for (const Marked& m : marked) {
    if (m.match == previousMatch && !acc.empty())
      acc.back().span.end = m.span.end;
    else
      acc.push_back({m.span, false});
    previousMatch = m.match;
  }
  return acc;
}

void appendPieces(const Piece& piece, std::string_view text, const std::vector<Span>& spans,
                  std::vector<Piece>& out) {
  for (const Span& s : spans)
    out.push_back({std::string(text.substr(s.begin, s.end - s.begin)), piece.atStart && s.begin == 0});
}

std::string byteLevelSpelling(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 2);
  for (char c : text)
    appendUtf8(out, byteToUnicode()[static_cast<uint8_t>(c)]);
  return out;
}

std::string spacesReplaced(std::string_view text, std::string_view replacement) {
  std::string out;
  out.reserve(text.size());
  for (char c : text)
    if (c == ' ')
      out += replacement;
    else
      out += c;
  return out;
}

SplitBehavior behaviorFromJson(const nlohmann::json& j, const Field& at) {
  const std::string b = asString(j, at);
  if (b == "Removed") return SplitBehavior::Removed;
  if (b == "Isolated") return SplitBehavior::Isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (b == "Contiguous") return SplitBehavior::Contiguous;
  at.fail(fmt::format("'{}' is not a split behaviour (Removed, Isolated, MergedWithPrevious, MergedWithNext, "
                      "Contiguous)",
                      b));
}

} // namespace

std::vector<Span> cutSpans(std::vector<Marked> marked, SplitBehavior behavior) {
  switch (behavior) {
  case SplitBehavior::Isolated:
  case SplitBehavior::Removed:
    break;
  case SplitBehavior::Contiguous:
    marked = contiguous(marked);
    break;
  case SplitBehavior::MergedWithPrevious:
    marked = mergeMatches(marked, true);
    break;
  case SplitBehavior::MergedWithNext:
    marked = mergeMatches(marked, false);
    break;
  }
  std::vector<Span> spans;
  for (const Marked& m : marked)
    if (m.span.end > m.span.begin && !(behavior == SplitBehavior::Removed && m.match))
      spans.push_back(m.span);
  return spans;
}

PreTokenizer PreTokenizer::fromJson(const nlohmann::json& j, const Field& at) {
  PreTokenizer p;
  if (!j.is_null()) p.add(j, at);
  return p;
}

void PreTokenizer::add(const nlohmann::json& j, const Field& at) {
  const std::string type = asString(required(j, "type", at), at["type"]);
  Step s{};
  if (type == "Sequence") {
    forEachIn(j, "pretokenizers", at, [this](const nlohmann::json& e, const Field& f) { add(e, f); });
    return;
  }
  if (type == "Split") {
    s.kind = Kind::Split;
    s.pattern = patternFromJson(required(j, "pattern", at), at["pattern"]);
    s.behavior = behaviorFromJson(required(j, "behavior", at), at["behavior"]);
    s.invert = optBool(j, "invert", false, at);
  } else if (type == "ByteLevel") {
    s.kind = Kind::ByteLevel;
    s.flag = optBool(j, "add_prefix_space", true, at);
    s.useRegex = optBool(j, "use_regex", true, at);
  } else if (type == "Digits") {
    s.kind = Kind::Digits;
    s.flag = optBool(j, "individual_digits", false, at);
  } else if (type == "Metaspace") {
    s.kind = Kind::Metaspace;
    s.replacement = asString(required(j, "replacement", at), at["replacement"]);
    if (s.replacement.empty() || decodeUtf8(s.replacement, 0).length != s.replacement.size())
      at["replacement"].fail("expected one character");
    const std::string scheme = optString(j, "prepend_scheme", at).value_or("always");
    s.prepend = scheme == "first" ? Prepend::First : scheme == "never" ? Prepend::Never : Prepend::Always;
    if (scheme != "first" && scheme != "never" && scheme != "always")
      at["prepend_scheme"].fail(fmt::format("'{}' is not always, first or never", scheme));
    if (!optBool(j, "add_prefix_space", true, at)) s.prepend = Prepend::Never;
    s.flag = optBool(j, "split", true, at);
  } else {
    at["type"].fail(fmt::format("pre-tokenizer '{}' is not implemented in Helios (Split, ByteLevel, Digits, "
                                "Metaspace and Sequence are)",
                                type));
  }
  steps_.push_back(std::move(s));
}

void PreTokenizer::run(const Step& s, const Piece& piece, std::vector<Piece>& out) {
  switch (s.kind) {
  case Kind::Split:
    appendPieces(piece, piece.text, cutSpans(markRegex(piece.text, *s.pattern, s.invert), s.behavior), out);
    return;
  case Kind::Digits:
    appendPieces(piece, piece.text,
                 cutSpans(markChars(piece.text, isNumber),
                          s.flag ? SplitBehavior::Isolated : SplitBehavior::Contiguous),
                 out);
    return;
  case Kind::ByteLevel: {
    Piece p = piece;
    if (s.flag && !p.text.starts_with(' ')) p.text.insert(0, 1, ' ');
    std::vector<Piece> parts;
    if (s.useRegex)
      appendPieces(p, p.text, cutSpans(markRegex(p.text, gpt2Regex(), false), SplitBehavior::Isolated),
                   parts);
    else
      parts.push_back(std::move(p));
    for (Piece& part : parts)
      out.push_back({byteLevelSpelling(part.text), part.atStart});
    return;
  }
  case Kind::Metaspace: {
    Piece p{spacesReplaced(piece.text, s.replacement), piece.atStart};
    const bool prepend = s.prepend == Prepend::Always || (s.prepend == Prepend::First && p.atStart);
    if (prepend && !p.text.starts_with(s.replacement)) p.text.insert(0, s.replacement);
    if (!s.flag) {
      out.push_back(std::move(p));
      return;
    }
    const uint32_t r = decodeUtf8(s.replacement, 0).value;
    appendPieces(
        p, p.text,
        cutSpans(markChars(p.text, [r](uint32_t cp) { return cp == r; }), SplitBehavior::MergedWithNext),
        out);
    return;
  }
  }
}

std::vector<Piece> PreTokenizer::apply(Piece piece) const {
  std::vector<Piece> pieces;
  if (!piece.text.empty()) pieces.push_back(std::move(piece));
  for (const Step& s : steps_) {
    std::vector<Piece> next;
    for (const Piece& p : pieces)
      run(s, p, next);
    pieces = std::move(next);
  }
  return pieces;
}

} // namespace helios::text::hf
