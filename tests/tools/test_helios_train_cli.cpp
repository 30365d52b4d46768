// helios-train's refusals as a user meets them: every count and float flag, --config keys, --data and the run
// directory are checked before the data, the device or step 1, with one message naming the value. And the
// data commands end to end (tokenizer, prepare, tokenize).
#include "support/files.hpp"
#include "support/hf_tokenizer_json.hpp"
#include "support/process.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>

using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

fs::path dir() {
  static fs::path d = [] {
    auto p = fs::temp_directory_path() / ("helios-train-cli-" + std::to_string(helios::test::testSeed()));
    fs::create_directories(p);
    return p;
  }();
  return d;
}

using Result = helios::test::CommandResult;

Result run(const std::string& args) {
  const char* exe = std::getenv("HELIOS_TRAIN_EXE"); // where a staged copy runs (device machines)
  return helios::test::runCommand(std::string(exe ? exe : HELIOS_TRAIN_EXE) + " " + args);
}

// A run that would train if the value were accepted: each refusal must come before any of that.
std::string tinyRun(const std::string& extra) {
  return "--preset tiny --steps 1 --batch 1 --layers 1 --dim 32 --heads 2 --eval-every 0 --out " +
         (dir() / "never").string() + " " + extra;
}

// The same without the size flags, for the cases that set one of them.
std::string bareRun(const std::string& extra) {
  return "--preset tiny --out " + (dir() / "never").string() + " " + extra;
}

} // namespace

TEST_CASE("negative, zero and malformed counts are refused, never wrapped") {
  for (const char* flag : {"--steps", "--batch", "--seq-len", "--grad-accum", "--layers", "--dim", "--heads",
                           "--eval-batches", "--log-every"}) {
    for (const char* value : {"-5", "0", "1.5", "0x10"}) {
      auto r = run(bareRun(std::string(flag) + " " + value));
      INFO(flag << " " << value << "\n" << r.output);
      CHECK(r.exitCode != 0);
      CHECK_THAT(r.output,
                 ContainsSubstring(flag) && ContainsSubstring("must be a whole number of at least 1"));
    }
  }
  for (const char* flag : {"--checkpoint-every", "--eval-every", "--warmup", "--seed", "--vocab", "--context",
                           "--time-every", "--sync-every"}) {
    auto r = run(bareRun(std::string(flag) + " -5"));
    INFO(flag << "\n" << r.output);
    CHECK(r.exitCode != 0);
    CHECK_THAT(r.output, ContainsSubstring(flag) && ContainsSubstring("must be a non-negative whole number"));
  }
  CHECK_FALSE(fs::exists(dir() / "never"));
}

TEST_CASE("non-finite and out-of-range floats are refused by name") {
  struct Case {
    const char* args;
    const char* says;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"--lr inf", "must be a finite number"},
           {"--lr nan", "must be a finite number"},
           {"--lr 0", "lr must be a finite number > 0, got 0"},
           {"--lr -1e-3", "lr must be a finite number > 0"},
           {"--weight-decay nan", "--weight-decay"},
           {"--weight-decay -0.1", "weight_decay must be a finite number in [0, inf)"},
           {"--min-lr-frac nan", "--min-lr-frac"},
           {"--min-lr-frac 1.5", "min_lr_frac must be a finite number in [0, 1], got 1.5"},
           {"--grad-clip nan", "--grad-clip"},
           {"--grad-clip -1", "grad_clip must be a finite number in [0, inf)"},
           {"--loss-scale inf", "--loss-scale"}}) {
    auto r = run(tinyRun(c.args));
    INFO(c.args << "\n" << r.output);
    CHECK(r.exitCode != 0);
    CHECK_THAT(r.output, ContainsSubstring(c.says));
  }
  auto r = run("sample --resume " + (dir() / "no-run").string() + " --temperature nan");
  CHECK(r.exitCode != 0);
  CHECK_THAT(r.output, ContainsSubstring("--temperature") && ContainsSubstring("finite number >= 0"));
  CHECK_FALSE(fs::exists(dir() / "never"));
}

