// The Unicode facts under GPT-2's pre-tokenizer: UTF-8 decoding (and refusing what is not UTF-8) and the
// letter / number / white-space classes at known code points and range edges.
#include "engine/text/unicode.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>

using namespace helios::text;

TEST_CASE("unicode: UTF-8 round trips every scalar value class", "[text]") {
  std::uniform_int_distribution<uint32_t> any(0, 0x10FFFF);
  for (int i = 0; i < 20000; ++i) {
    uint32_t cp = any(helios::test::rng());
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    appendUtf8(s, cp);
    const CodePoint d = decodeUtf8(s, 0);
    INFO(std::hex << cp);
    REQUIRE(d.value == cp);
    REQUIRE(d.length == s.size());
  }
  for (uint32_t cp : {0x0u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
    std::string s;
    appendUtf8(s, cp);
    CHECK(decodeUtf8(s, 0).value == cp);
  }
}

TEST_CASE("unicode: malformed UTF-8 decodes one byte at a time to the invalid marker", "[text]") {
  for (const char* bad :
       {"\x80", "\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xC3", "\xE2\x82", "\xFF"}) {
    const CodePoint d = decodeUtf8(bad, 0);
    CHECK(d.value == kInvalidCodePoint);
    CHECK(d.length == 1);
    CHECK_FALSE(isLetter(d.value));
    CHECK_FALSE(isNumber(d.value));
    CHECK_FALSE(isWhiteSpace(d.value));
  }
}

TEST_CASE("unicode: letter, number and white-space classes", "[text]") {
  for (uint32_t cp : {0x41u, 0x5Au, 0x61u, 0x7Au, 0xAAu, 0xB5u, 0xC0u, 0xDFu, 0x3A9u, 0x416u, 0x5D0u, 0x627u,
                      0x4E2Du, 0xAC00u, 0x1D400u, 0x20000u, 0x2B0u /* Lm */})
    CHECK(isLetter(cp));
  for (uint32_t cp : {0x30u, 0x39u, 0xB2u /* No */, 0xBDu, 0x663u, 0x2160u /* Nl */, 0x216Bu, 0x1D7CEu})
    CHECK(isNumber(cp));
  for (uint32_t cp : {0x20u, 0x27u, 0x2Du, 0x5Fu, 0xD7u, 0x301u /* Mn */, 0x2014u, 0x1F600u, 0x1F3FDu, 0x0u})
    CHECK_FALSE((isLetter(cp) || isNumber(cp)));
  for (uint32_t cp : {0x30u, 0x41u})
    CHECK_FALSE(isWhiteSpace(cp));
  for (uint32_t cp : {0x9u, 0xAu, 0xBu, 0xCu, 0xDu, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u, 0x200Au, 0x2028u,
                      0x2029u, 0x202Fu, 0x205Fu, 0x3000u})
    CHECK(isWhiteSpace(cp));
  for (uint32_t cp : {0x1Cu, 0x200Bu, 0x180Eu})
    CHECK_FALSE(isWhiteSpace(cp)); // not White_Space (str.isspace() disagrees on U+001C)
}
