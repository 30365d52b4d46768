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

// The matches of a pattern and the stretches between them, in order, to `each` (span, is a match).
void forEachMarked(std::string_view text, const Regex& r, bool invert,
                   const std::function<void(Marked)>& each) {
  size_t prev = 0;
  r.forEach(text, [&](Span m) {
    if (prev != m.begin) each({{prev, m.begin}, invert});
    each({m, !invert});
    prev = m.end;
  });
  if (prev != text.size()) each({{prev, text.size()}, invert});
}

std::vector<Marked> markRegex(std::string_view text, const Regex& r, bool invert) {
  std::vector<Marked> out;
  forEachMarked(text, r, invert, [&out](Marked m) { out.push_back(m); });
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

using Emit = std::function<void(Piece)>;

// Each span of `text` as a piece (the first keeps `atStart` where it starts the text).
void emitPieces(bool atStart, std::string_view text, const std::vector<Span>& spans, const Emit& emit) {
  for (const Span& s : spans)
    emit({std::string(text.substr(s.begin, s.end - s.begin)), atStart && s.begin == 0});
}

// A pattern's pieces under a behaviour; Isolated and Removed (each stretch on its own, matches kept or not)
// go straight from the matches, without a list of the whole text's spans.
void emitSplit(bool atStart, std::string_view text, const Regex& r, bool invert, SplitBehavior b,
               const Emit& emit) {
  if (b != SplitBehavior::Isolated && b != SplitBehavior::Removed)
    return emitPieces(atStart, text, cutSpans(markRegex(text, r, invert), b), emit);
  forEachMarked(text, r, invert, [&](Marked m) {
    if (m.span.end > m.span.begin && !(b == SplitBehavior::Removed && m.match))
      emit({std::string(text.substr(m.span.begin, m.span.end - m.span.begin)), atStart && m.span.begin == 0});
  });
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

void PreTokenizer::run(const Step& s, const Piece& piece, const Emit& emit) {
  switch (s.kind) {
  case Kind::Split:
    emitSplit(piece.atStart, piece.text, *s.pattern, s.invert, s.behavior, emit);
    return;
  case Kind::Digits:
    emitPieces(piece.atStart, piece.text,
               cutSpans(markChars(piece.text, isNumber),
                        s.flag ? SplitBehavior::Isolated : SplitBehavior::Contiguous),
               emit);
    return;
  case Kind::ByteLevel: {
    const bool prefix = s.flag && !piece.text.starts_with(' ');
    const std::string text = prefix ? " " + piece.text : piece.text;
    const auto spell = [&emit](Piece part) { emit({byteLevelSpelling(part.text), part.atStart}); };
    if (s.useRegex)
      emitSplit(piece.atStart, text, gpt2Regex(), false, SplitBehavior::Isolated, spell);
    else
      spell({text, piece.atStart});
    return;
  }
  case Kind::Metaspace: {
    Piece p{spacesReplaced(piece.text, s.replacement), piece.atStart};
    const bool prepend = s.prepend == Prepend::Always || (s.prepend == Prepend::First && p.atStart);
    if (prepend && !p.text.starts_with(s.replacement)) p.text.insert(0, s.replacement);
    if (!s.flag) return emit(std::move(p));
    const uint32_t r = decodeUtf8(s.replacement, 0).value;
    emitPieces(
        p.atStart, p.text,
        cutSpans(markChars(p.text, [r](uint32_t cp) { return cp == r; }), SplitBehavior::MergedWithNext),
        emit);
    return;
  }
  }
}

// Step `k` on `piece`, each of its pieces through the steps after it, the last ones to `each`.
void PreTokenizer::runFrom(size_t k, Piece piece, const Emit& each) const {
  if (k == steps_.size()) return each(std::move(piece));
  run(steps_[k], piece, [&](Piece next) { runFrom(k + 1, std::move(next), each); });
}

void PreTokenizer::apply(Piece piece, const std::function<void(Piece)>& each) const {
  if (!piece.text.empty()) runFrom(0, std::move(piece), each);
}

} // namespace helios::text::hf
