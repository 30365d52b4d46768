// Token shards: the header and its refusals (truncated, oversized, foreign or corrupt files, a shard from
// another tokenizer), `prepare` (documents, validation tails or whole documents, end-of-text tokens, shard
// sizes, 2- and 4-byte tokens), the loader's windows over mapped shards (deterministic from the seed, never
// across a shard's end), and a resumed run over shards continuing bit for bit, its checkpoint carrying the
// tokenizer's files.
#include "common.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/text/gpt2_bpe.hpp"
#include "engine/text/unicode.hpp"
#include "engine/train/checkpoint.hpp"
#include "engine/train/crc32c.hpp"
#include "engine/train/prepare.hpp"
#include "engine/train/token_shard.hpp"
#include "support/hf_tokenizer_json.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <numeric>
#include <set>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// A GPT-2 tokenizer without merges: the 256 bytes as ids 0..255, `extra` two-character tokens after them,
// then <|endoftext|>. With extra > 65279 its ids need 4 bytes in a shard.
train::Tokenizer gpt2Bytes(uint32_t extra, const fs::path& dir) {
  const auto& map = text::byteToUnicode();
  auto spell = [&](uint32_t b) {
    std::string s;
    text::appendUtf8(s, map[b]);
    return s;
  };
  nlohmann::json enc = nlohmann::json::object();
  for (uint32_t b = 0; b < 256; ++b)
    enc[spell(b)] = b;
  for (uint32_t k = 0; k < extra; ++k)
    enc[spell(33 + k / 256 % 94) + spell(k % 256) + spell(k / (256 * 94) + 33)] = 256 + k;
  enc["<|endoftext|>"] = 256 + extra;
  fs::create_directories(dir);
  spit(dir / "encoder.json", enc.dump());
  spit(dir / "vocab.bpe", "#version: 0.2\n");
  return train::Tokenizer::open(dir.string());
}

// Documents of random lines.
std::vector<fs::path> writeDocuments(const fs::path& dir, int count) {
  fs::create_directories(dir);
  std::vector<fs::path> docs;
  std::uniform_int_distribution<int> lines(5, 60), len(0, 70), ch(32, 126);
  for (int d = 0; d < count; ++d) {
    std::string text;
    for (int l = lines(test::rng()); l > 0; --l) {
      for (int c = len(test::rng()); c > 0; --c)
        text += static_cast<char>(ch(test::rng()));
      text += '\n';
    }
    docs.push_back(dir / fmt::format("doc{:02d}.txt", d));
    spit(docs.back(), text);
  }
  return docs;
}

std::vector<uint32_t> shardTokens(const train::MappedShard& s) {
  std::vector<uint32_t> out(s.size());
  for (uint64_t i = 0; i < s.size(); ++i)
    out[i] = s.header().tokenBytes == 2 ? static_cast<const uint16_t*>(s.tokens())[i]
                                        : static_cast<const uint32_t*>(s.tokens())[i];
  return out;
}

std::vector<uint32_t> splitTokens(const std::vector<std::unique_ptr<train::MappedShard>>& shards) {
  std::vector<uint32_t> all;
  for (const auto& s : shards) {
    const auto t = shardTokens(*s);
    all.insert(all.end(), t.begin(), t.end());
  }
  return all;
}

std::vector<uint32_t> bytesOf(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), reinterpret_cast<const uint8_t*>(s.data()) + s.size()};
}

// Where prepare cuts a document's validation tail: after the first newline past (1 - f) of it.
size_t tailStart(const std::string& doc, double f) {
  const size_t at = static_cast<size_t>(static_cast<double>(doc.size()) * (1.0 - f));
  const size_t nl = doc.find('\n', at);
  return nl == std::string::npos ? doc.size() : nl + 1;
}

} // namespace

