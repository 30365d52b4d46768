// Training on chat data (engine/train/chat_loader, the trainer's masked loss): only assistant targets count
// (other ignored values change no bit, an assistant target does), the packed batch's loss is the sum of its
// documents run one by one, and a short run's loss falls on a chat JSONL written here, with the data's
// counts in metrics.jsonl.
#include "chat_test_tokenizer.hpp"
#include "common.hpp"
#include "engine/ops/elem_support.hpp"
#include "engine/train/chat_loader.hpp"
#include "engine/train/model.hpp"
#include "engine/train/sampler.hpp"
#include "support/files.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fstream>

using namespace helios;

namespace {

constexpr uint32_t kT = 64, kRows = 4;

const train::Tokenizer& tok() {
  return test::chatmlTestTokenizer();
}

const train::ChatRenderer& renderer() {
  return test::chatmlRenderer();
}

// Additions of two digits: "What is 3 + 4?" -> "7" (a system message on every third).
std::string additionLine(int i) {
  const int a = i % 10, b = (i / 10) % 10;
  const std::string system = i % 3 ? "" : R"({"role": "system", "content": "Add."}, )";
  return fmt::format(R"({{"messages": [{}{{"role": "user", "content": "What is {} + {}?"}}, )"
                     R"({{"role": "assistant", "content": "{}"}}]}})",
                     system, a, b, a + b);
}

std::string additionJsonl(int n, int from = 0) {
  std::string s;
  for (int i = from; i < from + n; ++i)
    s += additionLine(i) + "\n";
  return s;
}

train::TrainConfig chatGptConfig() {
  train::TrainConfig c = test::microGptConfig();
  c.gpt.vocab = tok().vocab();
  c.gpt.dim = 32;
  c.gpt.context = kT;
  c.seqLen = kT;
  c.batch = kRows;
  return c;
}

// Loss and every gradient of one forwardBackward on a batch (f32, the fused fallback attention).
struct Step {
  float loss = 0;
  std::vector<float> grads;
};

Step step(train::Model& m, const train::Batch& b) {
  vk::Context& ctx = test::trainCtx();
  vk::Buffer tokens = ctx.buffer(b.tokens.size() * 4, "tokens"),
             targets = ctx.buffer(b.tokens.size() * 4, "targets"),
             positions = ctx.buffer(b.tokens.size() * 4, "positions"), loss = ctx.buffer(4, "loss");
  ctx.uploadVector(tokens, b.tokens);
  ctx.uploadVector(targets, b.targets);
  ctx.uploadVector(positions, b.positions);
  for (auto& p : m.parameters())
    ctx.uploadVector(p.grad, std::vector<float>(p.elements, 0.0f));
  ops::ImmediateExecutor exec(ctx);
  graph::StepArena arena(ctx);
  const uint32_t rows = uint32_t(b.tokens.size() / kT);
  m.forwardBackward(exec, arena, tokens.range(), targets.range(), rows, kT, loss.range(), 1.0f,
                    positions.range());
  exec.flush();
  Step s{ctx.downloadVector<float>(loss, 1)[0], {}};
  for (auto& p : m.parameters()) {
    const auto g = ctx.downloadVector<float>(p.grad, p.elements);
    s.grads.insert(s.grads.end(), g.begin(), g.end());
  }
  return s;
}

train::ChatLoader additionLoader(int examples) {
  train::ChatFileStats stats;
  const auto ex =
      train::readChatExamples("add.jsonl", additionJsonl(examples), renderer(), {kT, false}, stats);
  return train::ChatLoader(train::packChat(ex, kT, 0), {}, 5);
}

} // namespace

TEST_CASE("chat training: only assistant targets count in the loss and the gradients", "[train][gpt][chat]") {
  const train::TrainConfig cfg = chatGptConfig();
  auto model = train::makeModel(test::trainCtx(), test::modelJsonFor(cfg), 9);
  train::ChatLoader loader = additionLoader(40);
  train::Batch b;
  loader.nextTrain(kRows, b);
  REQUIRE(b.trainedTargets > 0);
  const Step base = step(*model, b);
  REQUIRE(std::isfinite(base.loss));
  // Every ignored target rewritten to another ignored value (-100, -7, vocab, vocab + 11): the same bits.
  train::Batch other = b;
  const int32_t V = int32_t(cfg.gpt.vocab);
  const int32_t ignored[] = {-100, -7, V, V + 11};
  size_t k = 0;
  for (int32_t& t : other.targets)
    if (t < 0) t = ignored[k++ % 4];
  const Step same = step(*model, other);
  CHECK(std::memcmp(&same.loss, &base.loss, 4) == 0);
  CHECK(same.grads == base.grads);
  // One assistant target changed: another loss and other gradients.
  train::Batch changed = b;
  const auto it =
      std::find_if(changed.targets.begin(), changed.targets.end(), [](int32_t t) { return t >= 0; });
  *it = (*it + 1) % V;
  const Step moved = step(*model, changed);
  CHECK(moved.loss != base.loss);
  CHECK(moved.grads != base.grads);
}

