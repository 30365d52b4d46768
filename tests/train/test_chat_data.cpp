// Chat data (engine/train/chat_data, chat_pack, chat_loader): JSONL lines parsed and refused with their
// reasons, bad lines stopped at with FILE:LINE or skipped and counted, long examples dropped and counted,
// examples packed into sequences with masked targets and restarting positions, and the loader's epochs,
// evaluation split, shards and state.
#include "chat_test_tokenizer.hpp"
#include "common.hpp"
#include "engine/train/chat_loader.hpp"
#include "support/files.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <set>

using namespace helios;
using Catch::Matchers::ContainsSubstring;

namespace {

const train::ChatRenderer& renderer() {
  return test::chatmlRenderer();
}

// The kind and message a bad line is refused with.
std::pair<std::string, std::string> refusal(std::string_view line) {
  try {
    train::parseChatLine(line);
  } catch (const train::ChatLineError& e) {
    return {e.kind(), e.what()};
  }
  return {"accepted", ""};
}

std::string example(int i, const std::string& answer = "") {
  return fmt::format(
      R"({{"messages": [{{"role": "user", "content": "{} + 1?"}}, {{"role": "assistant", "content": "{}"}}]}})",
      i, answer.empty() ? std::to_string(i + 1) : answer);
}

// Random examples of 2 to maxIds ids, trained from a random point on (as an assistant turn would be).
// Each example starts with its own id (8 + its index; the tests pad with 0 or 7), so a packed document names
// the one example it came from, even a one-token document.
std::vector<train::ChatExample> randomExamples(size_t n, uint32_t maxIds) {
  std::vector<train::ChatExample> out;
  std::uniform_int_distribution<uint32_t> length(2, maxIds), id(0, 255);
  for (size_t i = 0; i < n; ++i) {
    train::ChatExample e;
    const uint32_t len = length(test::rng()),
                   from = std::uniform_int_distribution<uint32_t>(1, len - 1)(test::rng());
    for (uint32_t k = 0; k < len; ++k) {
      e.ids.push_back(k == 0 ? int32_t(8 + i) : int32_t(id(test::rng())));
      e.trained.push_back(k >= from);
    }
    e.line = i + 1;
    out.push_back(std::move(e));
  }
  return out;
}

} // namespace

TEST_CASE("chat data: messages and prompt/completion lines", "[train][chat]") {
  const auto ms = train::parseChatLine(
      R"({"id": 7, "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},)"
      R"( {"role": "assistant", "content": "a"}]})");
  REQUIRE(ms.size() == 3);
  CHECK(ms[0].role == train::ChatRole::System);
  CHECK(ms[2].content == "a");
  const auto pc = train::parseChatLine(R"({"prompt": "Q?", "completion": "A."})");
  REQUIRE(pc.size() == 2);
  CHECK(pc[0].role == train::ChatRole::User);
  CHECK(pc[0].content == "Q?");
  CHECK(pc[1].role == train::ChatRole::Assistant);
  CHECK(pc[1].content == "A.");
}

TEST_CASE("chat data: each kind of bad line is refused with its reason", "[train][chat]") {
  const std::map<std::string, std::pair<std::string, std::string>> cases = {
      {R"({"messages": [)", {"malformed JSON", "not valid JSON"}},
      {R"([1, 2])", {"not an example", "one JSON object"}},
      {R"({"text": "x"})", {"not an example", "neither \"messages\" nor \"prompt\""}},
      {R"({"prompt": "x"})", {"not an example", "both \"prompt\" and \"completion\""}},
      {R"({"prompt": "x", "completion": 3})", {"not an example", "the completion is not a string"}},
      {R"({"messages": [], "prompt": "x"})", {"not an example", "both \"messages\" and"}},
      {R"({"messages": []})", {"not an example", "non-empty array"}},
      {R"({"messages": [{"role": "user"}]})", {"not an example", "message 1 is not an object"}},
      {R"({"messages": [{"role": "user", "content": ["a"]}]})", {"not an example", "message 1's content"}},
      {R"({"messages": [{"role": "tool", "content": "x"}, {"role": "assistant", "content": "y"}]})",
       {"unknown role", "message 1 has the role \"tool\""}},
      {R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": " \n"}]})",
       {"empty assistant turn", "message 2 (assistant) is empty"}},
      {R"({"prompt": "x", "completion": ""})", {"empty assistant turn", "message 2 (assistant) is empty"}},
      {R"({"messages": [{"role": "user", "content": "x"}]})", {"no assistant turn", "nothing to train on"}},
  };
  for (const auto& [line, want] : cases) {
    INFO(line);
    const auto [kind, message] = refusal(line);
    CHECK(kind == want.first);
    CHECK_THAT(message, ContainsSubstring(want.second));
  }
}

