// The tokenizer files a Hugging Face export writes (engine/train/hf_tokenizer): GPT-2 BPE's vocab.json and
// merges.txt, read back by Helios' own GPT-2 loader, encode fresh random strings exactly as the original
// tokenizer does; merges.txt leads with the "#version" line GPT2Tokenizer skips unread; tokenizer_config.json
// and special_tokens_map.json name <|endoftext|> only where the vocabulary has it; SentencePiece travels as
// tokenizer.model alone (encoding the same); a tokenizer.json directory leaves byte for byte as it came;
// byte-level writes nothing and says so.
#include "common.hpp"
#include "engine/text/gpt2_bpe.hpp"
#include "engine/text/load.hpp"
#include "engine/text/sentencepiece.hpp"
#include "engine/train/hf_tokenizer.hpp"
#include "support/hf_tokenizer_json.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fstream>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

std::string spelled(const std::string& bytes) {
  return test::gpt2Spelled(bytes);
}

struct Gpt2Files {
  std::string encoderJson, vocabBpe;
};

// A small GPT-2 vocabulary: the 256 bytes, then each word built up left to right by merges (so every merge
// makes a token the encoder has), then <|endoftext|> when asked for.
Gpt2Files smallGpt2(bool endOfText, bool versionLine) {
  nlohmann::json enc = nlohmann::json::object();
  for (uint32_t b = 0; b < 256; ++b)
    enc[spelled(std::string(1, static_cast<char>(b)))] = b;
  std::string merges = versionLine ? "#version: 0.2\n" : "";
  const char* words[] = {" the", " and", "ing", " God", "'s", " light", " waters", "er", " 12", "é", "中文"};
  for (const std::string word : words) {
    std::string built(1, word[0]);
    for (size_t i = 1; i < word.size(); ++i) {
      const std::string next(1, word[i]);
      if (!enc.contains(spelled(built + next))) {
        merges += spelled(built) + " " + spelled(next) + "\n";
        enc[spelled(built + next)] = enc.size();
      }
      built += next;
    }
  }
  if (endOfText) enc["<|endoftext|>"] = enc.size();
  merges.pop_back(); // no final newline: the export must add the one GPT2Tokenizer drops
  return {enc.dump(), merges};
}

std::string randomText() {
  static const std::vector<std::string> fragments = {" the", " and", "ing", " God", "'s",   "'ll", " light",
                                                     "er",   " 12",  "3",   "é",    "中文", " ",   "  ",
                                                     "\n",   "x",    "T",   "!",    "😀",    "\t",  "waters"};
  std::uniform_int_distribution<size_t> len(0, 30), pick(0, fragments.size() - 1);
  std::string s;
  for (size_t n = len(test::rng()); n > 0; --n)
    s += fragments[pick(test::rng())];
  return s;
}

std::string readText(const fs::path& p) {
  return text::readWholeFile(p);
}

void writeAll(const train::HfTokenizerFiles& files, const fs::path& dir) {
  for (const auto& f : files.files)
    std::ofstream(dir / f.name, std::ios::binary) << f.bytes;
}

std::vector<std::string> names(const train::HfTokenizerFiles& files) {
  std::vector<std::string> n;
  for (const auto& f : files.files)
    n.push_back(f.name);
  std::sort(n.begin(), n.end());
  return n;
}

} // namespace

TEST_CASE("hf tokenizer: GPT-2 vocab.json + merges.txt encode exactly as the original", "[train][hf]") {
  for (const bool eot : {true, false}) {
    for (const bool versionLine : {false, true}) {
      INFO("end-of-text " << eot << ", #version line " << versionLine);
      const Gpt2Files src = smallGpt2(eot, versionLine);
      const text::Gpt2Tokenizer original(src.encoderJson, src.vocabBpe);
      const auto files = train::hfTokenizerFiles(original, 77);
      const fs::path dir = test::tempDir("hf-tokenizer-gpt2");
      writeAll(files, dir);
      std::vector<std::string> expected = {"merges.txt", "tokenizer_config.json", "vocab.json"};
      if (eot) expected.insert(expected.begin() + 1, "special_tokens_map.json");
      CHECK(names(files) == expected);
      CHECK_THAT(files.note, ContainsSubstring("vocab.json") && ContainsSubstring("merges.txt"));

      // GPT2Tokenizer drops merges.txt's first line and its last split: a "#version" line, then a newline.
      const std::string merges = readText(dir / "merges.txt");
      CHECK(merges.starts_with("#version"));
      CHECK(merges.find("#version", 1) == std::string::npos);
      CHECK(merges.ends_with("\n"));
      CHECK(nlohmann::json::parse(readText(dir / "vocab.json")) == nlohmann::json::parse(src.encoderJson));

      const auto config = nlohmann::json::parse(readText(dir / "tokenizer_config.json"));
      CHECK(config["tokenizer_class"] == "GPT2Tokenizer");
      CHECK(config["model_max_length"] == 77);
      CHECK(config.contains("eos_token") == eot);
      if (eot) {
        CHECK(config["eos_token"] == "<|endoftext|>");
        const auto special = nlohmann::json::parse(readText(dir / "special_tokens_map.json"));
        CHECK(special["eos_token"] == "<|endoftext|>");
        CHECK(special["bos_token"] == "<|endoftext|>");
      }

      const auto back = text::openTokenizer(dir.string()); // vocab.json + merges.txt
      REQUIRE(std::string(back->kind()) == "gpt2");
      CHECK(back->vocab() == original.vocab());
      CHECK(back->endOfText() == original.endOfText());
      std::vector<std::string> texts = {"In the beginning God's light and the waters", " 123 éé 中文中文 ",
                                        "", "the"};
      for (int i = 0; i < 60; ++i)
        texts.push_back(randomText());
      size_t merged = 0;
      for (const auto& t : texts) {
        INFO(nlohmann::json(t).dump());
        const auto ids = original.encode(t);
        REQUIRE(back->encode(t) == ids);
        merged += ids.size() < t.size();
      }
      CHECK(merged > texts.size() / 2); // the merges were in use
      fs::remove_all(dir);
    }
  }
}

