// tokenizer.json's regular expressions (engine/text/hf/regex): Oniguruma patterns translated for PCRE2 keep
// Oniguruma's meaning where the two differ (\s is White_Space: U+0085 in, U+180E out; \w takes marks; \h is
// a hex digit; Ruby's (?m) is dot-all), Unicode classes and case folding work on code points, possessive
// quantifiers and lookahead behave, and matches are enumerated as the onig crate does (an empty match right
// after the previous match is skipped). Expected values are written out by hand from the Oniguruma manual.
#include "engine/text/hf/regex.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

using namespace helios::text::hf;
using Catch::Matchers::ContainsSubstring;

namespace {

std::vector<std::string> matches(const Regex& r, std::string_view text) {
  std::vector<std::string> out;
  for (const Span& s : r.find(text))
    out.emplace_back(text.substr(s.begin, s.end - s.begin));
  return out;
}

std::vector<std::string> matches(std::string_view pattern, std::string_view text) {
  return matches(Regex::oniguruma(pattern), text);
}

} // namespace

TEST_CASE("hf regex: Oniguruma's classes", "[text][hf]") {
  CHECK(matches(R"(\s+)", "a\u0085b\u180ec\u3000\u2028d") ==
        std::vector<std::string>{"\u0085", "\u3000\u2028"});
  CHECK(matches(R"(\S+)", "a\u180e b") == std::vector<std::string>{"a\u180e", "b"});
  CHECK(matches(R"([^\s\p{L}]+)", "ab\u0085!?\u180e") == std::vector<std::string>{"!?\u180e"});
  CHECK(matches(R"(\w+)", "e\u0301t\u00e9_x-1\u00bd") ==
        std::vector<std::string>{"e\u0301t\u00e9_x", "1\u00bd"});
  CHECK(matches(R"(\h+)", "xyz 0fA9g") == std::vector<std::string>{"0fA9"});
  CHECK(matches(R"(\bab\b)", "ab a\u0301ab ab") == std::vector<std::string>{"ab", "ab"});
  CHECK(matches(R"(a.b)", "a\nb axb") == std::vector<std::string>{"axb"});
  CHECK(matches(R"((?m:a.b))", "a\nb") == std::vector<std::string>{"a\nb"});
  CHECK(matches(R"(^\d+$)", "12\n34") == std::vector<std::string>{"12", "34"}); // Ruby: line anchors
  CHECK(matches(R"(\p{N}{1,3})", "1234567\u0663\u00bd\u216b") ==
        std::vector<std::string>{"123", "456", "7\u0663\u00bd", "\u216b"});
  CHECK(matches(R"(\u0041+)", "AAB") == std::vector<std::string>{"AA"});
  CHECK(matches(R"(\v)", "a\x0b\n") == std::vector<std::string>{"\x0b"});
}

TEST_CASE("hf regex: case folding, possessive quantifiers, lookahead", "[text][hf]") {
  const std::string contractions = R"((?i:'s|'t|'re|'ve|'m|'ll|'d))";
  CHECK(matches(contractions, "it's IT'S 'LL 'Ve '\u017f") ==
        std::vector<std::string>{"'s", "'S", "'LL", "'Ve", "'\u017f"});
  // [^\r\n\p{L}\p{N}]?+ takes the space and never gives it back: " 1" has no letter after it.
  CHECK(matches(R"([^\r\n\p{L}\p{N}]?+\p{L}+)", " ab  cd") == std::vector<std::string>{" ab", " cd"});
  CHECK(matches(R"( ?[^\s\p{L}\p{N}]++[\r\n]*)", "a !!\n\nb") == std::vector<std::string>{" !!\n\n"});
  // \s+(?!\S) leaves the last space of a run to the word after it.
  CHECK(matches(R"(\s+(?!\S)|\s+)", "a   b  ") == std::vector<std::string>{"  ", " ", "  "});
}

TEST_CASE("hf regex: matches are enumerated as the onig crate does", "[text][hf]") {
  // An empty match right where the previous match ended is skipped by one character.
  CHECK(matches("x*", "axxb") == std::vector<std::string>{"", "xx", ""});
  CHECK(matches("", "ab").size() == 3);
  const Regex lit = Regex::literal("a.b");
  CHECK(matches(lit, "a.b axb a.ba.b") == std::vector<std::string>{"a.b", "a.b", "a.b"});
  CHECK(matches(R"(\p{L}+)", std::string("a\0b", 3)) == std::vector<std::string>{"a", "b"});
}

TEST_CASE("hf regex: constructs without a PCRE2 equivalent are refused by name", "[text][hf]") {
  CHECK_THROWS_WITH(Regex::oniguruma("[a-z&&[^aeiou]]"), ContainsSubstring("class intersection"));
  CHECK_THROWS_WITH(Regex::oniguruma("[a[bc]]"), ContainsSubstring("nested character class"));
  CHECK_THROWS_WITH(Regex::oniguruma(R"([\W])"), ContainsSubstring("\\W inside a character class"));
  CHECK_THROWS_WITH(Regex::oniguruma("(ab"), ContainsSubstring("regular expression '(ab'") &&
                                                 ContainsSubstring("missing closing parenthesis"));
  CHECK_THROWS_WITH(Regex::literal(""), ContainsSubstring("empty"));
  CHECK(onigToPcre2(R"([[:alpha:]\s])") == R"([[:alpha:]\p{White_Space}])");
  CHECK(onigToPcre2(R"((?im-x:a))") == R"((?is-x:a))");
}