// Blocks are cut where no pre-tokenizer joins across: runs of newlines stay whole. Llama 3's pattern makes
// "\n\n" one piece, and a merge makes it one token; the shards must hold what encoding each whole document
// gives, with blocks far shorter than a document.
TEST_CASE("shards: prepare's blocks give a Hugging Face tokenizer's ids for whole documents",
          "[train][shards]") {
  const fs::path dir = test::tempDir("shards-hf");
  auto j = test::smallTokenizerJson();
  j["pre_tokenizer"] = nlohmann::json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Split", "behavior": "Isolated", "invert": false, "pattern": {"Regex":
       "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]})");
  const std::string newline = test::gpt2Spelled("\n");
  j["model"]["vocab"][newline + newline] = 259;
  j["model"]["merges"].push_back(newline + " " + newline);
  j["added_tokens"][0]["id"] = 260; // the ids the library gives them now
  j["added_tokens"][1]["id"] = 261;
  fs::create_directories(dir / "tok");
  spit(dir / "tok" / "tokenizer.json", j.dump());
  const auto tok = train::Tokenizer::open((dir / "tok").string());
  REQUIRE(tok.encode("a\n\nb") == std::vector<int32_t>{'a', 259, 'b'});
  fs::create_directories(dir / "docs");
  std::vector<fs::path> docs;
  std::uniform_int_distribution<int> len(0, 30), ch(33, 126), gap(1, 3);
  std::vector<uint32_t> want[2]; // even documents train, odd ones validation, each whole
  for (int d = 0; d < 6; ++d) {
    std::string text;
    for (int l = 0; l < 60; ++l) {
      for (int c = len(test::rng()); c > 0; --c)
        text += static_cast<char>(ch(test::rng()));
      text += std::string(static_cast<size_t>(gap(test::rng())), '\n');
    }
    docs.push_back(dir / "docs" / fmt::format("doc{}.txt", d));
    spit(docs.back(), text);
    for (int32_t id : tok.encode(text))
      want[d % 2].push_back(static_cast<uint32_t>(id));
    want[d % 2].push_back(static_cast<uint32_t>(*tok.endOfText()));
  }
  train::PrepareOptions o;
  o.valEvery = 2;
  o.blockBytes = 32; // about a hundred cuts: the old cut split a run of newlines in most documents
  train::prepareShards(tok, docs, o, dir / "out");
  const auto set = train::openShardSet(dir / "out");
  CHECK(splitTokens(set->train) == want[0]);
  CHECK(splitTokens(set->val) == want[1]);
}

TEST_CASE("shards: prepare splits every document into a training head and a validation tail",
          "[train][shards]") {
  const fs::path dir = test::tempDir("shards-prepare");
  const auto docs = writeDocuments(dir / "docs", 5);
  const auto tok = gpt2Bytes(0, dir / "tok");
  train::PrepareOptions o;
  o.valFraction = 0.2;
  o.shardTokens = 700;
  o.blockBytes = 100; // many blocks per document: cuts after newlines must not change the tokens
  uint64_t reports = 0;
  o.onProgress = [&](const train::PrepareProgress&) { ++reports; };
  const auto r = train::prepareShards(tok, train::listDocuments({(dir / "docs").string()}), o, dir / "out");
  CHECK(reports > 5);
  CHECK(r.documents == 5);
  std::vector<uint32_t> wantTrain, wantVal;
  for (const auto& d : docs) {
    const std::string text = slurp(d);
    const size_t cut = tailStart(text, 0.2);
    for (uint32_t b : bytesOf(text.substr(0, cut)))
      wantTrain.push_back(b);
    wantTrain.push_back(256);         // end of text
    if (cut == text.size()) continue; // an empty tail (the cut fell on the last newline) adds nothing to val
    for (uint32_t b : bytesOf(text.substr(cut)))
      wantVal.push_back(b);
    wantVal.push_back(256);
  }
  const auto set = train::openShardSet(dir / "out");
  CHECK(splitTokens(set->train) == wantTrain);
  CHECK(splitTokens(set->val) == wantVal);
  CHECK(r.trainTokens == wantTrain.size());
  CHECK(r.trainShards == (wantTrain.size() + 699) / 700);
  for (size_t i = 0; i + 1 < set->train.size(); ++i)
    CHECK(set->train[i]->size() == 700);
  CHECK(set->train[0]->header().tokenBytes == 2);
  CHECK(set->tokenizer == tok);
  CHECK(fs::exists(dir / "out" / "encoder.json"));
  // A second prepare into the same directory with larger shards leaves none of the old ones behind.
  train::PrepareOptions bigger = o;
  bigger.shardTokens = 1u << 20;
  train::prepareShards(tok, docs, bigger, dir / "again");
  spit(dir / "again" / "train-000007.bin", "old");
  train::prepareShards(tok, docs, bigger, dir / "again");
  CHECK_FALSE(fs::exists(dir / "again" / "train-000007.bin"));
  CHECK(fs::exists(dir / "again" / "train-000000.bin"));
  // Blocks encoded one at a time or five at once make the same shards.
  for (uint32_t threads : {1u, 5u}) {
    o.threads = threads;
    const fs::path again = dir / fmt::format("threads-{}", threads);
    train::prepareShards(tok, docs, o, again);
    for (const auto& e : fs::directory_iterator(dir / "out"))
      CHECK(slurp(e.path()) == slurp(again / e.path().filename()));
  }
}

