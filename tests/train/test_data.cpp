// Tokenizers and the data loader: round trips, the char-level vocabulary, the validation split, and
// deterministic sampling from a seed and a saved state.
#include "engine/train/config.hpp"
#include "engine/train/data.hpp"
#include "engine/train/tokenizer.hpp"

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

TEST_CASE("data loader: N shards at batch B/N together hold one process' batch B, in strided order",
          "[train][data]") {
  std::vector<int32_t> tokens(5000);
  std::iota(tokens.begin(), tokens.end(), 0);
  const uint32_t T = 8, rows = 12; // e.g. grad_accum 2 x batch 6
  for (uint32_t ranks : {2u, 3u}) {
    train::DataLoader whole(tokens, T, 11);
    std::vector<int32_t> x, y;
    whole.nextTrain(rows, x, y); // a step the single process takes first, then the step compared
    whole.nextTrain(rows, x, y);
    for (uint32_t r = 0; r < ranks; ++r) {
      train::DataLoader part(tokens, T, 11);
      std::vector<int32_t> px, py;
      part.nextTrain(rows / ranks, px, py, {r, ranks});
      part.nextTrain(rows / ranks, px, py, {r, ranks});
      REQUIRE(px.size() == size_t(rows / ranks) * T);
      for (uint32_t l = 0; l < rows / ranks; ++l)
        for (uint32_t t = 0; t < T; ++t) {
          CHECK(px[size_t(l) * T + t] == x[size_t(l * ranks + r) * T + t]);
          CHECK(py[size_t(l) * T + t] == y[size_t(l * ranks + r) * T + t]);
        }
      CHECK(part.state() == whole.state()); // the data position does not depend on the rank count
      std::vector<int32_t> vx, vy, pvx, pvy;
      whole.valBatch(1, rows, vx, vy);
      part.valBatch(1, rows / ranks, pvx, pvy, {r, ranks});
      for (uint32_t l = 0; l < rows / ranks; ++l)
        CHECK(pvx[size_t(l) * T] == vx[size_t(l * ranks + r) * T]);
    }
  }
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