TEST_CASE("a --seq-len above the context is refused unless the context is set too") {
  auto r = run(tinyRun("--seq-len 256"));
  CHECK(r.exitCode != 0);
  CHECK_THAT(r.output, ContainsSubstring("seq_len 256 exceeds the model context 128") &&
                           ContainsSubstring("--context"));
  const fs::path out = dir() / "longer-context";
  fs::remove_all(out);
  r = run("--preset tiny --steps 1 --batch 1 --layers 1 --dim 32 --heads 2 --eval-every 0 --seq-len 160 "
          "--context 160 --out " +
          out.string());
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  std::ifstream cfg(out / "checkpoints" / "step-000000001" / "config.json");
  std::string text{std::istreambuf_iterator<char>(cfg), {}};
  CHECK_THAT(text, ContainsSubstring("\"context\": 160"));
}

TEST_CASE("keys of a --config file follow the same rules as the flags") {
  struct Case {
    const char* json;
    const char* says;
  };
  for (const Case& c : std::initializer_list<Case>{
           {R"({"steps": -5})", "config key 'steps': -5 is not a whole number"},
           {R"({"batch": 2.5})", "config key 'batch': 2.5 is not a whole number"},
           {R"({"seq_len": 4294967296})", "config key 'seq_len'"},
           {R"({"lr": -0.5})", "lr must be a finite number > 0, got -0.5"},
           {R"({"lr": 1e400})", "not valid JSON"},
           {R"({"eps": 0})", "eps must be a finite number > 0"},
           {R"({"beta2": 1})", "beta2 must be a finite number in [0, 1)"},
           {R"({"weight_decay": null})", "config key 'weight_decay': null is not a valid value"},
           {R"({"gpt": {"heads": 0}})", "heads must be at least 1"},
           {R"({"gpt": {"norm_eps": -1}})", "norm_eps must be a finite number > 0"}}) {
    const fs::path file = dir() / "bad.json";
    std::ofstream(file) << c.json;
    auto r = run(bareRun("--config " + file.string()));
    INFO(c.json << "\n" << r.output);
    CHECK(r.exitCode != 0);
    CHECK_THAT(r.output, ContainsSubstring(c.says));
  }
}

TEST_CASE(
    "a --data directory or empty file or an empty file, and an unwritable run directory, are refused first") {
  fs::create_directories(dir() / "a-directory");
  auto r = run(tinyRun("--data " + (dir() / "a-directory").string()));
  CHECK(r.exitCode != 0);
  CHECK_THAT(r.output,
             ContainsSubstring("a-directory: the training text is not a regular file (it is a directory)"));
  std::ofstream(dir() / "empty.txt").close();
  r = run(tinyRun("--data " + (dir() / "empty.txt").string()));
  CHECK(r.exitCode != 0);
  CHECK_THAT(r.output, ContainsSubstring("empty.txt: the training text is empty"));

  std::ofstream(dir() / "a-file") << "keep";
  r = run("--preset tiny --steps 1 --out " + (dir() / "a-file" / "run").string());
  CHECK(r.exitCode != 0);
  CHECK_THAT(r.output, ContainsSubstring("cannot create the output directory"));
  CHECK_THAT(r.output, !ContainsSubstring("step 1")); // refused before the device and step 1
  std::ifstream in(dir() / "a-file");
  std::string kept{std::istreambuf_iterator<char>(in), {}};
  CHECK(kept == "keep");
  CHECK_FALSE(fs::exists(dir() / "never")); // the refused --data runs created no run directory
}

namespace {

// A folder of three text files: slices of the King James Bible when the bootstrap wrote it, else generated
// sentences.
fs::path textFolder() {
  const fs::path folder = dir() / "texts";
  fs::create_directories(folder);
  std::ifstream kjv(fs::path(HELIOS_SOURCE_DIR) / ".deps/corpus/kjv.txt", std::ios::binary);
  const char* words[] = {"and", "the", "of", "light", "waters", "beginning", "earth", "God", "said", "was"};
  for (int f = 0; f < 3; ++f) {
    std::ofstream out(folder / ("part" + std::to_string(f) + ".txt"), std::ios::binary);
    std::string line;
    for (size_t bytes = 0; bytes < 40000;) {
      if (!(kjv && std::getline(kjv, line))) {
        line.clear();
        for (int k = 0; k < 10; ++k)
          line += std::string(words[helios::test::rng()() % 10]) + (k == 9 ? "." : " ");
      }
      out << line << "\n";
      bytes += line.size() + 1;
    }
  }
  return folder;
}

} // namespace

