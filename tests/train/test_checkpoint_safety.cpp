// What must never load or be saved silently: altered tensor bytes, swapped data offsets, altered metadata,
// NaN in weights or Adam moments, truncated files, files without checksums; non-finite state is never
// written over a good checkpoint and repeated non-finite losses stop training. And the run directory's
// checkpoint set: step directories, `latest`, --keep, debris removal, resolution of --resume paths.
#include "common.hpp"

#include "engine/train/checkpoint.hpp"
#include "engine/train/checkpoint_dir.hpp"
#include "engine/train/crc32c.hpp"
#include "engine/train/durable_file.hpp"
#include "support/files.hpp"
#include "support/safetensors_edit.hpp"

#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <random>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

using test::slurp;
using test::spit;

uint64_t headerLength(const std::string& raw) {
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  return n;
}

// A bigram run of `steps` steps saved into `run`; returns the step directory.
fs::path savedRun(const fs::path& run, uint64_t steps) {
  auto cfg = test::bigramConfig();
  cfg.steps = steps;
  test::Run a(cfg);
  a.trainer->train();
  return a.trainer->saveCheckpoint(run);
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string readLatest(const fs::path& run) {
  std::string s = slurp(run / "checkpoints" / "latest");
  return s.substr(0, s.find('\n'));
}

} // namespace

TEST_CASE("crc32c: the standard check values", "[train][checkpoint]") {
  auto crc = [](const std::vector<uint8_t>& v) { return train::crc32c(std::as_bytes(std::span(v))); };
  const std::string digits = "123456789";
  CHECK(train::crc32c(std::as_bytes(std::span(digits))) == 0xE3069283u);
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), inc(32);
  for (int i = 0; i < 32; ++i)
    inc[i] = static_cast<uint8_t>(i);
  CHECK(crc(zeros) == 0x8A9136AAu); // RFC 3720, B.4
  CHECK(crc(ones) == 0x62A8AB43u);
  CHECK(crc(inc) == 0x46DD794Eu);
  // Any length, any split, against the bit-at-a-time definition.
  std::mt19937 gen(std::random_device{}());
  std::vector<uint8_t> r(1000 + gen() % 1000);
  for (auto& b : r)
    b = static_cast<uint8_t>(gen());
  uint32_t slow = ~0u;
  for (uint8_t b : r) {
    slow ^= b;
    for (int i = 0; i < 8; ++i)
      slow = (slow >> 1) ^ (0x82F63B78u & (0u - (slow & 1u)));
  }
  slow = ~slow;
  CHECK(crc(r) == slow);
  const size_t cut = gen() % r.size();
  const auto bytes = std::as_bytes(std::span(r));
  CHECK(train::crc32c(bytes.subspan(cut), train::crc32c(bytes.first(cut))) == slow);
}

