#pragma once
// The few Unicode facts GPT-2's pre-tokenizer needs: UTF-8 decoding and the letter (L*), number (N*) and
// White_Space classes of a code point. The L and N ranges are generated from the Unicode database
// (tools/unicode/gen_ranges.py -> unicode_ranges.inc).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace helios::text {

// The code point starting at s[i] and its length in bytes. A byte that does not start a well-formed UTF-8
// sequence decodes alone to 0xFFFFFFFF (in no class: it pre-tokenizes as "other").
struct CodePoint {
  uint32_t value = 0;
  uint32_t length = 1;
};
inline constexpr uint32_t kInvalidCodePoint = 0xFFFFFFFFu;
CodePoint decodeUtf8(std::string_view s, size_t i);
void appendUtf8(std::string& out, uint32_t cp);
// The offset of the first byte that does not start a well-formed UTF-8 sequence, or nullopt.
std::optional<size_t> invalidUtf8At(std::string_view s);

bool isLetter(uint32_t cp);
bool isNumber(uint32_t cp);
bool isWhiteSpace(uint32_t cp); // the White_Space property: \t \n \v \f \r, space, U+0085, U+00A0, ...

} // namespace helios::text