TEST_CASE("chat training: a packed batch's loss is its documents' losses run one by one",
          "[train][gpt][chat]") {
  const train::TrainConfig cfg = chatGptConfig();
  auto model = train::makeModel(test::trainCtx(), test::modelJsonFor(cfg), 4);
  train::ChatLoader loader = additionLoader(30);
  train::Batch b;
  loader.nextTrain(kRows, b);
  // The model averages over every token: the packed batch's sum against each document's sum alone.
  const double packed = double(step(*model, b).loss) * kRows * kT;
  double alone = 0;
  for (size_t at = 0; at < b.tokens.size();) {
    size_t end = at + 1;
    while (end < b.tokens.size() && b.positions[end] != 0)
      ++end;
    // One document as a batch of one sequence of its own length (padding runs alone as well).
    const uint32_t n = uint32_t(end - at);
    vk::Context& ctx = test::trainCtx();
    vk::Buffer tokens = ctx.buffer(n * 4, "doc tokens"), targets = ctx.buffer(n * 4, "doc targets"),
               loss = ctx.buffer(4, "doc loss");
    ctx.uploadVector(tokens, std::vector<int32_t>(b.tokens.begin() + at, b.tokens.begin() + end));
    ctx.uploadVector(targets, std::vector<int32_t>(b.targets.begin() + at, b.targets.begin() + end));
    ops::ImmediateExecutor exec(ctx);
    graph::StepArena arena(ctx);
    const vk::BufferRange tr = targets.range(), lr = loss.range();
    model->forward(exec, arena, tokens.range(), 1, n, {}, &tr, &lr);
    exec.flush();
    alone += double(ctx.downloadVector<float>(loss, 1)[0]) * n;
    at = end;
  }
  INFO("packed " << packed << ", documents alone " << alone);
  CHECK(std::abs(packed - alone) <= 1e-5 * std::abs(alone));
}

TEST_CASE("chat training: a short run's loss falls on a chat JSONL; counts in metrics.jsonl",
          "[train][gpt][chat]") {
  const std::filesystem::path dir = test::tempDir("chat-run");
  // 60 additions, one malformed line and one with an empty answer (skipped and counted).
  std::string jsonl = additionJsonl(30) + "{\"messages\": [\n" + additionJsonl(30, 30) +
                      R"({"prompt": "What is 1 + 1?", "completion": " "})" + "\n";
  test::spit(dir / "train.jsonl", jsonl);
  train::ChatDataConfig dc;
  dc.train = (dir / "train.jsonl").string();
  dc.evalFraction = 0.1;
  dc.skipBadLines = true;
  dc.seqLen = kT;
  dc.seed = 1;
  train::ChatData data = train::openChatData(dc, renderer(), 0);
  CHECK(data.trainFile.skippedLines() == 2);
  CHECK(data.trainFile.tooLong == 0);
  CHECK(data.evalExamples == 6);
  train::TrainConfig cfg = chatGptConfig();
  cfg.steps = 60;
  cfg.lr = 1e-2f;
  cfg.warmup = 5;
  cfg.evalEvery = 30;
  cfg.evalBatches = 1;
  auto model = train::makeModel(test::trainCtx(), test::modelJsonFor(cfg), cfg.seed);
  const train::DataInfo info{dc.train,       data.hash, data.loader->trainTokens(),
                             tok().toJson(), {},        data.toJson()};
  train::Trainer trainer(test::trainCtx(), *model, cfg, *data.loader, info, dir / "run");
  const float before = trainer.evaluate();
  // The loss is a mean over assistant targets: near ln(vocab) for the untrained model (a mean over every
  // token would be a fraction of it).
  CHECK(std::abs(before - std::log(float(cfg.gpt.vocab))) < 1.0f);
  trainer.train();
  const auto& recs = trainer.records();
  REQUIRE(recs.size() == 60);
  CHECK(recs.front().trainedTokens > 0);
  CHECK(recs.back().loss < 0.5f * recs.front().loss);
  REQUIRE(recs.back().valLoss);
  INFO("eval loss " << before << " -> " << *recs.back().valLoss);
  CHECK(*recs.back().valLoss < 0.6f * before);
  // metrics.jsonl opens with what reading the data counted; steps carry their trained tokens.
  const std::string metrics = test::slurp(dir / "run" / "metrics.jsonl");
  const nlohmann::json first = nlohmann::json::parse(metrics.substr(0, metrics.find('\n')));
  CHECK(first["step"] == 0);
  CHECK(first["data"]["train"]["skipped"]["malformed JSON"] == 1);
  CHECK(first["data"]["train"]["skipped"]["empty assistant turn"] == 1);
  CHECK(first["data"]["eval_examples"] == 6);
  const size_t second = metrics.find('\n') + 1;
  CHECK(nlohmann::json::parse(metrics.substr(
            second, metrics.find('\n', second) - second))["trained_tokens"] == recs.front().trainedTokens);
}