TEST_CASE("checkpoint: altered, swapped, non-finite and truncated data are refused by name",
          "[train][checkpoint]") {
  HELIOS_REQUIRE_CORPUS();
  const auto dir = savedRun(test::tempDir("integrity"), 3);
  const fs::path model = dir / "model.safetensors", opt = dir / "optimizer.safetensors";
  const std::string goodModel = slurp(model), goodOpt = slurp(opt);
  auto fresh = train::makeModel(test::trainCtx(), {{"kind", "bigram"}, {"vocab", 256}}, 7);
  auto load = [&] { train::loadCheckpoint(test::trainCtx(), dir, *fresh, true); };
  REQUIRE_NOTHROW(load());

  SECTION("64 flipped bytes in a tensor's data") {
    std::string bad = goodModel;
    const size_t data = 8 + headerLength(bad);
    std::mt19937 gen(std::random_device{}());
    const size_t at = data + gen() % (bad.size() - data - 64);
    for (size_t i = at; i < at + 64; ++i)
      bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    spit(model, bad);
    CHECK_THROWS_WITH(load(),
                      ContainsSubstring("model.safetensors: checksum mismatch in tensor 'table.weight'"));
  }
  SECTION("one flipped bit") {
    std::string bad = goodOpt;
    bad[bad.size() - 3] = static_cast<char>(bad[bad.size() - 3] ^ 0x01);
    spit(opt, bad);
    CHECK_THROWS_WITH(load(), ContainsSubstring("checksum mismatch in tensor 'table.weight.v'"));
  }
  SECTION("the data offsets of two same-shape tensors swapped") {
    test::editSafetensors(opt, [](nlohmann::json& header) {
      REQUIRE(header.at("table.weight.m").at("shape") == header.at("table.weight.v").at("shape"));
      std::swap(header["table.weight.m"]["data_offsets"], header["table.weight.v"]["data_offsets"]);
    });
    CHECK_THROWS_WITH(load(),
                      ContainsSubstring("optimizer.safetensors: checksum mismatch in tensor 'table.weight."));
  }
  SECTION("two same-shape tensors swapped together with their checksum entries") {
    test::editSafetensors(opt, [](nlohmann::json& header) {
      std::swap(header["table.weight.m"]["data_offsets"], header["table.weight.v"]["data_offsets"]);
      auto sums = nlohmann::json::parse(header["__metadata__"]["helios.crc32c"].get<std::string>());
      std::swap(sums["table.weight.m"], sums["table.weight.v"]);
      header["__metadata__"]["helios.crc32c"] = sums.dump();
    });
    // Each tensor matches its (swapped) entry; the seal over the entries and the table does not.
    CHECK_THROWS_WITH(load(),
                      ContainsSubstring("optimizer.safetensors: checksum mismatch in the header seal"));
    CHECK_THROWS_WITH(train::checkpointTrainerState(dir),
                      ContainsSubstring("checksum mismatch in the header seal"));
  }
  SECTION("the checksums removed and a tensor altered: every read of the file refuses it") {
    test::editSafetensors(
        model, [](nlohmann::json& header) { header["__metadata__"].erase("helios.crc32c"); },
        [](std::string& data) { data[data.size() / 2] = static_cast<char>(data[data.size() / 2] ^ 0x40); });
    CHECK_THROWS_WITH(load(), ContainsSubstring("no tensor checksums"));
    CHECK_THROWS_WITH(train::checkpointModelConfig(dir), ContainsSubstring("no tensor checksums"));
    CHECK_THROWS_WITH(train::checkpointTokenizer(dir), ContainsSubstring("no tensor checksums"));
    CHECK_THROWS_WITH(train::readCheckpointFile(model), ContainsSubstring("no tensor checksums"));
  }
  SECTION("a file without the seal (written before it) still loads: its tensors are checked") {
    test::editSafetensors(model, [](nlohmann::json& header) {
      REQUIRE(header["__metadata__"].contains("helios.seal"));
      header["__metadata__"].erase("helios.seal");
    });
    CHECK_NOTHROW(load());
    CHECK_FALSE(train::readSafetensors(model).sealed);
    CHECK(train::readSafetensors(model).checksummed);
  }
  SECTION("altered metadata (the trainer state)") {
    std::string bad = goodOpt;
    const size_t at = bad.find("\\\"loss_scale\\\":");
    REQUIRE(at != std::string::npos);
    bad[at + 15] = bad[at + 15] == '1' ? '2' : '1'; // one digit of the loss scale
    spit(opt, bad);
    CHECK_THROWS_WITH(load(), ContainsSubstring("checksum mismatch in __metadata__"));
    CHECK_THROWS_WITH(train::checkpointTrainerState(dir),
                      ContainsSubstring("checksum mismatch in __metadata__"));
  }
  SECTION("NaN in the weights (with valid checksums)") {
    auto f = train::readSafetensors(model);
    f.tensors[0].data[1000] = std::numeric_limits<float>::quiet_NaN();
    train::writeSafetensors(model, f);
    CHECK_THROWS_WITH(load(), ContainsSubstring("tensor 'table.weight' holds NaN at element 1000"));
    CHECK_THROWS_WITH(train::loadCheckpoint(test::trainCtx(), dir, *fresh, false),
                      ContainsSubstring("tensor 'table.weight' holds NaN"));
  }
  SECTION("NaN or infinity in an Adam moment") {
    auto f = train::readSafetensors(opt);
    const bool nan = std::random_device{}() % 2 == 0;
    const std::string name = nan ? "table.weight.m" : "table.weight.v";
    for (auto& t : f.tensors)
      if (t.name == name)
        t.data[77] = nan ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    train::writeSafetensors(opt, f);
    CHECK_THROWS_WITH(load(),
                      ContainsSubstring("tensor '" + name + "' holds " + (nan ? "NaN" : "an infinity")));
    CHECK_NOTHROW(train::loadCheckpoint(test::trainCtx(), dir, *fresh, false)); // sampling needs no moments
  }
  SECTION("a truncated file") {
    spit(model, goodModel.substr(0, goodModel.size() - 4));
    CHECK_THROWS_WITH(load(), ContainsSubstring("model.safetensors: truncated"));
    spit(model, goodModel);
    spit(opt, goodOpt.substr(0, goodOpt.size() / 3));
    CHECK_THROWS_WITH(load(), ContainsSubstring("optimizer.safetensors: truncated"));
  }
  SECTION("a file without checksums (written before them)") {
    test::editSafetensors(model,
                          [](nlohmann::json& header) { header["__metadata__"].erase("helios.crc32c"); });
    CHECK_THROWS_WITH(load(), ContainsSubstring("no tensor checksums"));
  }
}

