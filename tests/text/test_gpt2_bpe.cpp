// GPT-2 byte-level BPE against a Python reference of OpenAI's encoder.py (gpt2_reference.py: the original
// regular expression run by Python's re with \p{L} / \p{N} spelled out from unicodedata, and the original
// merge loop). The reference trains a small encoder.json + vocab.bpe on the test strings (the real GPT-2
// files are not available offline); Helios loads them and must produce the same pre-tokenization pieces and
// the same ids, string for string, over fixed cases (contractions, whitespace runs, Unicode, emoji, numbers)
// and fresh random strings; and decode(encode(s)) == s.
#include "engine/text/gpt2_bpe.hpp"
#include "engine/text/gpt2_pretokenize.hpp"
#include "engine/text/load.hpp"
#include "support/process.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kFixed = {
    "Hello world! It's 2024, we've   got 12 apples\n\n  and   don't you'll 'd ",
    "I'm sure they're here; she'd go. 'S 'LL 'Re (not contractions) ''s '''",
    "   leading and trailing   ",
    "trailing newline\n",
    "\n\n\nthree newlines first",
    "tabs\t\tand  \t mixed \n \n whitespace\r\nCRLF",
    "Ünïcödé naïve café – “quotes” 😀😀 中文字符 ١٢٣ ½ Ⅻ\u00a0x\u3000y\u2028z\u0085w",
    "e\u0301 combining, 👍🏽 modifier, 👨‍👩‍👧 joiner, flags 🇩🇪",
    "numbers 3.14159 1,000,000 2nd 42nd 0x1F -7 1e10 ٣٤",
    "snake_case camelCase kebab-case ALLCAPS MiXeD",
    "$100 @user #tag 50% a&b <html> {json: [1,2]}",
    " ",
    "",
    "a",
    "'",
    "'s",
    "  \t",
    "x  ",
    "Ω≈ç√∫˜µ≤≥÷ åß∂ƒ©˙∆˚¬…æ",
    "Привет мир, это тест. Γειά σου Κόσμε. שלום עולם. مرحبا بالعالم",
};

// Pieces the random strings are made of: every class and the edges between them.
const std::vector<std::string> kFragments = {
    "a",    "Z",  "the", "é", "ß",  "Ω",  "ж",  "中",   "字",     "😀",      "🏽",   "e\u0301",
    "0",    "7",  "42",  "٣", "½",  "Ⅻ",  "'",  "'s",   "'ll",    "'t",     "'re",    "'ve",
    "'m",   "'d", "'S",  " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028", "\u0085",
    "\x1c", "!",  "?",   ",", ".",  "—",  "“",  "$",    "_",      "-",      "\x7f"};

std::string randomString() {
  auto& rng = test::rng();
  std::uniform_int_distribution<size_t> len(0, 24), pick(0, kFragments.size() - 1);
  std::string s;
  for (size_t n = len(rng); n > 0; --n)
    s += kFragments[pick(rng)];
  return s;
}

void writeJson(const fs::path& p, const nlohmann::json& j) {
  std::ofstream(p) << j.dump();
}

std::string python() {
  return HELIOS_PYTHON3;
}

} // namespace

