// Tokenizers and the data loader: round trips, the char-level vocabulary, the validation split, and
// deterministic sampling from a seed and a saved state.
#include "engine/train/config.hpp"
#include "engine/train/data.hpp"
#include "engine/train/stored_tokenizer.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <unistd.h>

using namespace helios;
using Catch::Matchers::ContainsSubstring;

TEST_CASE("tokenizers: byte-level and char-level round trips", "[train][data]") {
  const std::string text = "In the beginning God created the heaven and the earth.\n";
  const auto byte = train::Tokenizer::byteLevel();
  CHECK(byte.vocab() == 256);
  CHECK(byte.decode(byte.encode(text)) == text);
  CHECK(byte.encode("A")[0] == 65);

  const auto chars = train::Tokenizer::charLevel(text);
  CHECK(chars.vocab() == 18); // distinct characters of the text
  const auto ids = chars.encode(text);
  CHECK(*std::max_element(ids.begin(), ids.end()) == 17);
  CHECK(chars.decode(ids) == text);
  CHECK(chars.encode("\n")[0] == 0); // sorted by byte value
  CHECK_THROWS_WITH(chars.encode("Z"), ContainsSubstring("'Z' (0x5a)"));
  CHECK(chars.decode(1000) == "?");
  CHECK(train::Tokenizer::fromJson(chars.toJson()) == chars);
  CHECK(train::Tokenizer::fromJson(byte.toJson()) == byte);
  CHECK_THROWS(train::Tokenizer::make("bpe", text));
}

TEST_CASE("data loader: split, deterministic batches, state", "[train][data]") {
  std::vector<int32_t> tokens(1000);
  std::iota(tokens.begin(), tokens.end(), 0);
  train::DataLoader a(tokens, 16, 7);
  CHECK(a.trainTokens() == 900);
  CHECK(a.valTokens() == 100);
  std::vector<int32_t> x, y, x2, y2;
  a.nextTrain(4, x, y);
  REQUIRE(x.size() == 64);
  for (size_t i = 0; i < x.size(); ++i) {
    CHECK(y[i] == x[i] + 1); // targets are the next tokens
    CHECK(y[i] < 900);       // inside the training split
  }
  train::DataLoader b(tokens, 16, 7);
  b.nextTrain(4, x2, y2);
  CHECK(x == x2);
  const uint64_t state = a.state();
  a.nextTrain(4, x, y);
  b.setState(state);
  b.nextTrain(4, x2, y2);
  CHECK(x == x2);

  a.valBatch(0, 3, x, y);
  for (auto t : x)
    CHECK(t >= 900);
  b.valBatch(0, 3, x2, y2);
  CHECK(x == x2); // the same validation batch whatever the loader's state
  a.valBatch(1, 3, x2, y2);
  CHECK(x != x2);

  CHECK_THROWS_WITH(train::DataLoader(std::vector<int32_t>(100), 16, 1),
                    ContainsSubstring("seq_len + 1 = 17"));
}

TEST_CASE("data loader: ranks' shares of every micro-batch together hold one process' batch, whatever the "
          "split",
          "[train][data]") {
  std::vector<int32_t> tokens(5000);
  std::iota(tokens.begin(), tokens.end(), 0);
  const uint32_t T = 8, batch = 6, accum = 2;
  // Even, uneven and one rank holding all but one row; each split's rows tile the micro-batch.
  for (const std::vector<uint32_t>& split : {std::vector<uint32_t>{3, 3}, {1, 2, 3}, {4, 1, 1}, {5, 1}}) {
    INFO("split " << split.size() << " ranks, first " << split[0]);
    train::DataLoader whole(tokens, T, 11);
    std::vector<int32_t> x, y;
    whole.nextTrain(accum * batch, x, y); // a step the single process takes first, then the step compared
    whole.nextTrain(accum * batch, x, y);
    uint32_t first = 0;
    for (const uint32_t count : split) {
      const train::Shard shard{first, count, batch};
      train::DataLoader part(tokens, T, 11);
      std::vector<int32_t> px, py;
      part.nextTrain(accum * count, px, py, shard);
      part.nextTrain(accum * count, px, py, shard);
      REQUIRE(px.size() == size_t(accum * count) * T);
      for (uint32_t m = 0; m < accum; ++m)
        for (uint32_t j = 0; j < count; ++j)
          for (uint32_t t = 0; t < T; ++t) { // row j of micro-batch m is the process' row first + j of it
            CHECK(px[size_t(m * count + j) * T + t] == x[size_t(m * batch + first + j) * T + t]);
            CHECK(py[size_t(m * count + j) * T + t] == y[size_t(m * batch + first + j) * T + t]);
          }
      CHECK(part.state() == whole.state()); // the data position depends on neither the ranks nor the shares
      std::vector<int32_t> vx, vy, pvx, pvy;
      whole.valBatch(1, batch, vx, vy);
      part.valBatch(1, count, pvx, pvy, shard);
      for (uint32_t j = 0; j < count; ++j)
        CHECK(pvx[size_t(j) * T] == vx[size_t(first + j) * T]);
      first += count;
    }
  }
  train::DataLoader loader(tokens, T, 11);
  std::vector<int32_t> x, y;
  CHECK_THROWS_AS(loader.nextTrain(5, x, y, {0, 2, batch}), std::invalid_argument); // not whole micro-batches
  CHECK_THROWS_AS(loader.nextTrain(4, x, y, {5, 2, batch}), std::invalid_argument); // past the micro-batch
}

