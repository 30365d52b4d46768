// LoRA through helios-train on Hugging Face directories written by tests/train/hf_models.py: a LoRA run's
// checkpoints hold the adapters only; `export --format peft` writes PEFT's layout (checked by
// tests/train/peft_check.py with NumPy: config keys, tensor names, shapes); `export --merge` writes the base
// plus (alpha / r) B A; the LoRA run, the merged model and the float64 reference give the same logits; a PEFT
// adapter continues training where it left off (--init-adapter); bad flags, a changed base and mismatched
// adapters are refused by name before any work.
#include "common.hpp"
#include "engine/train/safetensors.hpp"
#include "hf_models.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
using test::heliosTrain;
namespace fs = std::filesystem;

namespace {

// Runs helios-train and requires success, showing its output on failure.
void ok(const std::string& args) {
  const auto r = heliosTrain(args);
  INFO(args << "\n" << r.output);
  REQUIRE(r.exitCode == 0);
}

void python(const test::CommandResult& r, const std::string& expect) {
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  CHECK_THAT(r.output, ContainsSubstring(expect));
}

std::vector<float> logits(const fs::path& root, const std::string& source, const std::string& name) {
  ok(fmt::format("logits {} --tokens {} --out {}", source, (root / "ids.npy").string(),
                 (root / (name + ".npy")).string()));
  return io::readNpy(root / (name + ".npy")).toFloat();
}

const char* kShort = "--steps 3 --batch 2 --seq-len 16 --eval-every 0 --log-every 1";

} // namespace

TEST_CASE("helios-train LoRA over a Hugging Face model: PEFT layout, merge, and one set of logits",
          "[train][lora][cli]") {
  if (!test::haveNumpy()) SKIP("/usr/bin/python3 has no NumPy");
  struct Case {
    const char* name;
    const char* targets;
  };
  const Case c =
      GENERATE(Case{"qwen2-tied", "q,k,v,o,gate,up,down"}, Case{"llama3", "q_proj,v_proj,down_proj"});
  INFO(c.name);
  const fs::path root = test::tempDir(std::string("lora-cli-") + c.name), base = root / "base",
                 run = root / "run";
  test::writeHfCase(c.name, base);
  ok(fmt::format("--init-from {} --lora-rank 4 --lora-alpha 6 --lora-targets {} --lr 1e-2 {} --out {}",
                 base.string(), c.targets, kShort, run.string()));
  // The checkpoint: adapters only, the base by path and hash.
  const fs::path step = run / "checkpoints" / "step-000000003";
  for (const auto& t : train::readSafetensors(step / "model.safetensors", true).tensors)
    CHECK_THAT(t.name, ContainsSubstring(".lora_"));
  ok(fmt::format("export --format peft --run {} --out {}", run.string(), (root / "peft").string()));
  python(test::peftCheck(fmt::format("layout {} {}", (root / "peft").string(), base.string())), "layout ok");
  ok(fmt::format("export --format hf --merge --run {} --out {}", run.string(), (root / "merged").string()));
  python(test::peftCheck(fmt::format("merged {} {} {}", base.string(), (root / "peft").string(),
                                     (root / "merged").string())),
         "merge ok");
  test::writeIds(root / "ids.npy", test::randomIds(2 * 11, 257), 2);
  const std::vector<float> lora = logits(root, "--resume " + run.string(), "lora");
  const std::vector<float> merged = logits(root, "--init-from " + (root / "merged").string(), "merged");
  REQUIRE(test::peftCheck(fmt::format("forward {} {} {} {}", base.string(), (root / "peft").string(),
                                      (root / "ids.npy").string(), (root / "ref.npy").string()))
              .exitCode == 0);
  const std::vector<float> ref = io::readNpy(root / "ref.npy").toFloat();
  CHECK(test::maxAbsDiff(lora, ref) < 1e-4f);
  CHECK(test::maxAbsDiff(merged, ref) < 1e-4f);
  // The PEFT adapter continues training from where it was (a learning rate too small to move a weight).
  ok(fmt::format(
      "--init-from {} --init-adapter {} --lr 1e-30 --steps 1 --batch 2 --seq-len 16 --eval-every 0 "
      "--out {}",
      base.string(), (root / "peft").string(), (root / "continued").string()));
  CHECK(test::maxAbsDiff(logits(root, "--resume " + (root / "continued").string(), "continued"), lora) ==
        0.0f);
}