TEST_CASE("a folder of text -> tokenizer -> shards -> train -> resume -> sample") {
  const fs::path folder = textFolder(), model = dir() / "tok.model", shards = dir() / "shards",
                 out = dir() / "shard-run";
  fs::remove_all(shards);
  fs::remove_all(out);
  auto r = run("tokenizer --data " + folder.string() + " --vocab 400 --type unigram --quiet --out " +
               model.string());
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  CHECK_THAT(r.output, ContainsSubstring("reading") && ContainsSubstring("wrote " + model.string()) &&
                           ContainsSubstring("vocab 400"));
  r = run("prepare --data '" + (folder / "*.txt").string() + "' --tokenizer " + model.string() +
          " --shard-tokens 5000 --out " + shards.string());
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  CHECK_THAT(r.output, ContainsSubstring("3/3 documents") && ContainsSubstring("wrote " + shards.string()) &&
                           ContainsSubstring("(2 bytes per token)"));
  CHECK(fs::exists(shards / "train-000001.bin"));
  const std::string size =
      "--preset tiny --layers 1 --dim 32 --heads 2 --batch 1 --seq-len 32 --eval-every 0 ";
  r = run(size + "--steps 2 --data-dir " + shards.string() + " --out " + out.string());
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  CHECK_THAT(r.output, ContainsSubstring("sentencepiece tokenizer, vocab 400") &&
                           ContainsSubstring("data " + shards.string()));
  CHECK(fs::exists(out / "checkpoints" / "step-000000002" / "tokenizer.model"));
  r = run("--resume " + out.string() + " --steps 3");
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  CHECK_THAT(r.output, ContainsSubstring("resuming after step 2"));
  r = run("sample --resume " + out.string() + " --prompt 'And God said' --tokens 5");
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  CHECK_THAT(r.output, ContainsSubstring("And God said"));
  // One token of a shard changed under an unchanged index.json: the resume refuses it by name.
  const fs::path shard = shards / "train-000000.bin";
  std::string bytes = helios::test::slurp(shard);
  bytes[64] = static_cast<char>(bytes[64] ^ 1);
  helios::test::spit(shard, bytes);
  r = run("--resume " + out.string() + " --steps 4");
  INFO(r.output);
  CHECK(r.exitCode != 0);
  CHECK_THAT(r.output, ContainsSubstring("train-000000.bin: its bytes differ from what prepare wrote"));
  bytes[64] = static_cast<char>(bytes[64] ^ 1);
  helios::test::spit(shard, bytes);
  // The shards' tokenizer is the run's: naming another one, or text and shards together, is refused.
  r = run(size + "--steps 1 --data-dir " + shards.string() + " --tokenizer char --out " + out.string() +
          "-x");
  CHECK(r.exitCode != 0);
  CHECK_THAT(r.output, ContainsSubstring("--tokenizer with --data-dir"));
  r = run(size + "--steps 1 --data-dir " + shards.string() + " --data " + model.string() + " --out " +
          out.string() + "-x");
  CHECK(r.exitCode != 0);
  CHECK_THAT(r.output, ContainsSubstring("--data and --data-dir both given"));
}

TEST_CASE("prepare and tokenizer refuse what they cannot use, naming it") {
  struct Case {
    std::string args;
    const char* says;
  };
  const std::string out = " --out " + (dir() / "never").string();
  for (const Case& c : std::initializer_list<Case>{
           {"prepare --data '" + (dir() / "nothing-*.txt").string() + "'" + out,
            "no file matches that pattern"},
           {"prepare --data " + textFolder().string() + " --val-every 1" + out, "--val-every 1"},
           {"prepare --data " + textFolder().string() + " --val-fraction 0" + out, "--val-fraction 0"},
           {"prepare --data " + textFolder().string() + " --tokenizer " + (dir() / "no.model").string() + out,
            "not 'byte', a SentencePiece .model"},
           {"prepare --data " + textFolder().string() + " --tokenizer " + textFolder().string() + out,
            "neither encoder.json"},
           {"tokenizer --data " + textFolder().string() + " --type wordpiece" + out, "--type"},
           {"tokenizer --data " + textFolder().string() + " --vocab 0" + out, "--vocab"},
           {"--preset tiny --steps 1 --data-dir " + textFolder().string() + out,
            "not a token shard directory"},
       }) {
    auto r = run(c.args);
    INFO(c.args << "\n" << r.output);
    CHECK(r.exitCode != 0);
    CHECK_THAT(r.output, ContainsSubstring(c.says));
  }
  CHECK_FALSE(fs::exists(dir() / "never"));
}

