// Fault injection on the real helios-train binary: runs with a checkpoint every step are killed with SIGKILL
// at random moments inside their saves (the test hook HELIOS_TEST_SAVE_PAUSE_MS stretches each save, so
// that a random delay after a save begins lands inside it), then resumed. Every run directory must resume,
// and every resumed run must end bit-identical to the uninterrupted one: weights, Adam moments, trainer
// state, the loss of every step in metrics.jsonl, and no debris in RUN/checkpoints. Meanwhile `sample`
// readers run against the directory (each must succeed) and a second trainer tries to resume it (refused
// while the first holds it). Corrupted checkpoints and diverging training stop the binary with a non-zero
// exit and a message naming the problem; an unusable `latest` is named in a warning.
#include "engine/train/checkpoint.hpp"
#include "engine/train/checkpoint_dir.hpp"
#include "engine/train/data.hpp"

#include <array>
#include <catch2/catch_get_random_seed.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <random>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

using namespace helios;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kSteps = 12;
constexpr int kTries = 24;
constexpr uint32_t kKeep = 2;
constexpr const char* kPauseMs = "4"; // per pause point; a save has 11 of them, so it spans 44 ms or more

fs::path tempDir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("helios-train-crash-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// Starts helios-train with `args` (stdout and stderr into `log`), with `env` added to the environment.
pid_t spawn(const std::vector<std::string>& args, const fs::path& log,
            const std::vector<std::string>& env = {}) {
  std::vector<std::string> all{HELIOS_TRAIN_EXE};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (auto& a : all)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> envCopy(env);
  for (char** e = environ; *e; ++e)
    envCopy.emplace_back(*e);
  for (auto& e : envCopy)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE(rc == 0);
  return pid;
}

// The exit code, or 128 + the signal.
int waitFor(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int run(const std::vector<std::string>& args, const fs::path& log) {
  return waitFor(spawn(args, log));
}

std::vector<std::string> trainArgs(const fs::path& out, const char* lr = "0.1", uint64_t steps = kSteps,
                                   int checkpointEvery = 1) {
  std::istringstream words(fmt::format("--model bigram --batch 4 --seq-len 32 --steps {} --lr {} --warmup 2 "
                                       "--eval-every 0 --time-every 0 --checkpoint-every {} --keep {} "
                                       "--log-every 1000 --grad-clip 0",
                                       steps, lr, checkpointEvery, kKeep));
  std::vector<std::string> args;
  for (std::string w; words >> w;)
    args.push_back(w);
  args.insert(args.end(), {"--out", out.string()});
  return args;
}

struct Final {
  train::SafeTensorsFile model, optimizer;
  nlohmann::json state;
  std::vector<std::pair<uint64_t, double>> losses; // metrics.jsonl: (step, loss) per line
};

Final readFinal(const fs::path& run) {
  const auto current = train::currentCheckpoint(run);
  REQUIRE(current);
  REQUIRE(current->step == kSteps);
  Final f{train::readSafetensors(current->dir / "model.safetensors"),
          train::readSafetensors(current->dir / "optimizer.safetensors"),
          train::checkpointTrainerState(current->dir),
          {}};
  std::ifstream in(run / "metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    f.losses.emplace_back(j.at("step").get<uint64_t>(), j.at("loss").get<double>());
  }
  return f;
}

void checkSameTensors(const train::SafeTensorsFile& a, const train::SafeTensorsFile& b) {
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    INFO(a.tensors[i].name);
    CHECK(a.tensors[i].name == b.tensors[i].name);
    REQUIRE(a.tensors[i].data.size() == b.tensors[i].data.size());
    CHECK(std::memcmp(a.tensors[i].data.data(), b.tensors[i].data.data(), 4 * a.tensors[i].data.size()) == 0);
  }
}

std::string listing(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  std::string s;
  for (const auto& n : names)
    s += (s.empty() ? "" : " ") + n;
  return s;
}

// What meets a run while it saves: `sample` readers one after another once a checkpoint exists (each must
// succeed: the step it reads is pinned, so pruning cannot remove it under it), and a second trainer resuming
// the same directory (refused at once, naming the first's pid, while the first holds the directory; after
// the kill it may take the directory over and finish the run, which the resume below then finds done).
class Bystanders {
public:
  Bystanders(fs::path dir, fs::path logs, pid_t trainer)
      : dir_(std::move(dir)), logs_(std::move(logs)), trainer_(trainer) {}

  // Both start once a checkpoint exists (before it, a resume has nothing to read).
  void poll() {
    reapReader(false);
    if (!fs::exists(dir_ / "checkpoints" / "latest")) return;
    if (reader_ < 0) {
      readerLog_ = logs_.string() + fmt::format("-sample-{:02}.log", samples_++);
      reader_ = spawn({"sample", "--resume", dir_.string(), "--tokens", "4", "--prompt", "And"}, readerLog_);
    }
    if (second_ < 0 && slurp(dir_ / "helios.lock").find(holder()) != std::string::npos)
      second_ = spawn({"--resume", dir_.string(), "--log-every", "1000"}, secondLog());
    if (second_ >= 0 && !secondDone_ && waitpid(second_, &secondStatus_, WNOHANG) == second_) {
      secondDone_ = true;
      secondBeforeKill_ = true;
    }
  }

  // After the trainer was killed: waits for both, checks what they said. Returns whether the second trainer
  // was refused while the first still held the directory.
  bool finish() {
    reapReader(true);
    if (second_ < 0) return false;
    if (!secondDone_) waitpid(second_, &secondStatus_, 0);
    const int rc = WIFEXITED(secondStatus_) ? WEXITSTATUS(secondStatus_) : 128 + WTERMSIG(secondStatus_);
    const std::string log = slurp(secondLog());
    INFO("second trainer's log:\n" << log);
    const bool refused =
        rc == 2 && log.find("is in use by another training run: " + holder()) != std::string::npos;
    if (secondBeforeKill_) CHECK(refused); // the first held the directory all along
    CHECK((refused || rc == 0));           // or it took the directory over after the kill and finished
    return refused;
  }

private:
  std::string holder() const { return fmt::format("pid {} on ", trainer_); }
  std::string secondLog() const { return logs_.string() + "-second.log"; }
  void reapReader(bool wait) {
    if (reader_ < 0) return;
    int status = 0;
    if (waitpid(reader_, &status, wait ? 0 : WNOHANG) != reader_) return;
    const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    INFO("sample's log:\n" << slurp(readerLog_));
    CHECK(rc == 0); // never "cannot remove" nor a missing file: the step it read was pinned
    reader_ = -1;
  }

  fs::path dir_, logs_;
  pid_t trainer_, reader_ = -1, second_ = -1;
  int samples_ = 0, secondStatus_ = 0;
  bool secondDone_ = false, secondBeforeKill_ = false;
  std::string readerLog_;
};

enum class Stage { Staged, Renamed, Latest };
constexpr const char* kStageNames[] = {"staged", "renamed", "latest"};

// Whether the save of step k has reached `stage` (or gone past it).
bool reached(const fs::path& root, uint64_t k, Stage stage) {
  const std::string name = train::checkpointDirName(k);
  switch (stage) {
  case Stage::Staged:
    return fs::exists(root / (name + ".partial")) || fs::exists(root / name);
  case Stage::Renamed:
    return fs::exists(root / name);
  case Stage::Latest:
    return slurp(root / "latest").rfind(name, 0) == 0;
  }
  return false;
}

} // namespace