TEST_CASE("shards: --val-every holds out whole documents; the byte tokenizer has no separator",
          "[train][shards]") {
  const fs::path dir = test::tempDir("shards-val-every");
  const auto docs = writeDocuments(dir / "docs", 6);
  train::PrepareOptions o;
  o.valEvery = 3;
  train::prepareShards(train::Tokenizer::byteLevel(), docs, o, dir / "out");
  std::string train, val;
  for (size_t i = 0; i < docs.size(); ++i)
    ((i + 1) % 3 == 0 ? val : train) += slurp(docs[i]);
  const auto set = train::openShardSet(dir / "out");
  CHECK(splitTokens(set->train) == bytesOf(train));
  CHECK(splitTokens(set->val) == bytesOf(val));
  CHECK(set->train[0]->header().endOfText == train::kNoEndOfText);
  o.valEvery = 1;
  CHECK_THROWS_WITH(train::prepareShards(train::Tokenizer::byteLevel(), docs, o, dir / "out2"),
                    ContainsSubstring("--val-every 1"));
  o.valEvery = 0;
  o.valFraction = 1.5;
  CHECK_THROWS_WITH(train::prepareShards(train::Tokenizer::byteLevel(), docs, o, dir / "out2"),
                    ContainsSubstring("--val-fraction 1.5"));
  CHECK_THROWS_WITH(train::listDocuments({(dir / "docs" / "*.md").string()}), ContainsSubstring("*.md"));
  CHECK(train::listDocuments({(dir / "docs" / "doc0*.txt").string(), docs[0].string()}).size() == 6);
}

TEST_CASE("shards: truncated, oversized, foreign and corrupt shards are refused by name", "[train][shards]") {
  const fs::path dir = test::tempDir("shards-corrupt");
  const auto docs = writeDocuments(dir / "docs", 2);
  const auto tok = gpt2Bytes(0, dir / "tok");
  train::PrepareOptions o;
  const fs::path out = dir / "out";
  train::prepareShards(tok, docs, o, out);
  const fs::path shard = out / "train-000000.bin";
  const std::string good = slurp(shard);
  REQUIRE_NOTHROW(train::openShardSet(out));
  struct Case {
    std::string bytes;
    const char* says;
  };
  std::string badMagic = good, badVersion = good, badWidth = good, badVocab = good;
  badMagic[0] = 'X';
  badVersion[8] = 2;
  badWidth[12] = 3;
  badVocab[24] = 7; // vocabulary 263: the tokenizer's is 257
  for (const Case& c : std::initializer_list<Case>{
           {good.substr(0, good.size() - 1), "truncated"},
           {good + "xy", "trailing bytes"},
           {good.substr(0, 40), "truncated token shard (40 bytes"},
           {badMagic, "no HELIOSTK magic"},
           {badVersion, "token shard version 2"},
           {badWidth, "3 bytes per token"},
           {badVocab, "a different tokenizer"},
       }) {
    spit(shard, c.bytes);
    CHECK_THROWS_AS(train::openShardSet(out), train::ShardError);
    CHECK_THROWS_WITH(train::openShardSet(out),
                      ContainsSubstring(shard.string()) && ContainsSubstring(c.says));
  }
  // A token past the vocabulary passes the header checks and is refused where a batch reads it (here with
  // the index's checksum rewritten to match: otherwise opening the set refuses the altered shard).
  std::string badToken = good;
  for (size_t i = train::kShardHeaderBytes; i < badToken.size(); ++i)
    badToken[i] = '\xFF';
  spit(shard, badToken);
  CHECK_THROWS_WITH(train::openShardSet(out),
                    ContainsSubstring(shard.string()) &&
                        ContainsSubstring("its bytes differ from what prepare wrote"));
  const std::string goodIndex = slurp(out / "index.json");
  auto index = nlohmann::json::parse(goodIndex);
  index["train"][0]["crc32c"] = fmt::format("{:08x}", train::crc32c(std::as_bytes(std::span(badToken))));
  spit(out / "index.json", index.dump());
  train::DataLoader loader(train::openShardSet(out), 16, 1);
  std::vector<int32_t> tokens, targets;
  CHECK_THROWS_WITH(loader.nextTrain(2, tokens, targets),
                    ContainsSubstring("65535") && ContainsSubstring("outside the vocabulary 257"));
  spit(shard, good);
  spit(out / "index.json", goodIndex);
  fs::remove(out / "vocab.bpe");
  CHECK_THROWS_WITH(train::openShardSet(out), ContainsSubstring("vocab.bpe"));
  fs::remove(out / "index.json");
  CHECK_THROWS_WITH(train::openShardSet(out), ContainsSubstring("not a token shard directory"));
}