TEST_CASE("chat training: a resumed run draws the same batches and gives the same losses",
          "[train][gpt][chat]") {
  // An epoch of the loader holds 10-odd sequences: the 12 steps cross epochs, and the checkpoint sits inside
  // one.
  const std::filesystem::path dir = test::tempDir("chat-resume");
  train::ChatFileStats stats;
  const auto examples =
      train::readChatExamples("add.jsonl", additionJsonl(20), renderer(), {kT, false}, stats);
  const train::PackedChat packed = train::packChat(examples, kT, 0);
  train::TrainConfig cfg = chatGptConfig();
  cfg.steps = 12;
  cfg.evalEvery = 0;
  const auto trainer = [&](train::ChatLoader& loader, train::Model& model) {
    const train::DataInfo info{"add.jsonl", 1, loader.trainTokens(), tok().toJson(), {}, {}};
    return std::make_unique<train::Trainer>(test::trainCtx(), model, cfg, loader, info,
                                            std::filesystem::path());
  };
  train::ChatLoader wholeData(packed, {}, 2), resumedData(packed, {}, 2);
  auto wholeModel = train::makeModel(test::trainCtx(), test::modelJsonFor(cfg), cfg.seed);
  auto resumedModel = train::makeModel(test::trainCtx(), test::modelJsonFor(cfg), cfg.seed);
  auto whole = trainer(wholeData, *wholeModel);
  for (int i = 0; i < 12; ++i) {
    whole->step();
    if (i == 6) whole->saveCheckpoint(dir);
  }
  whole->flushOutputs();
  auto resumed = trainer(resumedData, *resumedModel);
  resumed->resume(dir);
  REQUIRE(resumed->stepsDone() == 7);
  for (int i = 7; i < 12; ++i)
    resumed->step();
  resumed->flushOutputs();
  const auto& a = whole->records();
  const auto& b = resumed->records();
  REQUIRE(b.size() == 5);
  for (size_t i = 0; i < b.size(); ++i) {
    INFO("step " << b[i].step);
    CHECK(std::memcmp(&a[i + 7].loss, &b[i].loss, 4) == 0);
    CHECK(a[i + 7].trainedTokens == b[i].trainedTokens);
  }
}

// Mixed and bf16 precision take the coop attention on the packed QKV rows where it runs (lowered in the
// coop-emulated entries), with the documents' mask on each element type: the same step as f32 within f16's
// rounding (bf16's 8-bit significand: 8x f16's tolerances).
TEST_CASE("chat training: mixed and bf16 precision on packed documents follow f32 (coop attention, or "
          "lowered)",
          "[train][gpt][coop][chat]") {
  train::TrainConfig cfg = chatGptConfig(); // head dim 16
  train::ChatLoader loader = additionLoader(30);
  train::Batch b;
  loader.nextTrain(kRows, b);
  auto f32 = train::makeModel(test::trainCtx(), test::modelJsonFor(cfg), 3);
  const Step want = step(*f32, b);
  for (const model::Precision precision : {model::Precision::Mixed, model::Precision::BF16}) {
    if (precision == model::Precision::BF16 &&
        !ops::supportsElem(test::trainCtx().device().features(), codegen::Elem::BF16))
      continue;
    INFO(train::precisionName(precision));
    cfg.gpt.precision = precision;
    auto half = train::makeModel(test::trainCtx(), test::modelJsonFor(cfg), 3); // the same initial weights
    const Step got = step(*half, b);
    const double coarse = precision == model::Precision::BF16 ? 8.0 : 1.0;
    CHECK(std::abs(got.loss - want.loss) <= 2e-3 * coarse * std::abs(want.loss));
    CHECK(ref::relError(got.grads, ref::Vec(want.grads.begin(), want.grads.end())) < 3e-2 * coarse);
  }
}

TEST_CASE("chat sampling: the rendered prompt is continued and a stop id ends the answer",
          "[train][gpt][chat]") {
  const train::TrainConfig cfg = chatGptConfig();
  auto model = train::makeModel(test::trainCtx(), test::modelJsonFor(cfg), 5);
  train::SampleOptions o;
  o.promptIds = renderer().prompt({{train::ChatRole::User, "What is 2 + 3?"}});
  o.tokens = 6;
  o.temperature = 0;
  std::vector<int32_t> ids; // the greedy answer's ids, from its pieces (a byte, or a special token's name)
  train::SampleStats free, stopped;
  train::generate(
      test::trainCtx(), *model, tok(), o,
      [&](const std::string& piece) {
        ids.push_back(piece.size() == 1 ? static_cast<unsigned char>(piece[0]) : test::chatSpecial(piece));
      },
      &free);
  REQUIRE(free.tokens == 6);
  REQUIRE(ids.size() == 6);
  // Told to stop at the first id that is new after the first one (else at the first): the answer up to it.
  size_t k = 1;
  while (k < ids.size() && std::find(ids.begin(), ids.begin() + k, ids[k]) != ids.begin() + k)
    ++k;
  if (k == ids.size()) k = 0;
  o.stopIds = {ids[k]};
  train::generate(test::trainCtx(), *model, tok(), o, {}, &stopped);
  CHECK(stopped.tokens == k);
  CHECK(stopped.stoppedAtEot);
}