TEST_CASE("hf tokenizer: SentencePiece as tokenizer.model alone; byte-level writes none", "[train][hf]") {
  const fs::path dir = test::tempDir("hf-tokenizer-sp");
  {
    std::ofstream corpus(dir / "corpus.txt");
    const char* words[] = {"and", "the", "of", "light", "waters", "beginning", "earth", "God", "said", "was"};
    std::uniform_int_distribution<int> w(0, 9);
    for (int line = 0; line < 400; ++line) {
      for (int k = 0; k < 10; ++k)
        corpus << words[w(test::rng())] << (k == 9 ? ".\n" : " ");
    }
  }
  text::SentencePieceTraining o;
  o.files = {dir / "corpus.txt"};
  o.vocab = 320; // 256 byte-fallback pieces, the meta pieces, the letters and some merges
  o.quiet = true;
  o.threads = 2;
  const text::SentencePieceTokenizer original(text::trainSentencePiece(o));
  const auto files = train::hfTokenizerFiles(original, 64);
  CHECK(names(files) == std::vector<std::string>{"tokenizer.model"});
  CHECK_THAT(files.note,
             ContainsSubstring("tokenizer.model") && ContainsSubstring("no tokenizer_config.json"));
  const fs::path out = dir / "hf";
  fs::create_directories(out);
  writeAll(files, out);
  const auto back = text::openTokenizer(out.string());
  REQUIRE(std::string(back->kind()) == "sentencepiece");
  for (const std::string t : {"the light was said", "  and\tGod  ", "unseen: Ünï 中文", ""})
    CHECK(back->encode(t) == original.encode(t));

  const auto none = train::hfTokenizerFiles(*text::openTokenizer("byte"), 64);
  CHECK(none.files.empty());
  CHECK_THAT(none.note, ContainsSubstring("none written") && ContainsSubstring("byte"));
  fs::remove_all(dir);
}

TEST_CASE("hf tokenizer: a tokenizer.json directory leaves as it came, byte for byte", "[train][hf]") {
  const fs::path dir = fs::temp_directory_path() / ("helios-hf-carry-" + std::to_string(test::testSeed()));
  const fs::path out = dir / "export";
  fs::create_directories(out);
  const std::string json = test::smallTokenizerJson().dump(2);
  const std::string config = R"({"eos_token": "<|im_end|>", "chat_template": "{{ x }}"})";
  std::ofstream(dir / "tokenizer.json", std::ios::binary) << json;
  std::ofstream(dir / "tokenizer_config.json", std::ios::binary) << config;
  const auto tok = text::openTokenizer(dir.string());
  const auto files = train::hfTokenizerFiles(*tok, 64);
  CHECK(names(files) == std::vector<std::string>{"tokenizer.json", "tokenizer_config.json"});
  CHECK_THAT(files.note, ContainsSubstring("tokenizer.json, tokenizer_config.json as loaded"));
  writeAll(files, out);
  std::ifstream a(out / "tokenizer.json", std::ios::binary),
      b(out / "tokenizer_config.json", std::ios::binary);
  CHECK(std::string(std::istreambuf_iterator<char>(a), {}) == json);
  CHECK(std::string(std::istreambuf_iterator<char>(b), {}) == config);
  const auto back = text::openTokenizer(out.string());
  CHECK(back->describe() == tok->describe());
  CHECK(back->encode(" the<|im_end|>") == std::vector<int32_t>{258, 260});
  fs::remove_all(dir);
}