TEST_CASE("shards: each shard's CRC-32C is in index.json; a shard changed or replaced under it is refused",
          "[train][shards]") {
  const fs::path dir = test::tempDir("shards-checksums");
  const auto docs = writeDocuments(dir / "docs", 4);
  const auto tok = gpt2Bytes(0, dir / "tok");
  train::PrepareOptions o;
  o.shardTokens = 600; // several shards of the same size
  const fs::path out = dir / "out";
  train::prepareShards(tok, docs, o, out);
  const auto index = nlohmann::json::parse(slurp(out / "index.json"));
  REQUIRE(index.at("train").size() >= 3);
  for (const auto& e : index.at("train")) { // what prepare recorded is the file's CRC-32C
    const std::string bytes = slurp(out / e.at("file").get<std::string>());
    CHECK(e.at("crc32c") == fmt::format("{:08x}", train::crc32c(std::as_bytes(std::span(bytes)))));
  }
  const fs::path first = out / "train-000000.bin", second = out / "train-000001.bin";
  const std::string a = slurp(first), b = slurp(second);
  REQUIRE(a.size() == b.size());
  REQUIRE_NOTHROW(train::openShardSet(out));

  SECTION("one token changed") {
    std::string bad = a;
    const size_t at = train::kShardHeaderBytes + 2 * (test::rng()() % 600);
    bad[at] = static_cast<char>(bad[at] == 'a' ? 'b' : 'a'); // still a token of the vocabulary
    spit(first, bad);
  }
  SECTION("a shard replaced by another one of the same size") {
    spit(first, b);
  }
  SECTION("two shards exchanged") {
    spit(first, b);
    spit(second, a);
  }
  CHECK_THROWS_AS(train::openShardSet(out), train::ShardError);
  CHECK_THROWS_WITH(train::openShardSet(out),
                    ContainsSubstring("train-00000") &&
                        ContainsSubstring("its bytes differ from what prepare wrote") &&
                        ContainsSubstring("index.json"));
}

TEST_CASE("shards: an index without checksums (an earlier prepare) is refused", "[train][shards]") {
  const fs::path dir = test::tempDir("shards-no-checksums");
  const auto tok = gpt2Bytes(0, dir / "tok");
  const fs::path out = dir / "out";
  train::PrepareOptions o;
  o.valFraction = 0.3; // eight documents: a random one's tail can be empty, all eight's cannot
  train::prepareShards(tok, writeDocuments(dir / "docs", 8), o, out);
  auto index = nlohmann::json::parse(slurp(out / "index.json"));
  index["val"][0].erase("crc32c");
  spit(out / "index.json", index.dump());
  CHECK_THROWS_WITH(train::openShardSet(out),
                    ContainsSubstring("val-000000.bin has no crc32c") && ContainsSubstring("prepare again"));
  index["val"][0]["crc32c"] = "not-hex!";
  spit(out / "index.json", index.dump());
  CHECK_THROWS_WITH(train::openShardSet(out), ContainsSubstring("not 8 hex digits"));
}