TEST_CASE("chat data: a tokenizer without a chat template, a missing token, misplaced chat flags") {
  const fs::path jsonl = dir() / "chat.jsonl";
  std::ofstream(jsonl) << R"({"prompt": "1 + 1?", "completion": "2"})"
                       << "\n";
  const std::string data = " --chat-data " + jsonl.string();
  auto r = run(tinyRun(data));
  INFO(r.output);
  CHECK(r.exitCode == 2);
  CHECK_THAT(r.output,
             ContainsSubstring("has no chat template") && ContainsSubstring("--chat-template chatml|llama3"));
  r = run(tinyRun(data + " --chat-template llama3"));
  INFO(r.output);
  CHECK_THAT(r.output,
             ContainsSubstring("needs the token <|start_header_id|>") && ContainsSubstring("byte tokenizer"));
  r = run(tinyRun(data + " --chat-template alpaca"));
  CHECK(r.exitCode != 0);
  CHECK_THAT(r.output, ContainsSubstring("--chat-template"));
  r = run(tinyRun("--eval-data " + jsonl.string()));
  CHECK_THAT(r.output, ContainsSubstring("are for chat data"));
  r = run(tinyRun("--eval-fraction 0.2"));
  CHECK_THAT(r.output, ContainsSubstring("--eval-fraction is for chat data"));
  r = run(tinyRun(data + " --data-dir " + dir().string()));
  CHECK_THAT(r.output, ContainsSubstring("--chat-data with --data or --data-dir"));
  r = run(bareRun(data + " --eval-fraction 1"));
  CHECK_THAT(r.output, ContainsSubstring("eval_fraction must be a finite number in [0, 1)"));
  r = run(bareRun(data + " --eval-fraction 0 --eval-every 5"));
  CHECK_THAT(r.output, ContainsSubstring("needs an evaluation set"));
  r = run("sample --resume " + (dir() / "never").string() + " --prompt hi --system be-brief");
  CHECK_THAT(r.output, ContainsSubstring("--chat-template and --system are for --chat"));
}

TEST_CASE("sample --prompts: each bad line named by file and line before any model is read") {
  const fs::path prompts = dir() / "prompts.jsonl";
  const std::string sample =
      "sample --resume " + (dir() / "never").string() + " --chat --prompts " + prompts.string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\"fine\"\n{\"prompt\": 5}\n", "line 2: no string \"prompt\""},
      {"\n\n{\"prompt\": \"a\", \"system\": [1]}\n", "line 3: \"system\" is not a string"},
      {"{\"prompt\": \"a\"}\n[1, 2]\n", "line 2: neither a string nor an object"},
      {"{\"prompt\": \"a\"\n", "line 1: not JSON"},
      {"\n  \n", "no prompts"}};
  for (const auto& [text, message] : cases) {
    INFO(text);
    std::ofstream(prompts) << text;
    const Result r = run(sample);
    INFO(r.output);
    CHECK(r.exitCode != 0);
    CHECK_THAT(r.output, ContainsSubstring("--prompts " + prompts.string() + ": " + message));
  }
  Result r = run("sample --resume " + (dir() / "never").string() + " --prompts " + dir().string());
  CHECK_THAT(r.output, ContainsSubstring("is not a regular file"));
  std::ofstream(prompts) << "\"a\"\n{\"prompt\": \"b\", \"system\": \"be brief\"}\n";
  r = run("sample --resume " + (dir() / "never").string() + " --prompts " + prompts.string());
  CHECK_THAT(r.output, ContainsSubstring("line 2 has a \"system\" message, which is for --chat"));
  r = run(sample + " --prompt hi");
  CHECK_THAT(r.output, ContainsSubstring("excludes"));
  r = run(sample + " --ids-out " + (dir() / "ids.json").string());
  CHECK_THAT(r.output, ContainsSubstring("excludes"));
}

