#include "sample_command.hpp"

#include "engine/io/atomic_file.hpp"
#include "engine/train/chat_template.hpp"
#include "engine/train/checkpoint.hpp"
#include "engine/train/sampler.hpp"
#include "engine/train/stored_tokenizer.hpp"
#include "engine/vk/context.hpp"
#include "tools/cli_checks.hpp"

#include <cstdio>
#include <filesystem>
#include <fmt/format.h>

namespace helios::train_cli {

namespace fs = std::filesystem;

CLI::App* addSampleCommand(CLI::App& app, SampleFlags& sf) {
  auto* sample = app.add_subcommand("sample", "Generate text from a checkpoint or a Hugging Face directory");
  addModelSourceOptions(*sample, sf.source);
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
  sample->add_flag("--chat", sf.chat,
                   "The prompt is a user's message: rendered in the chat template with the assistant's turn "
                   "opened; the answer stops at the end of the turn or an EOS token");
  sample
      ->add_option("--chat-template", sf.chatTemplate,
                   "With --chat: chatml or llama3 (default: the template the run trained with, else the "
                   "tokenizer's)")
      ->check(CLI::IsMember({"chatml", "llama3"}));
  sample->add_option("--system", sf.system, "With --chat: a system message before the prompt");
  sample->add_flag("--no-kv-cache", sf.noKvCache,
                   "Re-run the whole window for every token instead of decoding with a KV cache");
  sample->add_option("--seed", sf.seed, "Sampling seed")->check(cli::Count)->capture_default_str();
  sample->add_option("--device", sf.device, "Device index or name substring");
  sample->add_option("--ids-out", sf.idsOut,
                     "Also write the prompt's and the generated token ids as JSON {\"prompt\": [...], "
                     "\"generated\": [...]}");
  return sample;
}

int runSample(const SampleFlags& f) {
  if (!f.chat && (!f.chatTemplate.empty() || !f.system.empty()))
    throw std::invalid_argument("--chat-template and --system are for --chat");
  const ModelSource source = openModelSource(f.source);
  if (!source.tokenizer)
    throw std::invalid_argument(fmt::format("{}: no tokenizer to encode the prompt with", source.name));
  const train::Tokenizer& tok = *source.tokenizer;
  auto ctx = vk::Context::create({.device = f.device});
  auto model = loadModel(*ctx, source);
  train::SampleOptions o;
  if (f.chat) { // a run's template (its trainer state), else the tokenizer's; --chat-template over both
    const nlohmann::json state = source.checkpoint.empty() ? nlohmann::json::object()
                                                           : train::checkpointTrainerState(source.checkpoint);
    const train::ChatRenderer renderer(
        train::chooseChatTemplate(sampleChatTemplate(f, state), tok.chatTemplate()), tok);
    std::vector<train::ChatMessage> messages;
    if (!f.system.empty()) messages.push_back({train::ChatRole::System, f.system});
    messages.push_back({train::ChatRole::User, f.prompt});
    o.promptIds = renderer.prompt(messages);
    o.stopIds = renderer.stopIds();
  }
  o.prompt = f.prompt;
  o.tokens = f.tokens;
  o.temperature = f.temperature;
  o.topK = f.topK;
  o.topP = f.topP;
  o.seed = f.seed;
  o.stopAtEot = f.stopAtEot;
  o.kvCache = !f.noKvCache;
  if (!f.chat) std::fputs(f.prompt.c_str(), stdout); // a chat prints the answer alone
  train::SampleStats stats;
  train::generate(
      *ctx, *model, tok, o,
      [](const std::string& piece) {
        std::fputs(piece.c_str(), stdout);
        std::fflush(stdout);
      },
      &stats);
  std::fputs("\n", stdout);
  if (!f.idsOut.empty())
    io::writeFileAtomically(
        f.idsOut,
        nlohmann::json{{"prompt", stats.promptIds}, {"generated", stats.generatedIds}}.dump() + "\n");
  std::fprintf(stderr, "sampled %u tokens in %.2f s: %.1f tokens/s (%s)%s\n", stats.tokens, stats.seconds,
               stats.tokensPerSecond(), stats.kvCache ? "KV cache" : "full-window forward per token",
               stats.stoppedAtEot ? (f.chat ? ", stopped at the end of the turn" : ", stopped at end-of-text")
                                  : "");
  return 0;
}

std::string sampleChatTemplate(const SampleFlags& f, const nlohmann::json& trainerState) {
  if (!f.chatTemplate.empty()) return f.chatTemplate;
  const nlohmann::json config = trainerState.value("config", nlohmann::json::object());
  return config.value("chat_template", std::string());
}

} // namespace helios::train_cli