TEST_CASE("helios-train LoRA refuses bad flags, a changed base and a mismatched adapter by name",
          "[train][lora][cli]") {
  if (!test::haveNumpy()) SKIP("/usr/bin/python3 has no NumPy");
  const fs::path root = test::tempDir("lora-cli-refusals"), base = root / "base", run = root / "run";
  test::writeHfCase("qwen2-tied", base);
  const std::string from = "--init-from " + base.string() + " " + kShort + " --out " + (root / "no").string();
  struct Refusal {
    std::string args, message;
  };
  const std::vector<Refusal> refusals = {
      {from + " --lora-rank 0", "--lora-rank 0: a LoRA rank is at least 1"},
      {from + " --lora-rank 17", "LoRA rank 17 is above the width of k_proj ([16, 32])"},
      {from + " --lora-rank 2 --lora-alpha 0", "LoRA alpha 0 must be above 0"},
      {from + " --lora-rank 2 --lora-dropout 1", "LoRA dropout 1 is outside [0, 1)"},
      {from + " --lora-rank 2 --lora-targets q,attn", "LoRA target 'attn' is none of"},
      {from + " --lora-alpha 2", "--lora-alpha configures LoRA adapters: give --lora-rank too"},
      {from + " --lora-rank 2 --precision bf16 --base-dtype f16",
       "a LoRA base stored in f16 under bf16 GEMM operands: store it in bf16 (the operands' kind) or f32"},
      {from + " --lora-rank 2 --precision mixed --base-dtype bf16",
       "a LoRA base stored in bf16 under f16 GEMM operands"},
      {from + " --lora-rank 2 --precision bf16 --param-dtype bf16",
       "LoRA trains f32 adapters on a frozen base: the parameter dtype is for full training"},
      {"--preset tiny --lora-rank 2 --lora-targets gate --out " + (root / "no").string(),
       "LoRA target 'gate' (gate_proj): this model's GELU MLP has no such projection"},
      {"--preset tiny --model bigram --lora-rank 2 --out " + (root / "no").string(),
       "the bigram model has none"},
      {"--preset tiny --init-adapter " + root.string() + " --out " + (root / "no").string(),
       "--init-adapter continues a PEFT adapter over the model it was trained on: name that base with "
       "--init-from"},
  };
  for (const Refusal& r : refusals) {
    const auto got = heliosTrain(r.args);
    INFO(r.args << "\n" << got.output);
    CHECK(got.exitCode != 0);
    CHECK_THAT(got.output, ContainsSubstring(r.message));
    CHECK_FALSE(fs::exists(root / "no"));
  }
  // A run, its adapter, and a GPT-2 LoRA run (PEFT's GPT-2 layout differs: refused, merge suggested).
  ok(fmt::format("--init-from {} --lora-rank 4 {} --out {}", base.string(), kShort, run.string()));
  ok(fmt::format("export --format peft --run {} --out {}", run.string(), (root / "peft").string()));
  const auto plain =
      heliosTrain(fmt::format("export --format hf --run {} --out {}", run.string(), (root / "x").string()));
  CHECK_THAT(plain.output,
             ContainsSubstring("a LoRA checkpoint holds adapters only: --format peft writes them"));
  const auto rank =
      heliosTrain(fmt::format("--init-from {} --init-adapter {} --lora-rank 8 {} --out {}", base.string(),
                              (root / "peft").string(), kShort, (root / "no").string()));
  CHECK_THAT(rank.output, ContainsSubstring("the adapter has rank 4, the run asks for 8"));
  CHECK_FALSE(fs::exists(root / "no"));
  ok(fmt::format("--preset tiny --lora-rank 2 --steps 1 --batch 1 --seq-len 16 --eval-every 0 --out {}",
                 (root / "gpt2").string()));
  const auto gpt2 = heliosTrain(
      fmt::format("export --format peft --run {} --out {}", (root / "gpt2").string(), (root / "x").string()));
  CHECK_THAT(gpt2.output, ContainsSubstring("PEFT adapts GPT-2's q, k and v as one Conv1D module"));
  // The base changes: resuming, the adapter over it, and merging are refused; nothing is written.
  { std::ofstream(base / "config.json", std::ios::app) << "\n"; }
  const auto resumed = heliosTrain(fmt::format("--resume {} --steps 5", run.string()));
  CHECK_THAT(resumed.output,
             ContainsSubstring("the LoRA base changed since the adapters were trained on it"));
  const auto adapter = heliosTrain(fmt::format("--init-from {} --init-adapter {} {} --out {}", base.string(),
                                               (root / "peft").string(), kShort, (root / "no").string()));
  CHECK_THAT(adapter.output, ContainsSubstring("the adapter was trained on a base whose files hash to"));
  CHECK_FALSE(fs::exists(root / "no"));
  const auto merge = heliosTrain(
      fmt::format("export --format hf --merge --run {} --out {}", run.string(), (root / "x").string()));
  CHECK_THAT(merge.output, ContainsSubstring("the LoRA base changed"));
  CHECK_FALSE(fs::exists(root / "x"));
  CHECK_FALSE(fs::exists(run / "checkpoints" / "step-000000005"));
}
