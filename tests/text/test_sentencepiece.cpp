// SentencePiece through Debian's library: BPE and unigram models trained on a slice of the King James Bible
// (or, without the bootstrap's corpus, on generated text), loaded back from their bytes, encoding and
// decoding text exactly (identity normalization, byte fallback for unseen characters); descriptions and
// files rebuild the same tokenizer, and altered files are refused.
#include "engine/text/load.hpp"
#include "engine/text/sentencepiece.hpp"
#include "engine/text/simple.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <filesystem>
#include <fstream>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

fs::path tempDir() {
  const fs::path d = fs::temp_directory_path() / ("helios-sp-" + std::to_string(test::testSeed()));
  fs::create_directories(d);
  return d;
}

// About 200 KB of text: the KJV's first lines when the bootstrap wrote it, else sentences from a word list.
fs::path corpusFile() {
  static const fs::path path = [] {
    const fs::path out = tempDir() / "corpus.txt";
    std::ofstream o(out, std::ios::binary);
    std::ifstream kjv(fs::path(HELIOS_SOURCE_DIR) / ".deps/corpus/kjv.txt", std::ios::binary);
    std::string line;
    size_t bytes = 0;
    while (kjv && bytes < 200000 && std::getline(kjv, line)) {
      o << line << "\n";
      bytes += line.size() + 1;
    }
    const char* words[] = {"and", "the", "of", "light", "waters", "beginning", "earth", "God", "said", "was"};
    std::uniform_int_distribution<int> w(0, 9);
    while (bytes < 200000) {
      std::string s;
      for (int k = 0; k < 12; ++k)
        s += std::string(words[w(test::rng())]) + (k == 11 ? ".\n" : " ");
      o << s;
      bytes += s.size();
    }
    return out;
  }();
  return path;
}

std::string train(const std::string& type, uint32_t vocab) {
  text::SentencePieceTraining o;
  o.files = {corpusFile()};
  o.vocab = vocab;
  o.type = type;
  o.quiet = true;
  o.threads = 2;
  uint64_t reads = 0;
  o.onRead = [&](uint64_t, uint64_t bytes, uint64_t total) {
    CHECK(bytes <= total + 1);
    ++reads;
  };
  std::string model = text::trainSentencePiece(o);
  CHECK(reads > 0);
  return model;
}

const std::vector<std::string> kTexts = {
    "In the beginning God created the heaven and the earth.",
    "  two leading spaces,\ttabs\tand a newline\nthen more  ",
    "Unseen: Ünïcödé 中文 😀 ½ — “quotes”",
    "",
    "x",
};

} // namespace

TEST_CASE("sentencepiece: BPE and unigram train, load from bytes and round-trip text",
          "[text][sentencepiece]") {
  for (const char* type : {"bpe", "unigram"}) {
    INFO(type);
    const std::string model = train(type, 1000);
    const text::SentencePieceTokenizer tok(model);
    CHECK(tok.vocab() == 1000);
    REQUIRE(tok.endOfText());
    CHECK(tok.decodeToken(*tok.endOfText()).empty()); // </s> prints nothing
    size_t total = 0, bytes = 0;
    for (const auto& s : kTexts) {
      const auto ids = tok.encode(s);
      for (int32_t id : ids)
        REQUIRE((id >= 0 && id < 1000));
      CHECK(tok.decode(ids) == s);
      std::string streamed; // token by token, as sampling prints
      for (int32_t id : ids)
        streamed += tok.decodeToken(id);
      CHECK(streamed == (s.empty() ? s : " " + s)); // the dummy prefix shows when streamed
      total += ids.size();
      bytes += s.size();
    }
    CHECK(total < bytes); // pieces longer than a byte on average
    // A model that learned the corpus encodes its words in few pieces.
    CHECK(tok.encode(" the earth").size() <= 3);
    // Description + files rebuild it; changed files are refused.
    const fs::path dir = tempDir() / type;
    fs::create_directories(dir);
    for (const auto& f : tok.files())
      std::ofstream(dir / f.name, std::ios::binary) << f.bytes;
    const auto again = text::loadTokenizer(tok.describe(), dir);
    CHECK(again->encode(kTexts[0]) == tok.encode(kTexts[0]));
    CHECK(text::openTokenizer((dir / "tokenizer.model").string())->describe() == tok.describe());
    std::ofstream(dir / "tokenizer.model", std::ios::binary) << train(type, 900);
    CHECK_THROWS_WITH(text::loadTokenizer(tok.describe(), dir),
                      ContainsSubstring("are not the ones recorded"));
  }
}

TEST_CASE("sentencepiece: bad models and impossible training are refused with SentencePiece's reason",
          "[text][sentencepiece]") {
  CHECK_THROWS_WITH(text::SentencePieceTokenizer("not a model"),
                    ContainsSubstring("not a SentencePiece model"));
  text::SentencePieceTraining o;
  o.files = {corpusFile()};
  o.vocab = 100000;
  o.quiet = true;
  CHECK_THROWS_WITH(text::trainSentencePiece(o), ContainsSubstring("SentencePiece training"));
  o.type = "wordpiece";
  CHECK_THROWS_WITH(text::trainSentencePiece(o), ContainsSubstring("bpe or unigram"));
  o.type = "bpe";
  o.files = {tempDir() / "missing.txt"};
  CHECK_THROWS(text::trainSentencePiece(o));
}

TEST_CASE("tokenizers: byte and char kinds and what openTokenizer accepts", "[text]") {
  const text::ByteTokenizer byte;
  const std::string s("caf\xC3\xA9 \x00\xFF", 9);
  CHECK(byte.decode(byte.encode(s)) == s);
  CHECK(byte.decodeToken(300) == "?");
  CHECK(text::loadTokenizer(byte.describe(), {})->describe() == byte.describe());
  const auto chars = text::CharTokenizer::fromCorpus("hello");
  CHECK(chars.vocab() == 4);
  CHECK(text::loadTokenizer(chars.describe(), {})->encode("ollhe") == chars.encode("ollhe"));
  CHECK_THROWS_WITH(text::loadTokenizer({{"kind", "char"}, {"chars", {104, 300}}}, {}),
                    ContainsSubstring("300 is not a byte"));
  CHECK_THROWS_WITH(text::loadTokenizer({{"kind", "wordpiece"}}, {}), ContainsSubstring("unknown tokenizer"));
  CHECK_THROWS_WITH(text::openTokenizer((tempDir() / "nothing-here").string()),
                    ContainsSubstring("not 'byte', a SentencePiece .model"));
  CHECK_THROWS_WITH(text::openTokenizer(tempDir().string()), ContainsSubstring("neither encoder.json"));
}