TEST_CASE("checkpoint: non-finite weights or moments are never saved", "[train][checkpoint]") {
  HELIOS_REQUIRE_CORPUS();
  const auto run = test::tempDir("refuse-nonfinite");
  auto cfg = test::bigramConfig();
  cfg.steps = 2;
  test::Run a(cfg, run);
  a.trainer->train(); // saves step 2
  REQUIRE(readLatest(run) == "step-000000002");
  const std::string before = slurp(run / "checkpoints" / "step-000000002" / "model.safetensors");
  auto& p = a.model->parameters()[0];
  std::mt19937 gen(std::random_device{}());
  const uint32_t at = static_cast<uint32_t>(gen() % p.elements);
  const float poison =
      gen() % 2 ? std::numeric_limits<float>::quiet_NaN() : -std::numeric_limits<float>::infinity();
  auto poisonAt = [&](const vk::BufferSlice& b) {
    auto v = test::trainCtx().downloadVector<float>(b, p.elements);
    v[at] = poison;
    test::trainCtx().uploadVector(b, v);
  };
  SECTION("in a weight") {
    poisonAt(p.data);
    CHECK_THROWS_WITH(a.trainer->saveCheckpoint(run),
                      ContainsSubstring("refusing to save the checkpoint of step 2: non-finite values in the "
                                        "weights of 'table.weight'") &&
                          ContainsSubstring("step-000000002 is kept"));
  }
  SECTION("in Adam's second moment") {
    poisonAt(p.v);
    CHECK_THROWS_WITH(a.trainer->saveCheckpoint(run),
                      ContainsSubstring("non-finite values in Adam's second moment (v) of 'table.weight'"));
  }
  CHECK(entries(run / "checkpoints") == std::vector<std::string>{"latest", "step-000000002"});
  CHECK(slurp(run / "checkpoints" / "step-000000002" / "model.safetensors") == before);
}

