// A Hugging Face tokenizer directory (engine/text/hf_tokenizer, directory, load): tokenizer_config.json,
// special_tokens_map.json, chat_template.jinja and generation_config.json give the special ids, the chat
// template and what transformers adds; the files travel byte for byte (describe + files rebuild the same
// tokenizer, altered files are refused); tokenizer.json wins over tokenizer.model; added-token ids follow the
// tokenizers library; and every malformed file is refused with a message naming the file and the field.
#include "engine/text/hf_tokenizer.hpp"
#include "engine/text/load.hpp"
#include "support/hf_tokenizer_json.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <filesystem>
#include <fstream>
#include <functional>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

using Files = std::vector<text::TokenizerFile>;

fs::path tempDir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("helios-hf-" + name + "-" + std::to_string(test::testSeed()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const nlohmann::json kConfig = {{"bos_token", "<|endoftext|>"},
                                {"eos_token", {{"content", "<|im_end|>"}, {"__type", "AddedToken"}}},
                                {"chat_template", "{{ messages }}"},
                                {"tokenizer_class", "PreTrainedTokenizerFast"}};

} // namespace

TEST_CASE("hf files: special tokens, chat template, eos ids and what transformers adds", "[text][hf]") {
  const fs::path dir = tempDir("special");
  write(dir / "tokenizer.json", test::smallTokenizerJson().dump());
  write(dir / "tokenizer_config.json", kConfig.dump(2));
  write(dir / "generation_config.json", R"({"eos_token_id": [259, 260], "max_new_tokens": 5})");
  const auto tok = text::openTokenizer(dir.string());
  REQUIRE(std::string(tok->kind()) == "hf");
  CHECK(tok->vocab() == 261);
  CHECK(tok->encode(" the<|im_end|> he") == std::vector<int32_t>{258, 260, ' ', 257});
  CHECK(tok->encode("<|endoftext|><|endoftext|>") == std::vector<int32_t>{259, 259});
  CHECK(tok->decode(std::vector<int32_t>{258, 260, 259, ' ', 257}) == " the<|im_end|><|endoftext|> he");
  CHECK(tok->decodeToken(258) == " the");
  CHECK(tok->decodeToken(9999) == "?");
  CHECK(tok->tokenId("<|im_end|>") == 260);
  CHECK(tok->tokenId(test::gpt2Spelled(" the")) == 258);
  CHECK_FALSE(tok->tokenId("<|nope|>"));
  CHECK(tok->bos() == 259);
  CHECK(tok->eosIds() == std::vector<int32_t>{260, 259});
  CHECK(tok->endOfText() == 260);
  CHECK(tok->chatTemplate() == "{{ messages }}");
  CHECK(tok->sequenceSpecials() == text::SequenceSpecials{{259}, {}});

  // chat_template.jinja is where transformers saves the template now: it wins. special_tokens_map.json fills
  // what tokenizer_config.json leaves out.
  write(dir / "chat_template.jinja", "{% for m in messages %}{{ m }}{% endfor %}");
  auto config = kConfig;
  config.erase("bos_token");
  write(dir / "tokenizer_config.json", config.dump());
  write(dir / "special_tokens_map.json", R"({"bos_token": "<|im_end|>", "eos_token": "<|endoftext|>"})");
  const auto again = text::openTokenizer((dir / "tokenizer.json").string());
  CHECK(again->chatTemplate() == "{% for m in messages %}{{ m }}{% endfor %}");
  CHECK(again->bos() == 260);
  CHECK(again->eosIds() == std::vector<int32_t>{260, 259});
  const auto d = again->describe();
  CHECK(d["files"] == nlohmann::json{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                                     "generation_config.json", "chat_template.jinja"});
  fs::remove_all(dir);
}

TEST_CASE("hf files: the files travel byte for byte; tokenizer.json wins over tokenizer.model",
          "[text][hf]") {
  const fs::path dir = tempDir("travel"), saved = tempDir("saved");
  write(dir / "tokenizer.json", test::smallTokenizerJson().dump(1));
  write(dir / "tokenizer_config.json", kConfig.dump());
  write(dir / "tokenizer.model", "not a SentencePiece model: carried, never read");
  write(dir / "vocab.json", "{}"); // not one of the tokenizer's files
  const auto tok = text::openTokenizer(dir.string());
  REQUIRE(std::string(tok->kind()) == "hf");
  std::vector<std::string> names;
  for (const auto& f : tok->files()) {
    names.push_back(f.name);
    CHECK(f.bytes == read(dir / f.name));
    write(saved / f.name, f.bytes);
  }
  CHECK(names == std::vector<std::string>{"tokenizer.json", "tokenizer_config.json", "tokenizer.model"});
  const auto back = text::loadTokenizer(tok->describe(), saved);
  CHECK(back->describe() == tok->describe());
  CHECK(back->encode(" the he") == tok->encode(" the he"));
  write(saved / "tokenizer_config.json", R"({"eos_token": "<|endoftext|>"})");
  CHECK_THROWS_WITH(text::loadTokenizer(tok->describe(), saved), ContainsSubstring("not the ones recorded"));
  fs::remove(saved / "tokenizer.model");
  CHECK_THROWS_WITH(text::loadTokenizer(tok->describe(), saved), ContainsSubstring("tokenizer.model"));
  fs::remove_all(dir);
  fs::remove_all(saved);
}

TEST_CASE("hf files: added-token ids follow the tokenizers library", "[text][hf]") {
  auto j = test::smallTokenizerJson();
  // Ids are assigned on load: a string in the vocabulary takes its id there, the others count up from the
  // vocabulary's size in file order; the ids written in the file are only compared (and warned about).
  j["added_tokens"] = {{{"id", 7}, {"content", "he"}, {"special", true}},
                       {{"id", 300}, {"content", "<a>"}, {"special", true}},
                       {{"id", 260}, {"content", "<b>"}, {"special", false}},
                       {{"id", 0}, {"content", ""}}};
  const text::HfTokenizer tok(Files{{"tokenizer.json", j.dump()}});
  CHECK(tok.tokenId("he") == 257);
  CHECK(tok.tokenId("<a>") == 259);
  CHECK(tok.tokenId("<b>") == 260);
  CHECK(tok.warnings().size() == 2);
  CHECK_THAT(tok.warnings()[0], ContainsSubstring("'he' has id 7"));
  CHECK(tok.encode("he<b>") == std::vector<int32_t>{257, 260});
  CHECK(tok.vocab() == 261);
}

TEST_CASE("hf files: malformed files are refused naming the file and the field", "[text][hf]") {
  using Edit = std::function<void(nlohmann::json&)>;
  const std::vector<std::pair<Edit, std::string>> cases = {
      {[](auto& j) { j["model"]["type"] = "Unigram"; },
       "model.type: Unigram models are not implemented in Helios"},
      {[](auto& j) { j["model"]["type"] = "WordPiece"; }, "WordPiece models are not implemented"},
      {[](auto& j) { j["model"]["type"] = "WordLevel"; }, "WordLevel models are not implemented"},
      {[](auto& j) { j["model"]["type"] = "Foo"; }, "unknown model type 'Foo'"},
      {[](auto& j) { j["model"].erase("vocab"); }, "tokenizer.json: model.vocab: missing"},
      {[](auto& j) { j["model"]["vocab"]["he"] = "x"; }, "model.vocab.he: expected an integer"},
      {[](auto& j) { j["model"]["vocab"]["he"] = 5; }, "both have id 5"},
      {[](auto& j) { j["model"]["merges"][0] = "a b c"; }, "model.merges[0]: 'a b c' is not two tokens"},
      {[](auto& j) { j["model"]["merges"][1] = "h zz"; },
       "model.merges[1]: token 'zz' is not in the vocabulary"},
      {[](auto& j) { j["model"]["merges"][1] = "e h"; }, "model.merges[1]: the merged token 'eh'"},
      {[](auto& j) { j["model"]["merges"][2] = {"he"}; }, "model.merges[2]: expected two tokens"},
      {[](auto& j) { j["model"]["dropout"] = 0.1; }, "model.dropout: BPE dropout"},
      {[](auto& j) { j["version"] = "2.0"; }, "tokenizer.json: version: unknown version '2.0'"},
      {[](auto& j) {
         j["pre_tokenizer"] = {{"type", "Whitespace"}};
       },
       "pre_tokenizer.type: pre-tokenizer 'Whitespace' is not implemented in Helios"},
      {[](auto& j) {
         j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "Lowercase"}}}}};
       },
       "normalizer.normalizers[0].type: normalizer 'Lowercase' is not implemented"},
      {[](auto& j) {
         j["decoder"] = {{"type", "WordPiece"}};
       },
       "decoder.type: decoder 'WordPiece'"},
      {[](auto& j) {
         j["post_processor"] = {{"type", "Foo"}};
       },
       "post_processor.type: post-processor 'Foo'"},
      {[](auto& j) {
         j["pre_tokenizer"] = {
             {"type", "Sequence"},
             {"pretokenizers",
              {{{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Sideways"}}}}};
       },
       "pre_tokenizer.pretokenizers[0].behavior: 'Sideways' is not a split behaviour"},
      {[](auto& j) {
         j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(ab"}}}, {"behavior", "Isolated"}};
       },
       "pre_tokenizer.pattern.Regex: regular expression '(ab'"},
      {[](auto& j) {
         j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Glob", "*"}}}, {"behavior", "Isolated"}};
       },
       "pre_tokenizer.pattern: expected {\"String\": ...} or {\"Regex\": ...}"},
      {[](auto& j) { j["added_tokens"][1].erase("content"); }, "added_tokens[1].content: missing"},
      {[](auto& j) { j["added_tokens"][0]["special"] = "yes"; },
       "added_tokens[0].special: expected true or false"},
  };
  for (const auto& [edit, message] : cases) {
    auto j = test::smallTokenizerJson();
    edit(j);
    INFO(message);
    CHECK_THROWS_WITH(text::HfTokenizer(Files{{"tokenizer.json", j.dump()}}), ContainsSubstring(message));
  }
  const std::string ok = test::smallTokenizerJson().dump();
  auto refused = [&](std::vector<text::TokenizerFile> more) {
    more.insert(more.begin(), {"tokenizer.json", ok});
    return text::HfTokenizer(std::move(more));
  };
  CHECK_THROWS_WITH(text::HfTokenizer(Files{{"tokenizer.json", "{\"model\": [1,"}}),
                    ContainsSubstring("tokenizer.json: not valid JSON at byte"));
  CHECK_THROWS_WITH(text::HfTokenizer(Files{{"tokenizer_config.json", "{}"}}),
                    ContainsSubstring("needs tokenizer.json"));
  CHECK_THROWS_WITH(refused({{"tokenizer_config.json", "{bos"}}),
                    ContainsSubstring("tokenizer_config.json: not valid JSON"));
  CHECK_THROWS_WITH(
      refused({{"tokenizer_config.json", R"({"eos_token": "<nope>"})"}}),
      ContainsSubstring("tokenizer_config.json: eos_token '<nope>' is not a token of the tokenizer"));
  CHECK_THROWS_WITH(refused({{"tokenizer_config.json", R"({"add_bos_token": "yes"})"}}),
                    ContainsSubstring("tokenizer_config.json: add_bos_token: expected true or false"));
  CHECK_THROWS_WITH(
      refused({{"tokenizer_config.json", R"({"added_tokens_decoder": {"x1": {"content": "a"}}})"}}),
      ContainsSubstring("added_tokens_decoder.x1: the key is not a token id"));
  CHECK_THROWS_WITH(refused({{"generation_config.json", R"({"eos_token_id": "x"})"}}),
                    ContainsSubstring("generation_config.json: eos_token_id: expected an integer"));
  CHECK_THROWS_WITH(refused({}).encode("ok \xff"), ContainsSubstring("not UTF-8 at byte 3"));
  const fs::path empty = tempDir("empty");
  CHECK_THROWS_WITH(text::openTokenizer(empty.string()), ContainsSubstring("tokenizer.json"));
  fs::remove_all(empty);
}