TEST_CASE("tokenize: ids, JSON lines, decode and info with any tokenizer; bad input named") {
  const fs::path tok = dir() / "hf-tokenizer";
  fs::create_directories(tok);
  std::ofstream(tok / "tokenizer.json") << helios::test::smallTokenizerJson().dump();
  std::ofstream(tok / "tokenizer_config.json")
      << R"({"eos_token": "<|im_end|>", "bos_token": "<|endoftext|>"})";
  const std::string t = "tokenize --tokenizer " + tok.string() + " ";
  Result r = run(t + "--text ' the<|im_end|> he'");
  INFO(r.output);
  CHECK(r.exitCode == 0);
  CHECK(r.output == "258 260 32 257\n");
  std::ofstream(dir() / "in.jsonl") << "\" the\"\n\"he<|endoftext|>\"\n\"\"\n";
  r = run(t + "--jsonl --file " + (dir() / "in.jsonl").string());
  CHECK(r.output == "[258]\n[257,259]\n[]\n");
  r = run(t + "--decode --text '258 260 32 257'");
  CHECK(r.output == " the<|im_end|> he\n");
  std::ofstream(dir() / "ids.jsonl") << "[258,260]\n[]\n";
  r = run(t + "--jsonl --decode < " + (dir() / "ids.jsonl").string());
  CHECK(r.output == "\" the<|im_end|>\"\n\"\"\n");
  r = run(t + "--info");
  CHECK(r.exitCode == 0);
  CHECK_THAT(r.output, ContainsSubstring("\"kind\": \"hf\"") && ContainsSubstring("\"vocab\": 261") &&
                           ContainsSubstring("\"bos\": 259"));
  r = run("tokenize --tokenizer byte --text Hi");
  CHECK(r.output == "72 105\n");

  std::ofstream(dir() / "bad.jsonl") << "\"fine\"\nnot json\n";
  r = run(t + "--jsonl --file " + (dir() / "bad.jsonl").string());
  CHECK(r.exitCode != 0);
  CHECK_THAT(r.output, ContainsSubstring("line 2:"));
  std::ofstream(dir() / "latin1.txt", std::ios::binary) << "caf\xe9";
  r = run(t + "--file " + (dir() / "latin1.txt").string());
  CHECK(r.exitCode != 0);
  CHECK_THAT(r.output, ContainsSubstring("not UTF-8 at byte 3"));
  r = run(t + "--decode --text '1 x'");
  CHECK_THAT(r.output, ContainsSubstring("'x' is not a token id"));
  r = run("tokenize --tokenizer " + (dir() / "nowhere").string() + " --text a");
  CHECK(r.exitCode != 0);
  CHECK_THAT(r.output, ContainsSubstring("nowhere"));
  r = run("tokenize --help");
  CHECK_THAT(r.output,
             ContainsSubstring("--jsonl") && ContainsSubstring("--decode") && ContainsSubstring("--info"));
}

TEST_CASE("integers out of their type's range are refused, never clamped") {
  struct Case {
    const char* args;
    const char* says;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"--steps 99999999999999999999999", "no larger than 18446744073709551615"},
           {"--seed 18446744073709551616", "no larger than 18446744073709551615"},
           {"--checkpoint-every 18446744073709551616", "no larger than 18446744073709551615"},
           {"--batch 4294967296", "--batch"},
           {"--layers 99999999999", "--layers"}}) {
    auto r = run(bareRun(c.args));
    INFO(c.args << "\n" << r.output);
    CHECK(r.exitCode != 0);
    CHECK_THAT(r.output, ContainsSubstring(std::string(c.args).substr(0, std::string(c.args).find(' '))) &&
                             ContainsSubstring(c.says));
  }
  // The largest values are taken as given (and then judged by the configuration's own ranges).
  auto r = run("--preset tiny --steps 1 --batch 1 --layers 1 --dim 32 --heads 2 --plan-only "
               "--seed 18446744073709551615 --out " +
               (dir() / "largest-seed").string());
  INFO(r.output);
  CHECK(r.exitCode == 0);
  CHECK_FALSE(fs::exists(dir() / "never"));
}