TEST_CASE("trainer: repeated non-finite losses stop training with an error", "[train]") {
  HELIOS_REQUIRE_CORPUS();
  auto cfg = test::bigramConfig();
  cfg.steps = 12;
  const uint32_t limit = GENERATE(1u, 3u, 5u);
  cfg.nonFiniteLimit = limit;
  test::Run a(cfg);
  auto& p = a.model->parameters()[0];
  std::vector<float> nan(p.elements, std::numeric_limits<float>::quiet_NaN());
  test::trainCtx().upload(p.data, std::as_bytes(std::span<const float>(nan)));
  CHECK_THROWS_AS(a.trainer->train(), train::NonFiniteLoss);
  const auto& r = a.trainer->records();
  REQUIRE(r.size() == limit); // it stopped at the limit
  for (const auto& rec : r)
    CHECK(std::isnan(rec.loss));
  test::Run b(cfg);
  test::trainCtx().upload(b.model->parameters()[0].data, std::as_bytes(std::span<const float>(nan)));
  CHECK_THROWS_WITH(b.trainer->train(), ContainsSubstring(fmt::format(
                                            "steps 1-{}: the loss was NaN {} times in a row", limit, limit)));
}

TEST_CASE("trainer: steps skipped by loss scaling are not non-finite losses", "[train]") {
  HELIOS_REQUIRE_CORPUS();
  auto cfg = test::bigramConfig();
  cfg.lossScale = std::ldexp(1.0f, 100); // every scaled gradient overflows: every step is skipped
  cfg.steps = 6;
  cfg.nonFiniteLimit = 1;
  SECTION("bigram, f32") {}
  SECTION("micro GPT, mixed precision") {
    if (!train::gptAvailable()) SKIP("this build has no GPT model");
    cfg = test::microGptConfig();
    cfg.seqLen = cfg.gpt.context = 32;
    cfg.batch = 2;
    cfg.gpt.precision = model::Precision::Mixed;
    cfg.lossScale = std::ldexp(1.0f, 100);
    cfg.steps = 6;
    cfg.nonFiniteLimit = 1;
  }
  test::Run a(cfg);
  CHECK_NOTHROW(a.trainer->train());
  const auto& r = a.trainer->records();
  REQUIRE(r.size() == 6);
  CHECK(r[0].skipped);
  for (const auto& rec : r)
    CHECK(std::isfinite(rec.loss));
}

TEST_CASE("config: keep and nonfinite_limit are validated and saved", "[train][checkpoint]") {
  train::TrainConfig c;
  CHECK(c.keepCheckpoints == 2);
  CHECK(c.nonFiniteLimit == 3);
  c.keepCheckpoints = 0;
  CHECK_THROWS_WITH(c.validate(), ContainsSubstring("keep must be in [1, 1000000], got 0"));
  c.keepCheckpoints = 5;
  c.nonFiniteLimit = 0;
  CHECK_THROWS_WITH(c.validate(), ContainsSubstring("nonfinite_limit must be at least 1"));
  c.nonFiniteLimit = 9;
  train::TrainConfig d;
  train::fromJson(train::toJson(c), d);
  CHECK(d.keepCheckpoints == 5);
  CHECK(d.nonFiniteLimit == 9);
}

