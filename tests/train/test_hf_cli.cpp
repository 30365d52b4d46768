// Open models through helios-train: `logits --init-from` on a Hugging Face directory matches the float64
// NumPy forward of tests/train/hf_models.py; `sample --init-from` greedy (KV cache and full window) picks
// the reference's greedy tokens; --init-from trains, --resume continues, export writes a sharded directory
// of the same family that loads back with the same logits; broken directories are refused before any work,
// leaving no run directory behind.
#include "hf_models.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

fs::path tempDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("helios-hf-cli-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

using test::heliosTrain;

fs::path writeCase(const std::string& name, const fs::path& root, const std::string& broken = "") {
  const fs::path dir = root / (name + (broken.empty() ? "" : "-" + broken));
  test::writeHfCase(name, dir, broken);
  return dir;
}

nlohmann::json readJson(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

} // namespace

TEST_CASE("helios-train logits --init-from: a Hugging Face directory's logits match the NumPy forward",
          "[train][hf][cli]") {
  if (!test::haveNumpy()) SKIP("/usr/bin/python3 has no NumPy");
  const std::string name = GENERATE(as<std::string>{}, "llama3", "qwen2-untied");
  const fs::path root = tempDir("logits-" + name), dir = writeCase(name, root);
  std::vector<int32_t> ids(3 * 9);
  for (auto& t : ids)
    t = static_cast<int32_t>(test::rng()() % 257);
  test::writeIds(root / "ids.npy", ids, 3);
  const auto run = heliosTrain(fmt::format("logits --init-from {} --tokens {} --out {}", dir.string(),
                                           (root / "ids.npy").string(), (root / "helios.npy").string()));
  INFO(run.output);
  REQUIRE(run.exitCode == 0);
  CHECK_THAT(run.output, ContainsSubstring("logits (3, 9, 257)"));
  REQUIRE(test::hfModels(fmt::format("forward {} {} {}", dir.string(), (root / "ids.npy").string(),
                                     (root / "ref.npy").string()))
              .exitCode == 0);
  const io::NpyArray got = io::readNpy(root / "helios.npy");
  CHECK(got.shape == std::vector<uint64_t>{3, 9, 257});
  CHECK(test::maxAbsDiff(got.toFloat(), io::readNpy(root / "ref.npy").toFloat()) < 1e-4f);
  // Ids past the vocabulary and sequences past the context are refused before any device work.
  ids[4] = 300;
  test::writeIds(root / "bad.npy", ids, 3);
  const auto bad = heliosTrain(fmt::format("logits --init-from {} --tokens {} --out {}", dir.string(),
                                           (root / "bad.npy").string(), (root / "bad-out.npy").string()));
  CHECK(bad.exitCode != 0);
  CHECK_THAT(bad.output, ContainsSubstring("id 300 at position 4 is outside the vocabulary [0, 257)"));
  CHECK_FALSE(fs::exists(root / "bad-out.npy"));
  const auto fp8 =
      heliosTrain(fmt::format("logits --init-from {} --tokens {} --out {} --precision fp8", dir.string(),
                              (root / "ids.npy").string(), (root / "bad-out.npy").string()));
  CHECK(fp8.exitCode != 0);
  CHECK_THAT(fp8.output, ContainsSubstring("precision 'fp8'"));
  CHECK_FALSE(fs::exists(root / "bad-out.npy"));
}

TEST_CASE("helios-train sample --init-from: greedy tokens are the reference's greedy tokens",
          "[train][hf][cli]") {
  if (!test::haveNumpy()) SKIP("/usr/bin/python3 has no NumPy");
  struct Case {
    const char* name;
    const char* flags;
  };
  const Case c = GENERATE(Case{"llama3", ""}, Case{"smollm2", ""}, Case{"mistral", "--no-kv-cache"},
                          Case{"qwen2-tied", ""});
  INFO(c.name << " " << c.flags);
  const fs::path root = tempDir(std::string("sample-") + c.name), dir = writeCase(c.name, root);
  const uint32_t n = 12;
  const auto run =
      heliosTrain(fmt::format("sample --init-from {} --prompt 'Hi, you' --tokens {} --temperature 0 {} "
                              "--ids-out {}",
                              dir.string(), n, c.flags, (root / "ids.json").string()));
  INFO(run.output);
  REQUIRE(run.exitCode == 0);
  const nlohmann::json got = readJson(root / "ids.json");
  CHECK(got["prompt"] == nlohmann::json{72, 105, 44, 32, 121, 111, 117}); // byte ids: the test tokenizer
  const auto ref = test::hfModels(
      fmt::format("greedy {} 72,105,44,32,121,111,117 {} {}", dir.string(), n, (root / "ref.json").string()));
  REQUIRE(ref.exitCode == 0);
  const nlohmann::json want = readJson(root / "ref.json");
  REQUIRE(got["generated"].size() == n);
  // Token for token, up to a step whose best two logits are too close for f32 to order as float64 does.
  uint32_t compared = 0;
  for (; compared < n && want["margins"][compared].get<double>() > 1e-4; ++compared) {
    INFO("step " << compared);
    CHECK(got["generated"][compared] == want["generated"][compared]);
  }
  CHECK(compared >= n / 2);
}

TEST_CASE("helios-train: --init-from trains, --resume continues, export writes the family back",
          "[train][hf][cli]") {
  if (!test::haveNumpy()) SKIP("/usr/bin/python3 has no NumPy");
  const fs::path root = tempDir("train"), dir = writeCase("qwen2-untied", root), run = root / "run";
  const std::string common = "--batch 2 --seq-len 16 --eval-every 0 --log-every 1 --lr 1e-3";
  auto r =
      heliosTrain(fmt::format("--init-from {} --steps 2 {} --out {}", dir.string(), common, run.string()));
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  CHECK_THAT(r.output, ContainsSubstring("qwen2"));
  CHECK_THAT(r.output,
             ContainsSubstring("gpt2 tokenizer, vocab 257")); // the directory's vocab.json + merges.txt
  CHECK(fs::exists(run / "checkpoints" / "step-000000002" / "vocab.bpe")); // its files travel with it
  r = heliosTrain(fmt::format("--resume {} --steps 3 {}", run.string(), common));
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  CHECK_THAT(r.output, ContainsSubstring("resuming after step 2"));

  const fs::path out = root / "export";
  r = heliosTrain(
      fmt::format("export --format hf --run {} --out {} --max-shard-size 40KB", run.string(), out.string()));
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  CHECK_THAT(r.output, ContainsSubstring("as Hugging Face qwen2 (Qwen2ForCausalLM)"));
  REQUIRE(fs::exists(out / "model.safetensors.index.json"));
  const nlohmann::json index = readJson(out / "model.safetensors.index.json");
  CHECK(
      index["weight_map"]["model.embed_tokens.weight"].get<std::string>().starts_with("model-00001-of-0000"));
  for (const auto& [tensor, file] : index["weight_map"].items())
    CHECK(fs::exists(out / file.get<std::string>()));
  CHECK(fs::exists(out / "vocab.json"));
  CHECK(readJson(out / "config.json")["architectures"] == nlohmann::json{"Qwen2ForCausalLM"});
  CHECK(readJson(out / "config.json")["eos_token_id"] == 256);
  for (const auto& e : fs::directory_iterator(root))
    CHECK_THAT(e.path().filename().string(), !ContainsSubstring(".partial"));

  // The trained checkpoint and its export give the same logits, and NumPy reads the export as Qwen2.
  std::vector<int32_t> ids(16);
  for (auto& t : ids)
    t = static_cast<int32_t>(test::rng()() % 257);
  test::writeIds(root / "ids.npy", ids, 1);
  const auto logits = [&](const std::string& source, const fs::path& to) {
    const auto l = heliosTrain(
        fmt::format("logits {} --tokens {} --out {}", source, (root / "ids.npy").string(), to.string()));
    INFO(l.output);
    REQUIRE(l.exitCode == 0);
    return io::readNpy(to).toFloat();
  };
  const std::vector<float> trained = logits("--resume " + run.string(), root / "trained.npy");
  const std::vector<float> exported = logits("--init-from " + out.string(), root / "exported.npy");
  CHECK(std::memcmp(trained.data(), exported.data(), trained.size() * 4) == 0);
  REQUIRE(test::hfModels(fmt::format("forward {} {} {}", out.string(), (root / "ids.npy").string(),
                                     (root / "ref.npy").string()))
              .exitCode == 0);
  CHECK(test::maxAbsDiff(exported, io::readNpy(root / "ref.npy").toFloat()) < 1e-4f);

  // A second export replaces the first whole; a directory that holds something else is refused, untouched.
  r = heliosTrain(
      fmt::format("export --format hf --run {} --out {} --dtype bf16", run.string(), out.string()));
  REQUIRE(r.exitCode == 0);
  CHECK_FALSE(fs::exists(out / "model.safetensors.index.json"));
  CHECK(readJson(out / "config.json")["torch_dtype"] == "bfloat16");
  fs::create_directories(root / "mine");
  std::ofstream(root / "mine" / "notes.txt") << "keep";
  r = heliosTrain(
      fmt::format("export --format hf --run {} --out {}", run.string(), (root / "mine").string()));
  CHECK(r.exitCode != 0);
  CHECK_THAT(r.output, ContainsSubstring("is not empty, and holds no config.json"));
  CHECK(fs::exists(root / "mine" / "notes.txt"));
  CHECK_FALSE(fs::exists(root / "mine" / "config.json"));
}

TEST_CASE("helios-train --init-from: broken directories are refused before any work", "[train][hf][cli]") {
  if (!test::haveNumpy()) SKIP("/usr/bin/python3 has no NumPy");
  struct Case {
    const char* model;
    const char* broken;
    const char* flags;
    const char* says;
  };
  const Case c = GENERATE(
      Case{"llama2", "unknown-architecture", "", "field 'architectures' names \"GemmaForCausalLM\""},
      Case{"llama3", "missing-shard", "", "shard model-00003-of-00003.safetensors"},
      Case{"qwen2-tied", "wrong-dtype", "", "has dtype F64"},
      Case{"mistral", "", "--seq-len 64", "seq_len 64 exceeds the model's sliding_window 48"},
      Case{"llama2", "", "--seq-len 16 --layers 3", "--layers 3 contradicts the imported model's 2"});
  INFO(c.model << " " << c.broken);
  const fs::path root = tempDir(std::string("refuse-") + c.model + c.broken),
                 dir = writeCase(c.model, root, c.broken);
  const fs::path run = root / "run";
  const auto r = heliosTrain(
      fmt::format("--init-from {} --steps 1 --batch 2 {} --out {}", dir.string(), c.flags, run.string()));
  INFO(r.output);
  CHECK(r.exitCode != 0);
  CHECK_THAT(r.output, ContainsSubstring(c.says));
  CHECK_FALSE(fs::exists(run));
}