TEST_CASE("crash: runs killed inside their saves resume and end bit-identical", "[train][crash]") {
  if (!train::defaultCorpusAvailable()) SKIP("default corpus missing: run third_party/bootstrap.sh");
  const auto base = tempDir("kill");
  const fs::path ref = base / "reference";
  REQUIRE(run(trainArgs(ref), base / "reference.log") == 0);
  const Final want = readFinal(ref);
  REQUIRE(want.losses.size() == kSteps);

  const uint32_t seed = Catch::getSeed();
  std::printf(
      "crash test: seed %u (--rng-seed %u repeats these kills), %d tries, HELIOS_TEST_SAVE_PAUSE_MS=%s\n",
      seed, seed, kTries, kPauseMs);
  std::mt19937 gen(seed);
  std::array<int, 4> outcomes{};
  int refusedSecond = 0;
  for (int t = 0; t < kTries; ++t) {
    const fs::path dir = base / fmt::format("try-{:02}", t), root = dir / "checkpoints";
    // After the save of step `k` begins (so step k-1 is complete), wait `delayUs` and kill.
    // Once the save of step k (k >= 2: step k-1 is complete) reaches a random stage (its directory staged,
    // renamed into place, named by `latest`), wait a random delay and kill.
    const uint64_t k = 2 + gen() % (kSteps - 2);
    const auto stage = static_cast<Stage>(gen() % 3);
    const uint32_t delayUs = static_cast<uint32_t>(gen() % (stage == Stage::Staged ? 40000 : 8000));
    const pid_t pid = spawn(trainArgs(dir), base / fmt::format("try-{:02}.log", t),
                            {std::string("HELIOS_TEST_SAVE_PAUSE_MS=") + kPauseMs});
    INFO("try " << t << ": kill " << delayUs << " us after the save of step " << k << " reached stage "
                << int(stage));
    bool exited = false;
    Bystanders bystanders(dir, base / fmt::format("try-{:02}", t), pid);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!reached(root, k, stage)) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        break;
      }
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      bystanders.poll();
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    REQUIRE(!exited); // the run ended on its own before reaching step k: see its log
    std::this_thread::sleep_for(std::chrono::microseconds(delayUs));
    kill(pid, SIGKILL);
    waitFor(pid);
    refusedSecond += bystanders.finish() ? 1 : 0;
    const std::string left = listing(root);
    const auto current = train::currentCheckpoint(dir);
    REQUIRE(current);
    const bool staging = left.find(train::checkpointDirName(k) + ".partial") != std::string::npos;
    const bool pruned =
        left.find(".partial") == std::string::npos && train::listCheckpoints(dir).size() <= kKeep;
    const int outcome = staging ? 0 : current->step < k ? 1 : !pruned ? 2 : 3;
    ++outcomes[outcome];
    std::printf("  try %2d: step %2llu %-8s + %4.1f ms -> current step %llu; %s\n", t,
                static_cast<unsigned long long>(k), kStageNames[int(stage)], delayUs / 1000.0,
                static_cast<unsigned long long>(current->step), left.c_str());

    // Resume (no pause) to the end.
    const fs::path log = base / fmt::format("try-{:02}-resume.log", t);
    const int rc = run({"--resume", dir.string(), "--log-every", "1000"}, log);
    INFO("left behind: " << left << "\nresume log:\n" << slurp(log));
    REQUIRE(rc == 0);
    const Final got = readFinal(dir);
    checkSameTensors(got.model, want.model);
    checkSameTensors(got.optimizer, want.optimizer);
    for (const char* key : {"step", "loss_scale", "loader_state", "adam_t", "good_steps", "skipped_total"})
      CHECK(got.state.at(key) == want.state.at(key));
    CHECK(got.losses == want.losses); // steps 1..12 once each, every loss bit-identical
    CHECK(listing(root).find(".partial") == std::string::npos);
    CHECK(listing(dir).find(".partial") == std::string::npos); // loss.svg and metrics.jsonl too
    CHECK(train::listCheckpoints(dir).size() == kKeep);
  }
  std::printf("crash test: killed while writing step k's files %d, after its rename before `latest` %d, "
              "after `latest` before the cleanup %d, later %d (of %d)\n",
              outcomes[0], outcomes[1], outcomes[2], outcomes[3], kTries);
  CHECK(outcomes[0] + outcomes[1] + outcomes[2] > 0); // the kills did land inside saves
  std::printf("crash test: a second trainer on the same directory was refused in %d of %d tries\n",
              refusedSecond, kTries);
  CHECK(refusedSecond > 0);
}

