#include "sample_command.hpp"

#include "engine/train/checkpoint.hpp"
#include "engine/train/checkpoint_pin.hpp"
#include "engine/train/model_config.hpp"
#include "engine/train/sampler.hpp"
#include "engine/train/tokenizer.hpp"
#include "engine/vk/context.hpp"
#include "tools/cli_checks.hpp"

#include <cstdio>
#include <filesystem>

namespace helios::train_cli {

namespace fs = std::filesystem;

CLI::App* addSampleCommand(CLI::App& app, SampleFlags& sf) {
  auto* sample = app.add_subcommand("sample", "Generate text from a checkpoint");
  sample->add_option("--resume", sf.resume, "Run directory (its current checkpoint) or step directory")
      ->required();
  sample->add_option("--prompt", sf.prompt, "Text to continue");
  sample->add_option("--tokens", sf.tokens, "Tokens to generate")->check(cli::Count)->capture_default_str();
  sample->add_option("--temperature", sf.temperature, "Softmax temperature (0 = greedy)")
      ->check(cli::FiniteNonNegative)
      ->capture_default_str();
  sample->add_option("--top-k", sf.topK, "Sample among the k most likely tokens (0 = all)")
      ->check(cli::Count)
      ->capture_default_str();
  sample
      ->add_option("--top-p", sf.topP,
                   "Sample among the most likely tokens holding this much probability (1 = all)")
      ->check(cli::FiniteNonNegative)
      ->capture_default_str();
  sample->add_flag("--stop-at-eot", sf.stopAtEot, "Stop at the tokenizer's end-of-text token");
  sample->add_flag("--no-kv-cache", sf.noKvCache,
                   "Re-run the whole window for every token instead of decoding with a KV cache");
  sample->add_option("--seed", sf.seed, "Sampling seed")->check(cli::Count)->capture_default_str();
  sample->add_option("--device", sf.device, "Device index or name substring");
  return sample;
}

int runSample(const SampleFlags& f) {
  const train::PinnedCheckpoint pin = train::pinCheckpoint(f.resume); // not pruned while it is read
  const fs::path& checkpoint = pin.dir();
  const nlohmann::json arch = train::checkpointModelConfig(checkpoint);
  const train::Tokenizer tok = train::loadCheckpointTokenizer(checkpoint);
  auto ctx = vk::Context::create({.device = f.device});
  auto model = train::makeModel(*ctx, arch, 0);
  train::loadCheckpoint(*ctx, checkpoint, *model, false);
  train::SampleOptions o;
  o.prompt = f.prompt;
  o.tokens = f.tokens;
  o.temperature = f.temperature;
  o.topK = f.topK;
  o.topP = f.topP;
  o.seed = f.seed;
  o.stopAtEot = f.stopAtEot;
  o.kvCache = !f.noKvCache;
  std::fputs(f.prompt.c_str(), stdout);
  train::SampleStats stats;
  train::generate(
      *ctx, *model, tok, o,
      [](const std::string& piece) {
        std::fputs(piece.c_str(), stdout);
        std::fflush(stdout);
      },
      &stats);
  std::fputs("\n", stdout);
  std::fprintf(stderr, "sampled %u tokens in %.2f s: %.1f tokens/s (%s)%s\n", stats.tokens, stats.seconds,
               stats.tokensPerSecond(), stats.kvCache ? "KV cache" : "full-window forward per token",
               stats.stoppedAtEot ? ", stopped at end-of-text" : "");
  return 0;
}

} // namespace helios::train_cli