TEST_CASE("chat data: a bad line stops the read at FILE:LINE, or is skipped and counted", "[train][chat]") {
  const std::string jsonl = example(1) + "\n\n" + example(2) + "\n{\"messages\": oops}\n" +
                            R"({"messages": [{"role": "robot", "content": "x"}]})" + "\n" + example(3) +
                            "\n" + R"({"prompt": "p", "completion": ""})" + "\r\n" + example(4) + "\n";
  train::ChatFileStats stats;
  CHECK_THROWS_WITH(train::readChatExamples("chat.jsonl", jsonl, renderer(), {64, false}, stats),
                    ContainsSubstring("chat.jsonl:4: not valid JSON") &&
                        ContainsSubstring("--skip-bad-lines"));
  const auto examples = train::readChatExamples("chat.jsonl", jsonl, renderer(), {64, true}, stats);
  CHECK(examples.size() == 4);
  CHECK(stats.lines == 7); // the blank line holds no data
  CHECK(stats.examples == 4);
  CHECK(stats.skippedLines() == 3);
  CHECK(stats.skipped == std::map<std::string, uint64_t>{
                             {"malformed JSON", 1}, {"unknown role", 1}, {"empty assistant turn", 1}});
  REQUIRE(stats.notes.size() == 3);
  CHECK_THAT(stats.notes[1], ContainsSubstring("chat.jsonl:5: message 1 has the role \"robot\""));
  CHECK_THAT(stats.notes[2], ContainsSubstring("chat.jsonl:7:"));
  CHECK(examples[2].line == 6);
  CHECK(examples[3].line == 8);
  CHECK_THAT(stats.describe(),
             ContainsSubstring("4 examples from 7 lines") && ContainsSubstring("1 skipped (unknown role)"));
  CHECK(stats.toJson()["skipped"]["malformed JSON"] == 1);
  // Nothing usable at all is an error, not an empty run.
  CHECK_THROWS_WITH(train::readChatExamples("bad.jsonl", "{}\n[]\n", renderer(), {64, true}, stats),
                    ContainsSubstring("bad.jsonl: no example to train on"));
}

TEST_CASE("chat data: examples longer than the sequence are dropped and counted", "[train][chat]") {
  // "<|im_start|>user\n1 + 1?<|im_end|>\n<|im_start|>assistant\n" is 25 ids; each answer byte and
  // "<|im_end|>\n" add to it.
  const std::string longAnswer(40, 'x');
  const std::string jsonl = example(1) + "\n" + example(2, longAnswer) + "\n" + example(3) + "\n";
  train::ChatFileStats stats;
  const auto examples = train::readChatExamples("long.jsonl", jsonl, renderer(), {40, false}, stats);
  CHECK(examples.size() == 2);
  CHECK(stats.tooLong == 1);
  REQUIRE(stats.notes.size() == 1);
  CHECK_THAT(stats.notes[0],
             ContainsSubstring("long.jsonl:2: 67 tokens, more than seq_len + 1 = 41: dropped"));
  CHECK(stats.toJson()["too_long"] == 1);
  // Exactly seq_len + 1 ids still fits (T inputs and their targets).
  CHECK(
      train::readChatExamples("fits.jsonl", example(2, longAnswer), renderer(), {66, false}, stats).size() ==
      1);
}