TEST_CASE("crash: corrupted checkpoints and diverging runs stop helios-train with the reason",
          "[train][crash]") {
  using Catch::Matchers::ContainsSubstring;
  if (!train::defaultCorpusAvailable()) SKIP("default corpus missing: run third_party/bootstrap.sh");
  const auto base = tempDir("refuse");
  const fs::path good = base / "good";
  REQUIRE(run(trainArgs(good), base / "good.log") == 0);

  // Resuming from an explicit older step directory continues in its run directory and ends where the
  // uninterrupted run did (step 12 saved again: it replaces the current checkpoint in one exchange).
  const Final want = readFinal(good);
  REQUIRE(run({"--resume", (good / "checkpoints" / "step-000000011").string()}, base / "again.log") == 0);
  const Final again = readFinal(good);
  checkSameTensors(again.model, want.model);
  checkSameTensors(again.optimizer, want.optimizer);
  CHECK(again.losses == want.losses);
  CHECK(train::listCheckpoints(good).size() == kKeep);

  // 64 bytes flipped in the current checkpoint's weights: resume and sample refuse, naming the tensor.
  const fs::path bad = base / "flipped";
  fs::copy(good, bad, fs::copy_options::recursive);
  const fs::path model = train::resolveCheckpoint(bad) / "model.safetensors";
  std::string bytes = slurp(model);
  for (size_t i = bytes.size() - 200; i < bytes.size() - 136; ++i)
    bytes[i] = static_cast<char>(~bytes[i]);
  std::ofstream(model, std::ios::binary | std::ios::trunc) << bytes;
  CHECK(run({"--resume", bad.string(), "--steps", "14"}, base / "flipped.log") == 2);
  CHECK_THAT(slurp(base / "flipped.log"), ContainsSubstring("checksum mismatch in tensor 'table.weight'"));
  CHECK(run({"sample", "--resume", bad.string(), "--tokens", "4"}, base / "flipped-sample.log") == 2);
  CHECK_THAT(slurp(base / "flipped-sample.log"),
             ContainsSubstring("checksum mismatch in tensor 'table.weight'"));

  // `latest` garbage, empty or naming a missing step: a warning names it, the newest complete step is read.
  const fs::path latest = good / "checkpoints" / "latest";
  for (const char* text : {"garbage\n", "", "step-000000099\n"}) {
    std::ofstream(latest, std::ios::trunc) << text;
    const fs::path log = base / "latest-sample.log";
    CHECK(run({"sample", "--resume", good.string(), "--tokens", "4"}, log) == 0);
    CHECK_THAT(slurp(log),
               ContainsSubstring("helios: warning: " + latest.string()) &&
                   ContainsSubstring("reading " + (good / "checkpoints" / "step-000000012").string()));
  }
  std::ofstream(latest, std::ios::trunc) << "step-000000012\n";

  // A learning rate that drives the weights to infinity: with a checkpoint every step, the first save
  // refuses the huge weights; with none until the end, the third infinite loss in a row stops the run.
  CHECK(run(trainArgs(base / "diverge", "1e38", 40), base / "diverge.log") == 2);
  CHECK_THAT(
      slurp(base / "diverge.log"),
      ContainsSubstring("refusing to save the checkpoint of step 1: non-finite values in the weights"));
  CHECK(!train::currentCheckpoint(base / "diverge"));
  CHECK(run(trainArgs(base / "diverge-late", "1e38", 40, 0), base / "diverge-late.log") == 2);
  CHECK_THAT(slurp(base / "diverge-late.log"),
             ContainsSubstring("the loss was infinite 3 times in a row: training diverged"));
  CHECK(!train::currentCheckpoint(base / "diverge-late"));
}