TEST_CASE("an empty path, size or name is refused, never taken as the default") {
  for (const char* flag : {"--data", "--data-dir", "--out", "--resume", "--config", "--init-from",
                           "--max-memory", "--device", "--tuning"}) {
    const std::string empty = std::string(flag) + " ''";
    auto r = run(std::string(flag) == "--out" ? "--preset tiny --steps 1 " + empty : tinyRun(empty));
    INFO(flag << "\n" << r.output);
    CHECK(r.exitCode != 0);
    CHECK_THAT(r.output, ContainsSubstring(flag) && ContainsSubstring("must not be empty"));
    CHECK_THAT(r.output, !ContainsSubstring("step 1"));
  }
  for (const std::string& args :
       {std::string("sample --resume ''"), "export --run '' --out " + (dir() / "never").string(),
        "export --run " + (dir() / "no-run").string() + " --out ''",
        "prepare --data '' --out " + (dir() / "never").string()}) {
    auto r = run(args);
    INFO(args << "\n" << r.output);
    CHECK(r.exitCode != 0);
    CHECK_THAT(r.output, ContainsSubstring("must not be empty"));
  }
  CHECK_FALSE(fs::exists(dir() / "never"));
}

TEST_CASE("a FIFO or device given as an input is refused at once, never opened") {
  const fs::path d = dir() / "special";
  fs::remove_all(d);
  fs::create_directories(d / "shards");
  fs::create_directories(d / "hf");
  REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);
  REQUIRE(::mkfifo((d / "hf" / "config.json").c_str(), 0600) == 0);
  REQUIRE(::mkfifo((d / "shards" / "index.json").c_str(), 0600) == 0);
  struct Case {
    std::string args;
    std::string says;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"--data " + (d / "fifo").string(), "the training text is not a regular file (it is a FIFO"},
           {"--data /dev/zero",
            "/dev/zero: the training text is not a regular file (it is a character device)"},
           {"--config " + (d / "fifo").string(), "the config file is not a regular file (it is a FIFO"},
           {"--data-dir " + (d / "shards").string(), "the shard index is not a regular file (it is a FIFO"},
           {"--init-from " + (d / "hf").string(), "config.json: the JSON file is not a regular file"}}) {
    // Where open() would block, `timeout` turns the hang into a failure.
    const char* exe = std::getenv("HELIOS_TRAIN_EXE");
    auto r = helios::test::runCommand("timeout 60 " + std::string(exe ? exe : HELIOS_TRAIN_EXE) + " " +
                                      tinyRun(c.args));
    INFO(c.args << "\n" << r.output);
    CHECK(r.exitCode == 2);
    CHECK_THAT(r.output, ContainsSubstring(c.says));
  }
  CHECK_FALSE(fs::exists(dir() / "never"));
}

namespace {

// A bigram run small enough to take a second; `extra` is appended.
std::string quickRun(const fs::path& out, const std::string& extra = "") {
  return "--model bigram --batch 2 --seq-len 16 --eval-every 0 --log-every 1000 --out " + out.string() + " " +
         extra;
}

} // namespace