TEST_CASE("chat pack: documents keep their ids once, targets only where trained, positions restart",
          "[train][chat]") {
  const uint32_t T = GENERATE(16u, 37u, 64u);
  const auto examples = randomExamples(60, T + 1);
  const train::PackedChat p = train::packChat(examples, T, 7);
  INFO("T " << T << ", seed " << test::testSeed());
  CHECK(p.tokens.size() == p.count() * T);
  // Walk the sequences document by document (a document starts where the position is 0).
  std::multiset<std::vector<int32_t>> seen;
  uint64_t trained = 0, inputs = 0;
  for (size_t s = 0; s < p.count(); ++s) {
    uint32_t seqTrained = 0;
    for (size_t t = 0; t < T;) {
      size_t end = t + 1;
      while (end < T && p.positions[s * T + end] != 0)
        ++end;
      std::vector<int32_t> doc(p.tokens.begin() + s * T + t, p.tokens.begin() + s * T + end);
      for (size_t k = t; k < end; ++k) {
        CHECK(p.positions[s * T + k] == int32_t(k - t));
        seqTrained += p.targets[s * T + k] >= 0;
      }
      // A document's targets are its own next ids where trained; its last target ends the example.
      const auto match = std::find_if(examples.begin(), examples.end(), [&](const train::ChatExample& e) {
        return std::vector<int32_t>(e.ids.begin(), e.ids.end() - 1) == doc;
      });
      if (match != examples.end()) {
        seen.insert(doc);
        inputs += doc.size();
        for (size_t k = 0; k < doc.size(); ++k)
          CHECK(p.targets[s * T + t + k] == (match->trained[k + 1] ? match->ids[k + 1] : -1));
      } else { // padding: the pad id, nothing trained
        for (size_t k = t; k < end; ++k) {
          CHECK(p.tokens[s * T + k] == 7);
          CHECK(p.targets[s * T + k] == -1);
        }
      }
      t = end;
    }
    CHECK(seqTrained == p.trained[s]);
    trained += seqTrained;
  }
  CHECK(seen.size() == examples.size());
  CHECK(inputs == p.exampleTokens);
  uint64_t want = 0, idsTotal = 0;
  for (const auto& e : examples) {
    want += std::count(e.trained.begin() + 1, e.trained.end(), uint8_t{1});
    idsTotal += e.ids.size() - 1;
  }
  CHECK(trained == want);
  // Best-fit decreasing packs within 30% of the tokens (here: ~12% padding at most is typical).
  CHECK(double(p.count()) * T <= 1.3 * double(idsTotal) + T);
  train::ChatExample tooLong{std::vector<int32_t>(T + 2, 1), std::vector<uint8_t>(T + 2, 1), 9};
  CHECK_THROWS_WITH(train::packChat({tooLong}, T, 0),
                    ContainsSubstring("line 9 has") && ContainsSubstring("not 2 to T + 1"));
}

