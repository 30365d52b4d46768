// safetensors files and checkpoints: a round trip keeps every bit; truncated files, bad headers, wrong
// dtypes, wrong shapes, other architectures and model/optimizer files from different steps are refused by
// name.
#include "common.hpp"

#include "engine/train/checkpoint.hpp"
#include "support/files.hpp"

#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstring>
#include <fstream>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

using test::slurp;
using test::spit;

train::SafeTensorsFile sample() {
  train::SafeTensorsFile f;
  f.metadata = {{"format", "pt"}, {"note", "hello"}};
  f.tensors.push_back({"a.weight", {2, 3}, {1, 2, 3, 4, 5, -0.0f}});
  f.tensors.push_back({"b", {4}, {1e-30f, 3.4e38f, -7, 0.5f}});
  f.tensors.push_back({"scalar", {}, {42}});
  return f;
}

} // namespace

TEST_CASE("safetensors: round trip and layout", "[train][checkpoint]") {
  const auto dir = test::tempDir("safetensors");
  const auto path = dir / "x.safetensors";
  train::writeSafetensors(path, sample());
  const auto back = train::readSafetensors(path);
  CHECK(back.metadata == sample().metadata);
  REQUIRE(back.tensors.size() == 3);
  for (const auto& t : sample().tensors) {
    const auto* u = back.find(t.name);
    REQUIRE(u);
    CHECK(u->shape == t.shape);
    CHECK(std::memcmp(u->data.data(), t.data.data(), 4 * t.data.size()) == 0);
  }
  // The format itself: u64 LE header length, JSON header (multiple of 8), then the data.
  const std::string raw = slurp(path);
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  CHECK(n % 8 == 0);
  const auto header = nlohmann::json::parse(raw.substr(8, n));
  CHECK(header.at("a.weight").at("dtype") == "F32");
  CHECK(header.at("a.weight").at("data_offsets") == nlohmann::json::array({0, 24}));
  CHECK(header.at("__metadata__").at("note") == "hello");
  CHECK(raw.size() == 8 + n + 4 * (6 + 4 + 1));
  for (const auto& e :
       fs::directory_iterator(dir)) // no temporary left (engine/io/atomic_file names them *.partial-*)
    CHECK(e.path().filename().string().find(".partial") == std::string::npos);
  // The checksums: a JSON object in the metadata, verified and removed on reading.
  const auto sums = nlohmann::json::parse(header.at("__metadata__").at("helios.crc32c").get<std::string>());
  CHECK(sums.at("a.weight").get<std::string>().size() == 8);
  CHECK(sums.contains("__metadata__"));
  CHECK(back.checksummed);
}

TEST_CASE("safetensors: broken files are refused with the reason", "[train][checkpoint]") {
  const auto dir = test::tempDir("safetensors-bad");
  const auto path = dir / "x.safetensors";
  train::writeSafetensors(path, sample());
  const std::string good = slurp(path);

  spit(path, good.substr(0, good.size() - 5));
  CHECK_THROWS_WITH(train::readSafetensors(path), ContainsSubstring("truncated"));
  spit(path, good.substr(0, 4));
  CHECK_THROWS_WITH(train::readSafetensors(path), ContainsSubstring("truncated"));
  spit(path, good + "xx");
  CHECK_THROWS_WITH(train::readSafetensors(path), ContainsSubstring("trailing bytes"));
  std::string bad = good;
  bad[9] = '#'; // inside the JSON
  spit(path, bad);
  CHECK_THROWS_WITH(train::readSafetensors(path), ContainsSubstring("bad header"));
  bad = good;
  bad[7] = '\x7f'; // an absurd header length
  spit(path, bad);
  CHECK_THROWS_WITH(train::readSafetensors(path), ContainsSubstring("header length"));
  bad = good;
  bad.replace(bad.find("F32"), 3, "F16");
  spit(path, bad);
  CHECK_THROWS_WITH(train::readSafetensors(path), ContainsSubstring("dtype F16"));
  CHECK_THROWS_WITH(train::readSafetensors(dir / "missing.safetensors"), ContainsSubstring("cannot open"));
}