TEST_CASE("checkpoint directory: --keep, latest, debris and abandoned steps", "[train][checkpoint]") {
  HELIOS_REQUIRE_CORPUS();
  const auto run = test::tempDir("keep");
  auto cfg = test::bigramConfig();
  cfg.steps = 7;
  cfg.checkpointEvery = 1;
  cfg.keepCheckpoints = 3;
  {
    test::Run a(cfg, run);
    a.trainer->train();
  }
  const fs::path root = run / "checkpoints";
  CHECK(entries(root) ==
        std::vector<std::string>{"latest", "step-000000005", "step-000000006", "step-000000007"});
  CHECK(readLatest(run) == "step-000000007");
  CHECK(train::resolveCheckpoint(run) == root / "step-000000007");
  CHECK(train::resolveCheckpoint(root / "step-000000006" / "") == root / "step-000000006");
  CHECK(train::runOfCheckpoint(root / "step-000000006") == run);

  // What an interrupted save leaves, and a newer step directory of an abandoned continuation: ignored by
  // resume, removed by the next successful save.
  fs::create_directories(root / "step-000000008.partial");
  spit(root / "step-000000008.partial" / "model.safetensors.partial", "torn");
  spit(root / "latest.partial", "step-0000");
  fs::copy(root / "step-000000007", root / "step-000000012");
  spit(root / "latest", "step-000000007\n");
  CHECK(train::resolveCheckpoint(run) == root / "step-000000007"); // `latest` decides, not the newest
  fs::create_directories(root / "notes");                          // not ours: left alone
  cfg.steps = 9;
  cfg.keepCheckpoints = 2;
  test::Run b(cfg, run);
  b.trainer->resume(run);
  CHECK(b.trainer->stepsDone() == 7);
  b.trainer->train();
  CHECK(entries(root) == std::vector<std::string>{"latest", "notes", "step-000000008", "step-000000009"});

  // Without `latest` (a crash before the first one was written), the newest complete step directory.
  fs::remove(root / "latest");
  CHECK(train::resolveCheckpoint(run) == root / "step-000000009");
  spit(root / "latest", "step-000000003\n"); // names a pruned directory
  CHECK(train::resolveCheckpoint(run) == root / "step-000000009");

  // Saving the current step again replaces it in one exchange.
  spit(root / "latest", "step-000000009\n");
  const auto again = b.trainer->saveCheckpoint(run);
  CHECK(again == root / "step-000000009");
  CHECK(entries(root) == std::vector<std::string>{"latest", "notes", "step-000000008", "step-000000009"});
  CHECK_NOTHROW(train::checkpointTrainerState(again));
}

TEST_CASE("checkpoint directory: --resume paths that hold no checkpoint are refused", "[train][checkpoint]") {
  const auto dir = test::tempDir("resolve");
  CHECK_THROWS_WITH(train::resolveCheckpoint(dir / "missing"),
                    ContainsSubstring("no such checkpoint or run directory"));
  CHECK_THROWS_WITH(train::resolveCheckpoint(dir), ContainsSubstring("not a checkpoint"));
  fs::create_directories(dir / "checkpoints" / "step-000000004.partial");
  CHECK_THROWS_WITH(train::resolveCheckpoint(dir), ContainsSubstring("no complete checkpoint"));
  CHECK(train::parseCheckpointDirName("step-000000004") == 4u);
  CHECK(!train::parseCheckpointDirName("step-000000004.partial"));
  CHECK(!train::parseCheckpointDirName("step-"));
  CHECK(!train::parseCheckpointDirName("step-99999999999999999999999"));
  CHECK(train::checkpointDirName(123) == "step-000000123");
}

TEST_CASE("durable files: the test hook's value is checked", "[train][checkpoint]") {
  CHECK(!train::parseSavePauseMs(nullptr));
  CHECK(train::parseSavePauseMs("25") == 25u);
  for (const char* bad : {"", "-1", "1.5", "20ms", "10001"})
    CHECK_THROWS_WITH(train::parseSavePauseMs(bad), ContainsSubstring("HELIOS_TEST_SAVE_PAUSE_MS"));
  const auto dir = test::tempDir("durable");
  train::writeFileDurably(dir / "f", "first");
  train::writeFileDurably(dir / "f", "second");
  CHECK(slurp(dir / "f") == "second");
  CHECK(entries(dir) == std::vector<std::string>{"f"});
  // A symlink planted under an old temporary name is never written through.
  spit(dir / "victim", "keep me");
  fs::create_symlink(dir / "victim", dir / "f.partial");
  train::writeFileDurably(dir / "f", "third");
  CHECK(slurp(dir / "victim") == "keep me");
  CHECK(slurp(dir / "f") == "third");
  CHECK(entries(dir) == std::vector<std::string>{"f", "f.partial", "victim"});
}