TEST_CASE("chat loader: epochs see every sequence once, shards split the batch, state resumes",
          "[train][chat]") {
  const uint32_t T = 32;
  train::ChatLoader whole(train::packChat(randomExamples(50, T + 1), T, 0),
                          train::packChat(randomExamples(5, T + 1), T, 0), 11);
  const size_t n = whole.train().count();
  // One epoch: every sequence once (rows of 1 sequence; the rows' tokens identify them).
  std::set<std::vector<int32_t>> epoch;
  train::Batch b;
  uint64_t trained = 0;
  for (size_t i = 0; i < n; ++i) {
    whole.nextTrain(1, b);
    epoch.insert(b.tokens);
    trained += b.trainedTargets;
  }
  CHECK(epoch.size() == n);
  CHECK(trained == std::accumulate(whole.train().trained.begin(), whole.train().trained.end(), uint64_t{0}));
  // Ranks holding uneven runs of every micro-batch (1 and 3 rows of 4, two micro-batches) hold the whole
  // batch's rows between them, each counts the whole batch's trained targets, and all leave the same state.
  const uint64_t state = whole.state();
  const uint32_t batch = 4, accum = 2;
  train::Batch all, allVal;
  whole.nextTrain(accum * batch, all);
  whole.valBatch(1, batch, allVal);
  train::ChatLoader part(whole.train(), whole.eval(), 11);
  const auto row = [&](const std::vector<int32_t>& v, uint32_t r) {
    return std::vector<int32_t>(v.begin() + r * T, v.begin() + (r + 1) * T);
  };
  uint32_t first = 0;
  for (const uint32_t count : {1u, 3u}) {
    INFO("rows [" << first << ", " << first + count << ") of " << batch);
    const train::Shard shard{first, count, batch};
    train::Batch got, v;
    part.setState(state);
    part.nextTrain(accum * count, got, shard);
    CHECK(part.state() == whole.state());
    CHECK(got.trainedTargets == all.trainedTargets);
    REQUIRE(got.tokens.size() == size_t(accum * count) * T);
    for (uint32_t m = 0; m < accum; ++m)
      for (uint32_t j = 0; j < count; ++j) { // row j of micro-batch m: the process' row first + j of it
        const uint32_t mine = m * count + j, theirs = m * batch + first + j;
        CHECK(row(got.tokens, mine) == row(all.tokens, theirs));
        CHECK(row(got.targets, mine) == row(all.targets, theirs));
        CHECK(row(got.positions, mine) == row(all.positions, theirs));
      }
    part.valBatch(1, count, v, shard);
    CHECK(v.trainedTargets == allVal.trainedTargets);
    for (uint32_t j = 0; j < count; ++j)
      CHECK(row(v.positions, j) == row(allVal.positions, first + j));
    first += count;
  }
  train::Batch bad;
  CHECK_THROWS_AS(part.nextTrain(3, bad, {0, 2, batch}), std::invalid_argument); // not whole runs
  CHECK_THROWS_AS(part.nextTrain(2, bad, {3, 2, batch}), std::invalid_argument); // past the micro-batch
  // Evaluation batches are fixed and wrap around the evaluation sequences.
  train::Batch v0, v0again;
  whole.valBatch(0, 3, v0);
  whole.valBatch(0, 3, v0again);
  CHECK(v0.tokens == v0again.tokens);
  train::Batch wrapped;
  whole.valBatch(0, uint32_t(whole.eval().count() + 1), wrapped);
  CHECK(std::equal(wrapped.tokens.end() - T, wrapped.tokens.end(), wrapped.tokens.begin()));
}

TEST_CASE("chat data: the evaluation split, an evaluation file, and the hash", "[train][chat]") {
  const std::filesystem::path dir = test::tempDir("chat-data");
  const auto write = [&](const char* name, int n) {
    std::string text;
    for (int i = 0; i < n; ++i)
      text += example(i) + "\n";
    test::spit(dir / name, text);
    return (dir / name).string();
  };
  train::ChatDataConfig c;
  c.train = write("train.jsonl", 40);
  c.seqLen = 64;
  c.seed = 3;
  c.evalFraction = 0.25f;
  const train::ChatData held = train::openChatData(c, renderer(), 0);
  CHECK(held.trainExamples == 30);
  CHECK(held.evalExamples == 10);
  CHECK(held.loader->eval().examples == 10);
  CHECK(held.toJson()["eval_examples"] == 10);
  c.eval = write("eval.jsonl", 6);
  const train::ChatData file = train::openChatData(c, renderer(), 0);
  CHECK(file.trainExamples == 40);
  CHECK(file.evalExamples == 6);
  CHECK(file.toJson()["eval"]["examples"] == 6);
  CHECK(file.hash != held.hash);
  CHECK(train::openChatData(c, renderer(), 0).hash == file.hash);
  c.eval.clear();
  c.train = write("one.jsonl", 1);
  CHECK_THROWS_WITH(train::openChatData(c, renderer(), 0), ContainsSubstring("too few to hold out"));
  c.train = (dir / "missing.jsonl").string();
  CHECK_THROWS_WITH(train::openChatData(c, renderer(), 0), ContainsSubstring("missing.jsonl: cannot open"));
}