TEST_CASE("shards: 4-byte tokens; windows stay inside one shard and follow from the seed",
          "[train][shards]") {
  const fs::path dir = test::tempDir("shards-windows");
  const auto tok = gpt2Bytes(65400, dir / "tok"); // vocabulary 65657
  REQUIRE(tok.vocab() == 65657);
  const fs::path out = dir / "out";
  fs::create_directories(out);
  // Token = its position in the split, so a window shows where it came from.
  constexpr uint64_t kShard = 500, kTrain = 2230, kVal = 900;
  train::ShardWriter trainW(out, "train", tok, kShard), valW(out, "val", tok, kShard);
  std::vector<int32_t> ids(kTrain);
  std::iota(ids.begin(), ids.end(), 60000); // above 65535 from the middle on
  trainW.append(ids);
  ids.resize(kVal);
  valW.append(ids);
  trainW.finish();
  valW.finish();
  tok.saveFiles(out);
  nlohmann::json index{{"format", "helios-token-shards"}, {"tokenizer", tok.toJson()}};
  for (auto* w : {&trainW, &valW}) {
    auto& list = index[w == &trainW ? "train" : "val"] = nlohmann::json::array();
    for (const auto& s : w->shards())
      list.push_back({{"file", s.file}, {"tokens", s.tokens}, {"crc32c", fmt::format("{:08x}", s.crc32c)}});
  }
  io::writeFileAtomically(out / "index.json", index.dump());
  const auto set = train::openShardSet(out);
  REQUIRE(set->train.size() == 5); // 4 x 500 + 230
  CHECK(set->train[0]->header().tokenBytes == 4);

  constexpr uint32_t T = 64, rows = 16;
  train::DataLoader a(set, T, 7), b(set, T, 7), c(set, T, 8);
  CHECK(a.trainTokens() == kTrain);
  CHECK(a.valTokens() == kVal);
  std::set<uint64_t> shardsSeen;
  std::vector<int32_t> ta, ya, tb, yb, tc, yc;
  for (int batch = 0; batch < 20; ++batch) {
    a.nextTrain(rows, ta, ya);
    b.nextTrain(rows, tb, yb);
    c.nextTrain(rows, tc, yc);
    REQUIRE(ta == tb);
    REQUIRE(ya == yb);
    for (uint32_t r = 0; r < rows; ++r) {
      const uint64_t start = uint64_t(ta[r * T]) - 60000;
      shardsSeen.insert(start / kShard);
      REQUIRE(start % kShard + T < kShard); // the window and its last target lie in one shard
      for (uint32_t t = 0; t < T; ++t) {
        REQUIRE(ta[r * T + t] == int32_t(60000 + start + t));
        REQUIRE(ya[r * T + t] == int32_t(60000 + start + t + 1));
      }
    }
  }
  CHECK(ta != tc); // another seed, other windows
  CHECK(shardsSeen.size() == 5);
  // The state is the position: a loader set to it draws what the first would draw next.
  train::DataLoader d(set, T, 99);
  d.setState(a.state());
  a.nextTrain(rows, ta, ya);
  d.nextTrain(rows, tb, yb);
  CHECK(ta == tb);
  a.valBatch(3, rows, ta, ya);
  c.valBatch(3, rows, tc, yc);
  CHECK(uint32_t(ta[0] - 60000) + T < kShard * 2);
  CHECK_THROWS_WITH(train::DataLoader(set, 600, 1), ContainsSubstring("no run of seq_len + 1 = 601 tokens"));
}