TEST_CASE("data: a missing default corpus names the bootstrap", "[train][data]") {
  CHECK_THROWS_WITH(train::readCorpus("/nonexistent/file.txt"), ContainsSubstring("cannot open"));
}

TEST_CASE("data: HELIOS_CORPUS names the default corpus, else share/helios beside the binary",
          "[train][data]") {
  const char* before = std::getenv("HELIOS_CORPUS");
  const std::string saved = before ? before : "";
  ::setenv("HELIOS_CORPUS", "/some/where/text.txt", 1);
  CHECK(train::defaultCorpusPath() == std::filesystem::path("/some/where/text.txt"));
  ::unsetenv("HELIOS_CORPUS");
  // This test binary has no share/helios/corpus beside it: the configured fallback, or the installed path.
  const auto installed = std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() /
                         "share" / "helios" / "corpus" / "kjv.txt";
  const auto path = train::defaultCorpusPath();
  CHECK((path == installed || (path != installed && std::filesystem::is_regular_file(path))));
  if (!saved.empty()) ::setenv("HELIOS_CORPUS", saved.c_str(), 1);
}

TEST_CASE("data: a directory or an empty file is refused by name", "[train][data]") {
  const auto d = std::filesystem::temp_directory_path() / ("helios-data-" + std::to_string(::getpid()));
  std::filesystem::create_directories(d / "texts");
  CHECK_THROWS_WITH(train::readCorpus(d / "texts"),
                    ContainsSubstring("texts: the training text is not a regular "
                                      "file (it is a directory)"));
  std::ofstream(d / "empty.txt").close();
  CHECK_THROWS_WITH(train::readCorpus(d / "empty.txt"),
                    ContainsSubstring("empty.txt: the training text is empty"));
  std::ofstream(d / "one.txt") << "x";
  CHECK(train::readCorpus(d / "one.txt") == "x");
  std::filesystem::remove_all(d);
}

TEST_CASE("config: validate() names the first bad value, non-finite floats included", "[train][config]") {
  train::TrainConfig ok;
  train::applyPreset(ok, "tiny");
  REQUIRE_NOTHROW(ok.validate());
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  struct Case {
    std::function<void(train::TrainConfig&)> set;
    const char* says;
  };
  const std::vector<Case> cases = {
      {[](auto& c) { c.steps = 0; }, "steps must be at least 1"},
      {[&](auto& c) { c.lr = inf; }, "lr must be a finite number > 0, got inf"},
      {[&](auto& c) { c.weightDecay = nan; }, "weight_decay must be a finite number in [0, inf), got nan"},
      {[&](auto& c) { c.minLrFrac = nan; }, "min_lr_frac must be a finite number in [0, 1], got nan"},
      {[&](auto& c) { c.gradClip = nan; }, "grad_clip must be a finite number"},
      {[&](auto& c) { c.beta1 = 1; }, "beta1 must be a finite number in [0, 1)"},
      {[&](auto& c) { c.eps = 0; }, "eps must be a finite number > 0"},
      {[&](auto& c) { c.lossScale = inf; }, "loss_scale must be a finite number"},
      {[](auto& c) { c.seqLen = 129; }, "seq_len 129 exceeds the model context 128"},
      {[](auto& c) { c.gpt.kvHeads = 3; }, "heads 4 is not a multiple of kv_heads 3"},
      {[](auto& c) { c.gpt.mlpMult = 0; }, "mlp_mult must be at least 1"},
  };
  for (const auto& c : cases) {
    train::TrainConfig cfg = ok;
    c.set(cfg);
    CHECK_THROWS_WITH(cfg.validate(), ContainsSubstring(c.says));
  }
  train::TrainConfig fromFile = ok;
  CHECK_THROWS_WITH(
      train::fromJson(nlohmann::json::parse(R"({"steps": -5})"), fromFile),
      ContainsSubstring("config key 'steps': -5 is not a whole number in [0, 18446744073709551615]"));
  CHECK_THROWS_WITH(train::fromJson(nlohmann::json::parse(R"({"gpt": {"layers": 1.5}})"), fromFile),
                    ContainsSubstring("config key 'layers': 1.5 is not a whole number"));
  CHECK(fromFile.steps == ok.steps);
}
