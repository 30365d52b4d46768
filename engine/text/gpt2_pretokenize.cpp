#include "engine/text/gpt2_pretokenize.hpp"

#include "engine/text/unicode.hpp"

#include <array>

namespace helios::text {

namespace {

enum class Class { Letter, Number, Space, Other };

Class classify(uint32_t cp) {
  if (isLetter(cp)) return Class::Letter;
  if (isNumber(cp)) return Class::Number;
  if (isWhiteSpace(cp)) return Class::Space;
  return Class::Other;
}

size_t contraction(std::string_view s, size_t i) {
  static constexpr std::array<std::string_view, 7> kSuffixes{"s", "t", "re", "ve", "m", "ll", "d"};
  if (s[i] != '\'') return 0;
  for (std::string_view c : kSuffixes)
    if (s.substr(i + 1).starts_with(c)) return 1 + c.size();
  return 0;
}

// The end of the run of characters of class `c` starting at `i`.
size_t runEnd(std::string_view s, size_t i, Class c) {
  while (i < s.size()) {
    const CodePoint cp = decodeUtf8(s, i);
    if (classify(cp.value) != c) break;
    i += cp.length;
  }
  return i;
}

// The length of the piece starting at `i`.
size_t pieceAt(std::string_view s, size_t i) {
  if (const size_t n = contraction(s, i)) return n;
  const size_t start = s[i] == ' ' && i + 1 < s.size() ? i + 1 : i;
  const Class c = classify(decodeUtf8(s, start).value);
  if (c != Class::Space) return runEnd(s, start, c) - i;
  // Whitespace from i: \s+(?!\S) takes the run, backing off one character when a non-space follows; a
  // single whitespace character before a non-space is \s+ alone.
  size_t end = i, last = i;
  while (end < s.size()) {
    const CodePoint cp = decodeUtf8(s, end);
    if (!isWhiteSpace(cp.value)) break;
    last = end;
    end += cp.length;
  }
  if (end == s.size() || last == i) return end - i;
  return last - i;
}

} // namespace

std::vector<std::string_view> gpt2Pretokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  for (size_t i = 0; i < text.size();) {
    const size_t n = pieceAt(text, i);
    pieces.push_back(text.substr(i, n));
    i += n;
  }
  return pieces;
}

} // namespace helios::text
