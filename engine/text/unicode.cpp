#include "engine/text/unicode.hpp"

#include <algorithm>
#include <iterator>

namespace helios::text {

namespace {

struct CodeRange {
  uint32_t first, last;
};

#include "engine/text/unicode_ranges.inc"

template <size_t N> bool inRanges(const CodeRange (&ranges)[N], uint32_t cp) {
  const auto it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                                   [](uint32_t v, const CodeRange& r) { return v < r.first; });
  return it != std::begin(ranges) && cp <= std::prev(it)->last;
}

bool continuation(std::string_view s, size_t i) {
  return i < s.size() && (static_cast<uint8_t>(s[i]) & 0xC0) == 0x80;
}

} // namespace

CodePoint decodeUtf8(std::string_view s, size_t i) {
  const uint8_t b = static_cast<uint8_t>(s[i]);
  if (b < 0x80) return {b, 1};
  uint32_t len = 0, cp = 0, min = 0;
  if ((b & 0xE0) == 0xC0)
    len = 2, cp = b & 0x1F, min = 0x80;
  else if ((b & 0xF0) == 0xE0)
    len = 3, cp = b & 0x0F, min = 0x800;
  else if ((b & 0xF8) == 0xF0)
    len = 4, cp = b & 0x07, min = 0x10000;
  else
    return {kInvalidCodePoint, 1};
  for (uint32_t k = 1; k < len; ++k) {
    if (!continuation(s, i + k)) return {kInvalidCodePoint, 1};
    cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {kInvalidCodePoint, 1};
  return {cp, len};
}

void appendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::optional<size_t> invalidUtf8At(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const CodePoint cp = decodeUtf8(s, i);
    if (cp.value == kInvalidCodePoint) return i;
    i += cp.length;
  }
  return std::nullopt;
}

bool isLetter(uint32_t cp) {
  return cp != kInvalidCodePoint && inRanges(kLetterRanges, cp);
}

bool isNumber(uint32_t cp) {
  return cp != kInvalidCodePoint && inRanges(kNumberRanges, cp);
}

bool isWhiteSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

} // namespace helios::text
