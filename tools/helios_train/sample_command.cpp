#include "sample_command.hpp"

#include "engine/io/atomic_file.hpp"
#include "engine/train/chat_template.hpp"
#include "engine/train/checkpoint.hpp"
#include "engine/train/sampler.hpp"
#include "engine/train/stored_tokenizer.hpp"
#include "engine/vk/context.hpp"
#include "prompts_file.hpp"
#include "tools/cli_checks.hpp"

#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <optional>

namespace helios::train_cli {

namespace fs = std::filesystem;

CLI::App* addSampleCommand(CLI::App& app, SampleFlags& sf) {
  auto* sample = app.add_subcommand("sample", "Generate text from a checkpoint or a Hugging Face directory");
  addModelSourceOptions(*sample, sf.source);
  auto* prompt = sample->add_option("--prompt", sf.prompt, "Text to continue");
  sample
      ->add_option("--prompts", sf.promptsFile,
                   "JSONL, one prompt per line (a string, or {\"prompt\": ..., \"system\": ...}): each "
                   "answered with the same options and seed, as a JSON line on stdout {\"line\", \"prompt\", "
                   "\"answer\", \"generated\", \"tokens\", \"stopped\", \"prompt_ids\"}")
      ->excludes(prompt);
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
  auto* idsOut =
      sample->add_option("--ids-out", sf.idsOut,
                         "Also write the prompt's and the generated token ids as JSON {\"prompt\": [...], "
                         "\"generated\": [...]}");
  idsOut->excludes("--prompts");
  return sample;
}

namespace {

// --chat's renderer: the run's template (its trainer state), else the tokenizer's; --chat-template over both.
std::optional<train::ChatRenderer> chatRenderer(const SampleFlags& f, const ModelSource& source,
                                                const train::Tokenizer& tok) {
  if (!f.chat) return std::nullopt;
  const nlohmann::json state =
      source.checkpoint.empty() ? nlohmann::json::object() : train::checkpointTrainerState(source.checkpoint);
  return std::optional<train::ChatRenderer>(
      std::in_place, train::chooseChatTemplate(sampleChatTemplate(f, state), tok.chatTemplate()), tok);
}

// The decoding options every prompt shares.
train::SampleOptions baseOptions(const SampleFlags& f, const std::optional<train::ChatRenderer>& renderer) {
  train::SampleOptions o;
  o.tokens = f.tokens;
  o.temperature = f.temperature;
  o.topK = f.topK;
  o.topP = f.topP;
  o.seed = f.seed;
  o.stopAtEot = f.stopAtEot;
  o.kvCache = !f.noKvCache;
  if (renderer) o.stopIds = renderer->stopIds();
  return o;
}

// `prompt` (after `system`, when given) as a user turn with the assistant's turn opened, or as plain text.
train::SampleOptions withPrompt(train::SampleOptions o, const std::optional<train::ChatRenderer>& renderer,
                                const std::string& prompt, const std::string& system) {
  o.prompt = prompt;
  if (renderer) {
    std::vector<train::ChatMessage> messages;
    if (!system.empty()) messages.push_back({train::ChatRole::System, system});
    messages.push_back({train::ChatRole::User, prompt});
    o.promptIds = renderer->prompt(messages);
  }
  return o;
}

const char* stopWords(const SampleFlags& f, const train::SampleStats& stats) {
  if (!stats.stoppedAtEot) return "";
  return f.chat ? ", stopped at the end of the turn" : ", stopped at end-of-text";
}

// --prompts: every prompt with the same options and seed (as one `sample --prompt` call each would run), its
// answer as a JSON line on stdout.
int samplePrompts(const SampleFlags& f, vk::Context& ctx, train::Model& model, const train::Tokenizer& tok,
                  const std::optional<train::ChatRenderer>& renderer,
                  const std::vector<PromptLine>& prompts) {
  const train::SampleOptions base = baseOptions(f, renderer);
  uint64_t tokens = 0, stopped = 0;
  double seconds = 0;
  for (const PromptLine& p : prompts) {
    train::SampleStats stats;
    const std::string answer = train::generate(
        ctx, model, tok, withPrompt(base, renderer, p.prompt, p.system.empty() ? f.system : p.system), {},
        &stats);
    const nlohmann::json line = {{"line", p.line},
                                 {"prompt", p.prompt},
                                 {"answer", answer},
                                 {"generated", stats.generatedIds},
                                 {"tokens", stats.tokens},
                                 {"stopped", stats.stoppedAtEot},
                                 {"prompt_ids", stats.promptIds}};
    std::fputs((line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(), stdout);
    std::fflush(stdout);
    tokens += stats.tokens;
    stopped += stats.stoppedAtEot ? 1 : 0;
    seconds += stats.seconds;
  }
  std::fprintf(stderr, "sampled %zu prompts, %llu tokens in %.2f s (%llu stopped before --tokens %u)\n",
               prompts.size(), static_cast<unsigned long long>(tokens), seconds,
               static_cast<unsigned long long>(stopped), f.tokens);
  return 0;
}

} // namespace

int runSample(const SampleFlags& f) {
  if (!f.chat && (!f.chatTemplate.empty() || !f.system.empty()))
    throw std::invalid_argument("--chat-template and --system are for --chat");
  const std::vector<PromptLine> prompts =
      f.promptsFile.empty() ? std::vector<PromptLine>() : readPromptsFile(f.promptsFile);
  if (!f.chat)
    for (const PromptLine& p : prompts)
      if (!p.system.empty())
        throw std::invalid_argument(fmt::format(
            "--prompts {}: line {} has a \"system\" message, which is for --chat", f.promptsFile, p.line));
  const ModelSource source = openModelSource(f.source);
  if (!source.tokenizer)
    throw std::invalid_argument(fmt::format("{}: no tokenizer to encode the prompt with", source.name));
  const train::Tokenizer& tok = *source.tokenizer;
  auto ctx = vk::Context::create({.device = f.device});
  auto model = loadModel(*ctx, source);
  const std::optional<train::ChatRenderer> renderer = chatRenderer(f, source, tok);
  if (!prompts.empty()) return samplePrompts(f, *ctx, *model, tok, renderer, prompts);
  if (!f.chat) std::fputs(f.prompt.c_str(), stdout); // a chat prints the answer alone
  train::SampleStats stats;
  train::generate(
      *ctx, *model, tok, withPrompt(baseOptions(f, renderer), renderer, f.prompt, f.system),
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
               stopWords(f, stats));
  return 0;
}

std::string sampleChatTemplate(const SampleFlags& f, const nlohmann::json& trainerState) {
  if (!f.chatTemplate.empty()) return f.chatTemplate;
  const nlohmann::json config = trainerState.value("config", nlohmann::json::object());
  return config.value("chat_template", std::string());
}

} // namespace helios::train_cli
