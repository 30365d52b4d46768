// The LoRA demo's pieces (examples/lora-demo), at a size CI runs in seconds: the chat set generator (seeded,
// no question shared between train and held-out, in either order), the scorer (exact answers only, the
// accuracy recomputed here, its bar able to fail) and the whole script (pretrain -> export hf -> LoRA ->
// export peft -> held-out answers through `helios-train sample --chat --prompts`), which at two steps each
// must score below the bar and say so.
#include "support/process.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

const std::string kDemo = std::string(HELIOS_SOURCE_DIR) + "/examples/lora-demo/";

fs::path scratch(const std::string& name) {
  const fs::path p =
      fs::temp_directory_path() / fmt::format("helios-lora-demo-{}-{}", name, helios::test::testSeed());
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

helios::test::CommandResult python(const std::string& script, const std::string& args) {
  return helios::test::runCommand(fmt::format("/usr/bin/python3 {}{} {}", kDemo, script, args));
}

std::vector<nlohmann::json> readJsonl(const fs::path& file) {
  std::ifstream in(file);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

struct Question {
  int a = 0, b = 0;
  std::string text, answer; // the user's turn, the assistant's
};

// A generated example, its numbers read back from the question ("What is A + B?").
Question question(const nlohmann::json& example) {
  const auto& m = example.at("messages");
  REQUIRE(m.size() == 2);
  REQUIRE(m[0]["role"] == "user");
  REQUIRE(m[1]["role"] == "assistant");
  Question q{0, 0, m[0]["content"], m[1]["content"]};
  REQUIRE(std::sscanf(q.text.c_str(), "What is %d + %d?", &q.a, &q.b) == 2);
  REQUIRE(q.text == fmt::format("What is {} + {}?", q.a, q.b));
  return q;
}

std::vector<Question> questions(const fs::path& file) {
  std::vector<Question> qs;
  for (const nlohmann::json& e : readJsonl(file))
    qs.push_back(question(e));
  return qs;
}

std::string slurp(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

TEST_CASE("lora demo: the addition chat set is seeded, correct, and shares no question between its splits",
          "[train][chat][demo]") {
  const fs::path d = scratch("chats");
  const uint64_t seed = helios::test::rng()() % 100000;
  const int train = 300, heldout = 40;
  for (const char* sub : {"a", "b"}) {
    const auto r = python("make_chats.py", fmt::format("--out {} --train {} --heldout {} --seed {}",
                                                       (d / sub).string(), train, heldout, seed));
    INFO(r.output);
    REQUIRE(r.exitCode == 0);
  }
  CHECK(slurp(d / "a" / "train.jsonl") == slurp(d / "b" / "train.jsonl"));
  CHECK(slurp(d / "a" / "heldout.jsonl") == slurp(d / "b" / "heldout.jsonl"));
  const auto r = python("make_chats.py", fmt::format("--out {} --train {} --heldout {} --seed {}",
                                                     (d / "c").string(), train, heldout, seed + 1));
  REQUIRE(r.exitCode == 0);
  CHECK(slurp(d / "a" / "heldout.jsonl") != slurp(d / "c" / "heldout.jsonl"));

  const std::vector<Question> tr = questions(d / "a" / "train.jsonl"),
                              ho = questions(d / "a" / "heldout.jsonl");
  REQUIRE(tr.size() == size_t(train));
  REQUIRE(ho.size() == size_t(heldout));
  std::set<std::pair<int, int>> trained, held;
  for (const Question& q : tr) {
    CHECK(q.answer == std::to_string(q.a + q.b));
    CHECK((q.a >= 10 && q.a <= 99 && q.b >= 10 && q.b <= 99));
    CHECK(trained.insert({q.a, q.b}).second); // no question twice
  }
  for (const Question& q : ho) {
    CHECK(q.answer == std::to_string(q.a + q.b));
    CHECK(held.insert({std::min(q.a, q.b), std::max(q.a, q.b)}).second);
    CHECK(trained.count({q.a, q.b}) == 0);
    CHECK(trained.count({q.b, q.a}) == 0); // nor its mirror image
  }
  // --addend N: "What is A + N?", every A at most once over both files.
  REQUIRE(python("make_chats.py", fmt::format("--out {} --train 60 --heldout 20 --addend 7 --seed {}",
                                              (d / "n").string(), seed))
              .exitCode == 0);
  std::set<int> firsts;
  for (const char* file : {"train.jsonl", "heldout.jsonl"})
    for (const Question& q : questions(d / "n" / file)) {
      CHECK(q.b == 7);
      CHECK(q.answer == std::to_string(q.a + 7));
      CHECK(firsts.insert(q.a).second);
    }
  CHECK(firsts.size() == 80);
  const auto tooMany =
      python("make_chats.py", fmt::format("--out {} --train 9000 --heldout 10", (d / "x").string()));
  CHECK(tooMany.exitCode != 0);
  CHECK_THAT(tooMany.output, ContainsSubstring("need more than"));
}

TEST_CASE("lora demo: the scorer counts exact, finished answers only, and its bar fails below it",
          "[train][chat][demo]") {
  const fs::path d = scratch("score");
  REQUIRE(python("make_chats.py", fmt::format("--out {} --train 10 --heldout 60 --seed {}", d.string(),
                                              helios::test::rng()() % 100000))
              .exitCode == 0);
  const std::vector<Question> ho = questions(d / "heldout.jsonl");
  // Each question answered one of these ways; only the first two count as exact.
  enum Kind { Right, RightPadded, WrongDigit, Trailing, Unfinished, Missing, Kinds };
  std::uniform_int_distribution<int> pick(0, Kinds - 1);
  std::ofstream answers(d / "answers.jsonl");
  int exact = 0;
  for (const Question& q : ho) {
    const int kind = pick(helios::test::rng());
    const int sum = q.a + q.b;
    nlohmann::json line = {{"prompt", q.text}, {"answer", std::to_string(sum)}, {"stopped", true}};
    if (kind == RightPadded) line["answer"] = " " + std::to_string(sum) + "\n";
    if (kind == WrongDigit) line["answer"] = std::to_string(sum + 1 + int(helios::test::rng()() % 9));
    if (kind == Trailing) line["answer"] = std::to_string(sum) + ".";
    if (kind == Unfinished) line["stopped"] = false;
    if (kind != Missing) answers << line.dump() << "\n";
    exact += kind == Right || kind == RightPadded;
  }
  answers.close();
  const double accuracy = double(exact) / double(ho.size());
  INFO(exact << " of " << ho.size());
  const std::string base =
      fmt::format("--heldout {} --answers {} --report {}", (d / "heldout.jsonl").string(),
                  (d / "answers.jsonl").string(), (d / "report.json").string());
  auto r = python("evaluate.py", base + fmt::format(" --min-accuracy {}", accuracy - 1e-9));
  INFO(r.output);
  CHECK(r.exitCode == 0);
  CHECK_THAT(r.output, ContainsSubstring(fmt::format("({} of {} exact)", exact, ho.size())));
  std::ifstream in(d / "report.json");
  const nlohmann::json report = nlohmann::json::parse(in);
  CHECK(report["exact"] == exact);
  CHECK(report["misses"].size() == ho.size() - size_t(exact));
  r = python("evaluate.py", base + fmt::format(" --min-accuracy {}", accuracy + 1e-6));
  CHECK(r.exitCode == 1);
}

TEST_CASE("lora demo: the whole script at two steps each runs every phase and scores below the bar",
          "[train][chat][demo][cli]") {
  const fs::path out = scratch("run");
  const auto r = helios::test::runCommand(fmt::format(
      "{}run-demo.sh --out {} --helios {} --layers 1 --dim 32 --heads 2 --kv-heads 1 --hidden 64 --seq-len "
      "64 "
      "--pretrain-steps 2 --pretrain-batch 2 --lora-rank 2 --lora-steps 2 --lora-batch 2 --train 12 "
      "--heldout 5 --seed {}",
      kDemo, out.string(), HELIOS_TRAIN_EXE, helios::test::rng()() % 100000));
  INFO(r.output);
  CHECK(r.exitCode == 1); // below the bar: the demo fails, and says so last
  CHECK_THAT(r.output, ContainsSubstring("FAIL (bar 0.9)"));
  std::ifstream in(out / "summary.json");
  const nlohmann::json summary = nlohmann::json::parse(in);
  CHECK(summary["passed"] == false);
  CHECK(summary["options"]["lora_rank"] == 2);
  CHECK(summary["lora"]["loss"].size() == 2);
  for (const char* phase : {"prepare", "pretrain", "export-hf", "lora", "export-peft", "evaluate"})
    CHECK(summary["seconds"].contains(phase));
  CHECK(fs::is_regular_file(out / "base-hf" / "config.json"));
  CHECK(fs::is_regular_file(out / "adapter" / "adapter_config.json"));
  CHECK(fs::is_regular_file(out / "adapter" / "adapter_model.safetensors"));

  // The score, recomputed from the answers helios-train gave: one line per held-out question.
  const std::vector<Question> ho = questions(out / "chats" / "heldout.jsonl");
  std::map<std::string, nlohmann::json> answered;
  for (const nlohmann::json& line : readJsonl(out / "answers.jsonl"))
    answered[line["prompt"]] = line;
  REQUIRE(answered.size() == ho.size());
  int exact = 0;
  for (const Question& q : ho) {
    const nlohmann::json& a = answered.at(q.text);
    exact += a["stopped"] == true && a["answer"] == std::to_string(q.a + q.b);
  }
  CHECK(summary["heldout"]["exact"] == exact);
  CHECK(summary["heldout"]["questions"] == ho.size());
  CHECK(summary["heldout"]["accuracy"].get<double>() < 0.9);
}