TEST_CASE("checkpoint: weights round trip; other architectures, shapes and steps are refused",
          "[train][checkpoint]") {
  HELIOS_REQUIRE_CORPUS();
  const auto run = test::tempDir("checkpoint");
  auto cfg = test::bigramConfig();
  cfg.steps = 3;
  test::Run a(cfg);
  a.trainer->train();
  const auto dir = a.trainer->saveCheckpoint(run); // the step directory
  const auto weights = a.weights();

  // Into a fresh model (different init seed): the weights come back bit for bit.
  auto fresh = train::makeModel(test::trainCtx(), {{"kind", "bigram"}, {"vocab", 256}}, 999);
  train::loadCheckpoint(test::trainCtx(), dir, *fresh, true);
  auto v =
      test::trainCtx().downloadVector<float>(fresh->parameters()[0].data, fresh->parameters()[0].elements);
  CHECK(v == weights);
  CHECK(train::checkpointModelConfig(dir) == fresh->configJson());
  CHECK(train::checkpointTokenizer(dir).at("kind") == "byte");
  CHECK(train::checkpointTrainerState(dir).at("step") == 3);

  // Another architecture.
  auto other = train::makeModel(test::trainCtx(), {{"kind", "bigram"}, {"vocab", 128}}, 1);
  CHECK_THROWS_WITH(train::loadCheckpoint(test::trainCtx(), dir, *other, false),
                    ContainsSubstring("architecture differs") &&
                        ContainsSubstring("vocab 256 (checkpoint) vs 128"));

  // A tensor of the wrong shape under the right architecture metadata.
  auto file = train::readSafetensors(dir / "model.safetensors");
  file.tensors[0].shape = {128, 512};
  train::writeSafetensors(dir / "model.safetensors", file);
  CHECK_THROWS_WITH(train::loadCheckpoint(test::trainCtx(), dir, *fresh, false),
                    ContainsSubstring("'table.weight' has shape [128, 512], the model expects [256, 256]"));
  // A missing tensor.
  file.tensors[0].name = "something.else";
  file.tensors[0].shape = {256, 256};
  train::writeSafetensors(dir / "model.safetensors", file);
  CHECK_THROWS_WITH(train::loadCheckpoint(test::trainCtx(), dir, *fresh, false),
                    ContainsSubstring("tensor 'table.weight' is missing"));
  // Model and optimizer from different steps (an interrupted save).
  file.tensors[0].name = "table.weight";
  file.metadata["helios.step"] = "2";
  train::writeSafetensors(dir / "model.safetensors", file);
  CHECK_THROWS_WITH(train::loadCheckpoint(test::trainCtx(), dir, *fresh, true),
                    ContainsSubstring("from step 2 but optimizer.safetensors from step 3"));
  // Truncated optimizer file.
  file.metadata["helios.step"] = "3";
  train::writeSafetensors(dir / "model.safetensors", file);
  const std::string opt = slurp(dir / "optimizer.safetensors");
  spit(dir / "optimizer.safetensors", opt.substr(0, opt.size() / 2));
  CHECK_THROWS_WITH(train::loadCheckpoint(test::trainCtx(), dir, *fresh, true),
                    ContainsSubstring("truncated"));

  // A trainer refuses a checkpoint of a different corpus.
  spit(dir / "optimizer.safetensors", opt);
  test::Run b(cfg);
  nlohmann::json st = train::checkpointTrainerState(dir);
  REQUIRE(st.at("data").at("hash") == 42);
  auto f2 = train::readSafetensors(dir / "optimizer.safetensors");
  st["data"]["hash"] = 7;
  f2.metadata["helios.trainer"] = st.dump();
  train::writeSafetensors(dir / "optimizer.safetensors", f2);
  CHECK_THROWS_WITH(b.trainer->resume(dir), ContainsSubstring("the checkpoint was trained on kjv"));
}

TEST_CASE("checkpoint: how a GPT computes may change on resume, its shape may not", "[train][checkpoint]") {
  HELIOS_REQUIRE_CORPUS();
  if (!train::gptAvailable()) SKIP("this build has no GPT model");
  const auto run = test::tempDir("checkpoint-gpt");
  auto cfg = test::microGptConfig();
  cfg.steps = 2;
  test::Run a(cfg);
  a.trainer->train();
  const auto dir = a.trainer->saveCheckpoint(run);
  // Precision, recomputation and the mixed-precision fusions are free; a checkpoint written before a key
  // existed (here: the fusion flags removed from its metadata) loads too.
  auto file = train::readSafetensors(dir / "model.safetensors");
  nlohmann::json arch = nlohmann::json::parse(file.metadata.at("helios.model"));
  arch.erase("fused_casts");
  arch.erase("f16_logits");
  arch.erase("f16_grads");
  arch.erase("packed_attention");
  arch.erase("f16_hidden");
  file.metadata["helios.model"] = arch.dump();
  train::writeSafetensors(dir / "model.safetensors", file);
  auto computes = cfg;
  computes.gpt.precision = model::Precision::Mixed;
  computes.gpt.fusedCasts = false;
  computes.gpt.f16Logits = false;
  computes.gpt.f16Grads = false;
  computes.gpt.packedAttention = false;
  computes.gpt.f16Hidden = false;
  computes.gpt.checkpointActivations = true;
  auto other = train::makeModel(test::trainCtx(), test::modelJsonFor(computes), 5);
  CHECK_NOTHROW(train::loadCheckpoint(test::trainCtx(), dir, *other, true));
  auto wider = cfg;
  wider.gpt.dim = 128;
  auto shaped = train::makeModel(test::trainCtx(), test::modelJsonFor(wider), 5);
  CHECK_THROWS_WITH(train::loadCheckpoint(test::trainCtx(), dir, *shaped, false),
                    ContainsSubstring("architecture differs") &&
                        ContainsSubstring("dim 64 (checkpoint) vs 128"));
}