TEST_CASE("gpt2 bpe: byte-identical to the reference encoder on fixed and random strings", "[text][gpt2]") {
  if (python().empty()) SKIP("python3 not found at configure time");
  const fs::path dir = fs::temp_directory_path() / ("helios-gpt2-" + std::to_string(test::testSeed()));
  fs::create_directories(dir);
  std::vector<std::string> strings = kFixed;
  for (int i = 0; i < 300; ++i)
    strings.push_back(randomString());
  // Train on the fixed strings and half of the random ones, so that merges across every class exist and
  // some strings hold words the merges never saw.
  nlohmann::json corpus(std::vector<std::string>(strings.begin(), strings.begin() + kFixed.size() + 150));
  writeJson(dir / "corpus.json", corpus);
  writeJson(dir / "strings.json", strings);
  const std::string script = std::string("'") + python() + "' '" + HELIOS_GPT2_REFERENCE + "' ";
  auto r =
      test::runCommand(script + "train '" + (dir / "corpus.json").string() + "' 400 '" + dir.string() + "'");
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  r = test::runCommand(script + "encode '" + dir.string() + "' '" + (dir / "strings.json").string() + "' '" +
                       (dir / "out.json").string() + "'");
  REQUIRE(r.exitCode == 0);
  nlohmann::json expected;
  std::ifstream(dir / "out.json") >> expected;

  const auto tok = text::openTokenizer(dir.string());
  REQUIRE(std::string(tok->kind()) == "gpt2");
  CHECK(tok->endOfText() == static_cast<int32_t>(tok->vocab() - 1));
  CHECK(tok->vocab() > 256 + 300); // the merges made new tokens
  size_t merged = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    INFO("string " << i << ": " << nlohmann::json(strings[i]).dump());
    std::vector<std::string> pieces;
    for (auto p : text::gpt2Pretokenize(strings[i]))
      pieces.emplace_back(p);
    REQUIRE(pieces == expected["pieces"][i].get<std::vector<std::string>>());
    const auto ids = tok->encode(strings[i]);
    REQUIRE(ids == expected["ids"][i].get<std::vector<int32_t>>());
    CHECK(tok->decode(ids) == strings[i]);
    merged += ids.size() < strings[i].size();
  }
  CHECK(merged > strings.size() / 2); // most strings were shortened by merges
  fs::remove_all(dir);
}

TEST_CASE("gpt2 bpe: the byte map spells every byte with one printable character", "[text][gpt2]") {
  const auto& map = text::byteToUnicode();
  std::vector<uint32_t> sorted(map.begin(), map.end());
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
  CHECK(map['A'] == 'A');
  CHECK(map[' '] == 0x120);  // Ġ
  CHECK(map['\n'] == 0x10A); // Ċ
  CHECK(map[0] == 0x100);
  CHECK(map[0xAD] == 0x143); // the soft hyphen is not printable
  CHECK(sorted.back() == 0x143);
}

TEST_CASE("gpt2 bpe: malformed files are refused by name", "[text][gpt2]") {
  nlohmann::json enc;
  for (uint32_t b = 0; b < 256; ++b) {
    std::string s;
    const uint32_t cp = text::byteToUnicode()[b];
    s += cp < 0x80 ? std::string(1, char(cp)) : std::string{char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
    enc[s] = b;
  }
  enc["ab"] = 256;
  CHECK_NOTHROW(text::Gpt2Tokenizer(enc.dump(), "#version: 0.2\na b\n"));
  const text::Gpt2Tokenizer ok(enc.dump(), "#version: 0.2\na b\n");
  CHECK(ok.encode("ab ab") == std::vector<int32_t>{256, ' ', 256}); // byte b has id b here
  CHECK(ok.encode("ba") == std::vector<int32_t>{'b', 'a'});
  CHECK_FALSE(ok.endOfText());
  CHECK_THROWS_WITH(text::Gpt2Tokenizer(enc.dump(), "a b c\n"), ContainsSubstring("vocab.bpe line 1"));
  CHECK_THROWS_WITH(text::Gpt2Tokenizer("[1, 2]", ""), ContainsSubstring("encoder.json"));
  auto missing = enc;
  missing.erase("A");
  missing["zz"] = 65;
  CHECK_THROWS_WITH(text::Gpt2Tokenizer(missing.dump(), ""), ContainsSubstring("no token for byte 0x41"));
  auto twice = enc;
  twice["ab"] = 5;
  CHECK_THROWS_WITH(text::Gpt2Tokenizer(twice.dump(), ""), ContainsSubstring("id 5 is used twice"));
  auto outside = enc;
  outside["ab"] = 900;
  CHECK_THROWS_WITH(text::Gpt2Tokenizer(outside.dump(), ""), ContainsSubstring("not in [0, 257)"));
}