TEST_CASE("a run directory has one owner: a second trainer and a fresh run over a run are refused") {
  const fs::path base = dir() / "owner", out = base / "run";
  fs::remove_all(base);
  auto r = run(quickRun(out, "--steps 2"));
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  const std::string metrics = helios::test::slurp(out / "metrics.jsonl");

  // A fresh run into it: refused, nothing touched.
  r = run(quickRun(out, "--steps 3"));
  INFO(r.output);
  CHECK(r.exitCode == 2);
  CHECK_THAT(r.output, ContainsSubstring(out.string() + " already holds a run") &&
                           ContainsSubstring("--resume " + out.string() + " continues it") &&
                           ContainsSubstring("--overwrite moves it aside"));
  CHECK(helios::test::slurp(out / "metrics.jsonl") == metrics);
  CHECK(fs::exists(out / "checkpoints" / "step-000000002"));

  // A resume elsewhere may not land in another run either.
  fs::create_directories(base / "other");
  helios::test::spit(base / "other" / "notes.txt", "mine");
  r = run("--resume " + out.string() + " --steps 3 --out " + (base / "other").string());
  INFO(r.output);
  CHECK(r.exitCode == 2);
  CHECK_THAT(r.output, ContainsSubstring("is not the run directory of the checkpoint being resumed"));
  CHECK(helios::test::slurp(base / "other" / "notes.txt") == "mine");

  // --overwrite: the old run moves aside whole, the new one starts in an empty directory.
  r = run(quickRun(out, "--steps 1 --overwrite"));
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  CHECK_THAT(r.output, ContainsSubstring("--overwrite: moved what " + out.string() + " held to " +
                                         out.string() + ".replaced-1"));
  CHECK(helios::test::slurp(base / "run.replaced-1" / "metrics.jsonl") == metrics);
  CHECK(fs::exists(base / "run.replaced-1" / "checkpoints" / "step-000000002" / "model.safetensors"));
  CHECK(fs::exists(out / "checkpoints" / "step-000000001"));

  // Two trainers at once: the second is refused at once, naming the first's pid; the first is unharmed.
  const pid_t first = helios::test::spawnLogged(
      {std::getenv("HELIOS_TRAIN_EXE") ? std::getenv("HELIOS_TRAIN_EXE") : HELIOS_TRAIN_EXE, "--resume",
       out.string(), "--steps", "100000000", "--checkpoint-every", "50", "--log-every", "1000"},
      (base / "first.log").string());
  const std::string holder = "pid " + std::to_string(first) + " on ";
  for (int i = 0; i < 1200 && helios::test::slurp(out / "helios.lock").find(holder) == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE_THAT(helios::test::slurp(out / "helios.lock"), ContainsSubstring(holder));
  for (const std::string& args : {"--resume " + out.string() + " --steps 5", quickRun(out, "--steps 5"),
                                  quickRun(out, "--steps 5 --overwrite")}) {
    r = run(args);
    INFO(args << "\n" << r.output);
    CHECK(r.exitCode == 2);
    CHECK_THAT(r.output, ContainsSubstring(out.string() + " is in use by another training run: " + holder));
  }
  CHECK_FALSE(helios::test::waitExitWithin(first, 0.1).has_value()); // still training
  ::kill(first, SIGTERM);
  CHECK(helios::test::waitExitWithin(first, 60).has_value());
  CHECK_FALSE(fs::exists(base / "run.replaced-2"));
}

TEST_CASE("a model too large for the host's memory is refused with the estimate, never by a signal") {
  auto r = run("--preset tiny --steps 1 --layers 1000000 --out " + (dir() / "too-large").string());
  INFO(r.output);
  CHECK(r.exitCode == 2);
  CHECK_THAT(r.output, ContainsSubstring("needs about") && ContainsSubstring("of host memory") &&
                           ContainsSubstring("available (limited by") &&
                           ContainsSubstring("refused before allocating it"));
  // Under an address-space limit (ulimit -v), from too small to map the parameters to enough for a small run:
  // each ends with an exit status and a message, never a signal. (Below about 400 MiB lavapipe's own start-up
  // now and then dies inside Mesa, before Helios runs a line of its own, so the sweep starts above that.)
  const char* exe = std::getenv("HELIOS_TRAIN_EXE");
  for (const char* kib : {"800000", "1500000", "3000000", "6000000", "12000000"})
    for (const char* layers : {"1", "100", "1000000"}) {
      const std::string cmd = std::string("ulimit -v ") + kib + "; exec " + (exe ? exe : HELIOS_TRAIN_EXE) +
                              " --preset tiny --steps 1 --batch 1 --dim 32 --heads 2 --plan-only --layers " +
                              layers + " --out " + (dir() / "ulimit").string();
      r = helios::test::runCommand("sh -c '" + cmd + "'");
      INFO("ulimit -v " << kib << ", --layers " << layers << "\n" << r.output);
      CHECK(r.exitCode < 128);
      if (r.exitCode != 0) CHECK_THAT(r.output, ContainsSubstring("helios-train: "));
    }
}
