// SentencePiece through Debian's library: BPE and unigram models trained on a slice of the King James Bible
// (or, without the bootstrap's corpus, on generated text), loaded back from their bytes, encoding and
// decoding text exactly (identity normalization, byte fallback for unseen characters); descriptions and
// files rebuild the same tokenizer, and altered files are refused. A Hugging Face directory's tokenizer.model
// takes its special tokens, BOS/EOS and chat template from the configuration files beside it.
#include "engine/text/load.hpp"
#include "engine/text/sentencepiece.hpp"
#include "engine/text/simple.hpp"
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

TEST_CASE("sentencepiece: a Hugging Face directory's tokenizer.model with its configuration files",
          "[text][sentencepiece]") {
  const std::string model = train("bpe", 600);
  const text::SentencePieceTokenizer bare(model);
  const fs::path dir = tempDir() / "hf-dir";
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.model", std::ios::binary) << model;
  // Llama 2's layout: <unk>, <s>, </s> are pieces 0, 1, 2 and added tokens; one more token past the model.
  const nlohmann::json config = {
      {"bos_token", "<s>"},
      {"eos_token", {{"content", "</s>"}, {"__type", "AddedToken"}}},
      {"add_bos_token", true},
      {"add_eos_token", false},
      {"chat_template", "[INST] {{ messages }} [/INST]"},
      {"added_tokens_decoder",
       {{"0", {{"content", "<unk>"}, {"special", true}, {"normalized", false}}},
        {"1", {{"content", "<s>"}, {"special", true}, {"normalized", false}}},
        {"2", {{"content", "</s>"}, {"special", true}, {"normalized", false}}},
        {"600", {{"content", "<|extra|>"}, {"special", true}, {"normalized", false}, {"rstrip", true}}}}}};
  std::ofstream(dir / "tokenizer_config.json") << config.dump(2);
  std::ofstream(dir / "generation_config.json") << R"({"eos_token_id": [2, 600]})";
  const auto tok = text::openTokenizer(dir.string());
  REQUIRE(std::string(tok->kind()) == "sentencepiece");
  CHECK(tok->vocab() == 601);
  CHECK(tok->bos() == 1);
  CHECK(tok->eosIds() == std::vector<int32_t>{2, 600});
  CHECK(tok->endOfText() == 2);
  CHECK(tok->tokenId("<|extra|>") == 600);
  CHECK(tok->tokenId("<|nope|>") == std::nullopt);
  CHECK(tok->chatTemplate() == "[INST] {{ messages }} [/INST]");
  CHECK(tok->sequenceSpecials() == text::SequenceSpecials{{1}, {}});
  // Added tokens are cut out first; each stretch between them is SentencePiece's encoding of it alone.
  auto concat = [&](std::initializer_list<std::vector<int32_t>> parts) {
    std::vector<int32_t> all;
    for (const auto& p : parts)
      all.insert(all.end(), p.begin(), p.end());
    return all;
  };
  CHECK(tok->encode("<s>In the beginning</s>and <|extra|>  God") ==
        concat({{1}, bare.encode("In the beginning"), {2}, bare.encode("and "), {600}, bare.encode("God")}));
  CHECK(tok->encode(kTexts[0]) == bare.encode(kTexts[0]));
  CHECK(tok->decode(tok->encode("<s>the earth</s>")) == "<s>the earth</s>");
  CHECK(tok->decodeToken(600) == "<|extra|>");
  // The configuration travels with the model; a bare model keeps its old description.
  std::vector<std::string> names;
  for (const auto& f : tok->files())
    names.push_back(f.name);
  CHECK(names ==
        std::vector<std::string>{"tokenizer.model", "tokenizer_config.json", "generation_config.json"});
  CHECK(bare.describe()["files"] == nlohmann::json{"tokenizer.model"});
  CHECK(tok->describe() != bare.describe());
  const fs::path saved = tempDir() / "hf-saved";
  fs::create_directories(saved);
  for (const auto& f : tok->files())
    std::ofstream(saved / f.name, std::ios::binary) << f.bytes;
  CHECK(text::loadTokenizer(tok->describe(), saved)->encode("a<s>b") == tok->encode("a<s>b"));
  CHECK(text::openTokenizer((dir / "tokenizer.model").string())->describe() == bare.describe());
  std::ofstream(dir / "tokenizer_config.json") << R"({"bos_token": "<missing>"})";
  CHECK_THROWS_WITH(text::openTokenizer(dir.string()),
                    ContainsSubstring("tokenizer_config.json: bos_token '<missing>' is not a token"));
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