TEST_CASE("shards: a resumed run over shards equals the uninterrupted run", "[train][shards]") {
  const fs::path dir = test::tempDir("shards-resume");
  const auto tok = gpt2Bytes(0, dir / "tok");
  train::PrepareOptions o;
  o.shardTokens = 3000;
  train::prepareShards(tok, writeDocuments(dir / "docs", 8), o, dir / "out");
  auto cfg = test::bigramConfig();
  cfg.steps = 12;
  cfg.seqLen = 32;
  const nlohmann::json arch{{"kind", "bigram"}, {"vocab", tok.vocab()}};
  struct ShardRun {
    std::unique_ptr<train::Model> model;
    std::unique_ptr<train::DataLoader> loader;
    std::unique_ptr<train::Trainer> trainer;
  };
  auto makeRun = [&](const fs::path& shards) {
    auto set = train::openShardSet(shards);
    ShardRun r;
    r.model = train::makeModel(test::trainCtx(), arch, cfg.seed);
    train::DataInfo info{shards.string(), set->indexHash, set->trainTokens(), set->tokenizer.toJson(),
                         set->tokenizer.files()};
    r.loader = std::make_unique<train::DataLoader>(set, cfg.seqLen, cfg.seed);
    r.trainer =
        std::make_unique<train::Trainer>(test::trainCtx(), *r.model, cfg, *r.loader, info, fs::path());
    return r;
  };
  const fs::path run = dir / "run";
  ShardRun whole = makeRun(dir / "out");
  for (int i = 0; i < 6; ++i)
    whole.trainer->step();
  const fs::path saved = whole.trainer->saveCheckpoint(run);
  for (int i = 6; i < 12; ++i)
    whole.trainer->step();
  whole.trainer->flushOutputs();
  CHECK(fs::exists(saved / "encoder.json"));
  CHECK(train::loadCheckpointTokenizer(saved) == tok);
  const fs::path copy = dir / "step-copy";
  fs::copy(saved, copy);
  spit(copy / "vocab.bpe", "#version: 0.2\na b\n");
  CHECK_THROWS_AS(train::loadCheckpointTokenizer(copy), train::CheckpointError);
  fs::remove(copy / "encoder.json");
  CHECK_THROWS_WITH(train::loadCheckpointTokenizer(copy),
                    ContainsSubstring("its tokenizer") && ContainsSubstring("encoder.json"));

  ShardRun resumed = makeRun(dir / "out");
  resumed.trainer->resume(run);
  REQUIRE(resumed.trainer->stepsDone() == 6);
  for (int i = 6; i < 12; ++i)
    resumed.trainer->step();
  resumed.trainer->flushOutputs();
  const auto& a = whole.trainer->records();
  const auto& b = resumed.trainer->records();
  REQUIRE(b.size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    INFO("step " << b[i].step);
    CHECK(b[i].loss == a[6 + i].loss); // bit-identical: the same batches in the same order
  }
  CHECK(a[11].loss < a[0].loss);

  // Other shards (one more document) are refused by the resume.
  fs::copy(dir / "docs", dir / "docs2");
  writeDocuments(dir / "extra", 1);
  fs::copy(dir / "extra" / "doc00.txt", dir / "docs2" / "zz.txt");
  train::prepareShards(tok, train::listDocuments({(dir / "docs2").string()}), o, dir / "out2");
  ShardRun other = makeRun(dir / "out2");
  CHECK_THROWS_WITH(other.trainer->resume(run), ContainsSubstring("the checkpoint was trained on"));
}

TEST_CASE("shards: a packed GPT trains over documents that end with end-of-text", "[train][shards][pack]") {
  const fs::path dir = test::tempDir("shards-pack");
  const auto tok = gpt2Bytes(0, dir / "tok");
  train::prepareShards(tok, writeDocuments(dir / "docs", 8), {}, dir / "out");
  auto cfg = test::microGptConfig();
  cfg.steps = 8;
  cfg.batch = 4;
  cfg.gpt.vocab = tok.vocab();
  cfg.gpt.fusedAttention = false;
  cfg.gpt.pack = true;
  cfg.gpt.endOfText = static_cast<uint32_t>(*tok.endOfText());
  auto set = train::openShardSet(dir / "out");
  auto model = train::makeModel(test::trainCtx(), test::modelJsonFor(cfg), cfg.seed);
  REQUIRE_THAT(model->describe(), ContainsSubstring("packed-documents"));
  train::DataInfo info{(dir / "out").string(), set->indexHash, set->trainTokens(), set->tokenizer.toJson(),
                       set->tokenizer.files()};
  train::DataLoader loader(set, cfg.seqLen, cfg.seed);
  train::Trainer trainer(test::trainCtx(), *model, cfg, loader, info, fs::path());
  for (uint64_t i = 0; i < cfg.steps; ++i)
    trainer.step();
  trainer.flushOutputs();
  const auto& r = trainer.records();
  REQUIRE(r.size() == cfg.steps);
  for (const auto& s : r)
    REQUIRE(std::isfinite(s.loss));
  CHECK(r.back().loss < r.front().loss);
  fs::remove_all(dir);
}
