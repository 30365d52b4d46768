// Two runs meeting in one directory: the trainer's lock on its run directory (a second trainer refused with
// the holder's pid, a fresh run into a directory that holds one refused, --overwrite moving it aside), the
// readers' pins that the pruner respects, what `latest` says when it cannot be used, and the host-memory
// estimate's sources (meminfo, cgroups v1 and v2).
#include "common.hpp"

#include "engine/train/checkpoint_dir.hpp"
#include "engine/train/checkpoint_pin.hpp"
#include "engine/train/config.hpp"
#include "engine/train/host_memory.hpp"
#include "engine/train/model_config.hpp"
#include "engine/train/run_dir.hpp"
#include "support/files.hpp"

#include <catch2/matchers/catch_matchers_string.hpp>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

TEST_CASE("run directory: one owner at a time; the holder's pid in the refusal", "[train][run_dir]") {
  const fs::path dir = test::tempDir("run-dir-owner") / "run";
  {
    train::RunDirectory owner = train::RunDirectory::claim(dir, train::RunStart::Fresh);
    CHECK(fs::is_directory(dir));
    CHECK_THAT(test::slurp(dir / train::kRunLockFile),
               ContainsSubstring(fmt::format("pid {} on ", ::getpid())));
    // flock locks belong to open file descriptions: a second claim, even from this process, is refused.
    for (const auto start : {train::RunStart::Fresh, train::RunStart::Resume, train::RunStart::Overwrite})
      CHECK_THROWS_WITH(train::RunDirectory::claim(dir, start, dir),
                        ContainsSubstring(dir.string() + " is in use by another training run: pid " +
                                          std::to_string(::getpid())));
    train::RunDirectory moved = std::move(owner); // the lock moves with the handle
    CHECK_THROWS_AS(train::RunDirectory::claim(dir, train::RunStart::Fresh), train::RunDirectoryError);
  }
  // Released with its handle; the lock file alone does not make the directory a run.
  CHECK_NOTHROW(train::RunDirectory::claim(dir, train::RunStart::Fresh));
}

TEST_CASE("run directory: a fresh run never writes over another; --overwrite moves it aside whole",
          "[train][run_dir]") {
  const fs::path base = test::tempDir("run-dir-fresh"), dir = base / "run";
  fs::create_directories(dir / "checkpoints" / "step-000000003");
  test::spit(dir / "metrics.jsonl", "{\"step\": 1}\n");
  test::spit(dir / "checkpoints" / "step-000000003" / "model.safetensors", "weights");
  CHECK_THROWS_WITH(train::RunDirectory::claim(dir, train::RunStart::Fresh),
                    ContainsSubstring(dir.string() + " already holds a run or other files (checkpoints, "
                                                     "metrics.jsonl)") &&
                        ContainsSubstring("--resume " + dir.string() + " continues it") &&
                        ContainsSubstring("--overwrite moves it aside to " + dir.string() + ".replaced-1"));
  CHECK(test::slurp(dir / "metrics.jsonl") == "{\"step\": 1}\n");
  // A resume continues the run the directory holds; another run's checkpoint may not land in it.
  CHECK_NOTHROW(train::RunDirectory::claim(dir, train::RunStart::Resume, dir));
  CHECK_THROWS_WITH(train::RunDirectory::claim(dir, train::RunStart::Resume, base / "elsewhere"),
                    ContainsSubstring("is not the run directory of the checkpoint being resumed"));
  CHECK_THROWS_WITH(train::RunDirectory::claim(dir, train::RunStart::Overwrite, dir),
                    ContainsSubstring("--overwrite would move aside"));
  fs::create_directories(base / "run.replaced-1"); // taken: the next free name is used
  {
    const train::RunDirectory owner = train::RunDirectory::claim(dir, train::RunStart::Overwrite);
    CHECK(owner.movedAside() == base / "run.replaced-2");
    CHECK(test::slurp(base / "run.replaced-2" / "metrics.jsonl") == "{\"step\": 1}\n");
    CHECK(test::slurp(base / "run.replaced-2" / "checkpoints" / "step-000000003" / "model.safetensors") ==
          "weights");
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(dir))
      left.push_back(e.path().filename().string());
    CHECK(left == std::vector<std::string>{train::kRunLockFile});
  }
  // An empty or new directory takes any start.
  CHECK_NOTHROW(train::RunDirectory::claim(base / "new", train::RunStart::Resume, base / "elsewhere"));
  CHECK_NOTHROW(train::RunDirectory::claim(base / "new2", train::RunStart::Overwrite));
  CHECK_FALSE(fs::exists(base / "new2.replaced-1"));
}

TEST_CASE("checkpoints: a pinned step survives pruning until its reader lets go", "[train][run_dir]") {
  HELIOS_REQUIRE_CORPUS();
  const fs::path run = test::tempDir("run-dir-pin");
  auto cfg = test::bigramConfig();
  cfg.steps = 1;
  cfg.keepCheckpoints = 1;
  test::Run a(cfg);
  a.trainer->train();
  a.trainer->saveCheckpoint(run);
  std::optional<train::PinnedCheckpoint> pin = train::pinCheckpoint(run);
  const fs::path first = pin->dir();
  CHECK(first.filename() == "step-000000001");
  a.trainer->step();
  a.trainer->saveCheckpoint(run); // keep 1: step 1 would go, but it is pinned
  CHECK(fs::exists(first / "model.safetensors"));
  CHECK(train::currentCheckpoint(run)->step == 2);
  CHECK(train::pinCheckpoint(run).dir().filename() == "step-000000002"); // readers take the current one
  CHECK_FALSE(train::removeUnlessPinned(first));
  pin.reset();
  a.trainer->step();
  a.trainer->saveCheckpoint(run); // now steps 1 and 2 go
  CHECK_FALSE(fs::exists(first));
  CHECK(train::listCheckpoints(run).size() == 1);
  CHECK(train::removeUnlessPinned(run / "no-such-step")); // nothing to remove: done
}

TEST_CASE("checkpoints: what is wrong with `latest` is said, and the newest complete step is taken",
          "[train][run_dir]") {
  const fs::path run = test::tempDir("run-dir-latest"), root = run / "checkpoints";
  fs::create_directories(root / "step-000000004");
  fs::create_directories(root / "step-000000007");
  test::spit(root / "step-000000007" / "model.safetensors", "x");
  test::spit(root / "latest", "step-000000004\n");
  CHECK(train::latestProblem(run).empty());
  CHECK(train::currentCheckpoint(run)->step == 4);
  struct Case {
    std::string latest;
    std::string says;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"", "latest is empty"},
           {"\n", "latest is empty"},
           {"garbage\n", "latest holds 'garbage', not a step directory's name"},
           {"step-000000009\n", "latest names step-000000009, which does not exist"}}) {
    test::spit(root / "latest", c.latest);
    INFO(c.latest);
    CHECK_THAT(train::latestProblem(run),
               ContainsSubstring((root / "latest").string()) && ContainsSubstring(c.says));
    CHECK(train::currentCheckpoint(run)->step == 7);
    CHECK(train::resolveCheckpoint(run) == root / "step-000000007");
  }
  fs::remove(root / "latest");
  CHECK_THAT(train::latestProblem(run), ContainsSubstring("latest is missing"));
  REQUIRE(::mkfifo((root / "latest").c_str(), 0600) == 0); // never opened: it would block
  CHECK_THAT(train::latestProblem(run), ContainsSubstring("latest is a FIFO (named pipe), not a file"));
  CHECK(train::currentCheckpoint(run)->step == 7);
}

TEST_CASE("host memory: MemAvailable, the tightest enclosing cgroup, and the estimate's refusal",
          "[train][host_memory]") {
  const fs::path dir = test::tempDir("host-memory");
  train::HostMemorySources s{dir / "meminfo", dir / "cgroup", dir / "status", dir / "fs", false};
  test::spit(s.meminfo, "MemTotal:       32000000 kB\nMemAvailable:   20000000 kB\n");
  test::spit(s.selfCgroup, "");
  auto a = train::availableHostMemory(s);
  CHECK(a.bytes == 20000000ull * 1024);
  CHECK(a.limitedBy == "MemAvailable");

  // cgroup v1: the memory controller's hierarchy, the parent tighter than the child.
  test::spit(s.selfCgroup, "4:memory:/jobs/one\n3:cpu:/elsewhere\n");
  fs::create_directories(s.cgroupRoot / "memory" / "jobs" / "one");
  test::spit(s.cgroupRoot / "memory" / "jobs" / "one" / "memory.limit_in_bytes", "9223372036854771712\n");
  test::spit(s.cgroupRoot / "memory" / "jobs" / "memory.limit_in_bytes", "8589934592\n");
  test::spit(s.cgroupRoot / "memory" / "jobs" / "memory.usage_in_bytes", "2147483648\n");
  a = train::availableHostMemory(s);
  CHECK(a.bytes == 6ull << 30);
  CHECK_THAT(a.limitedBy, ContainsSubstring("jobs") && ContainsSubstring("limit 8.00 GiB"));

  // cgroup v2: memory.max ("max" is no limit) less memory.current.
  fs::remove_all(s.cgroupRoot);
  test::spit(s.selfCgroup, "0::/user/session\n");
  fs::create_directories(s.cgroupRoot / "user" / "session");
  test::spit(s.cgroupRoot / "cgroup.controllers", "memory\n");
  test::spit(s.cgroupRoot / "user" / "memory.max", "max\n");
  test::spit(s.cgroupRoot / "user" / "session" / "memory.max", "4294967296\n");
  test::spit(s.cgroupRoot / "user" / "session" / "memory.current", "1073741824\n");
  a = train::availableHostMemory(s);
  CHECK(a.bytes == 3ull << 30);

  // 1e12 parameters on a CPU device: 40 bytes each; the refusal names the parts and the limit.
  const auto need = train::trainingHostNeed(1'000'000'000'000ull, 0, true, 1 << 20, 0);
  CHECK(need.total() == 40'000'000'000'000ull + (1 << 20));
  CHECK_THROWS_AS(train::requireHostMemory(need, a, "a gpt model"), train::HostMemoryError);
  CHECK_THROWS_WITH(train::requireHostMemory(need, a, "a gpt model"),
                    ContainsSubstring("a gpt model needs about 36.38 TiB of host memory") &&
                        ContainsSubstring("a checkpoint save's host copies") &&
                        ContainsSubstring("the machine has 3.00 GiB available (limited by the cgroup"));
  CHECK_NOTHROW(
      train::requireHostMemory(train::trainingHostNeed(1'000'000, 0, false, 0, 16 << 20), a, "small"));
  // Sums saturate instead of wrapping around to a small number.
  CHECK(train::trainingHostNeed(UINT64_MAX / 8, 0, true, 0, 0).total() == UINT64_MAX);
}

TEST_CASE("host memory: a LoRA run counts its adapters as trained and its base as frozen bytes",
          "[train][host]") {
  // A Llama-shaped config: C 32, 4 query heads and 2 kv heads of 8, SwiGLU width 64, 2 layers.
  model::GptConfig g;
  g.vocab = 96, g.context = 64, g.layers = 2, g.dim = 32, g.heads = 4, g.kvHeads = 2, g.hidden = 64;
  g.norm = model::NormKind::RMSNorm, g.mlp = model::MlpKind::SwiGLU, g.rope = true;
  g.bias = model::BiasPlacement::None;
  nlohmann::json arch = train::toJson(g);
  arch["kind"] = "gpt";
  const train::ParameterFootprint full = train::parameterFootprintOf(arch);
  CHECK(full.trainable == g.parameterCount());
  CHECK(full.frozenBytes == 0);

  g.lora.rank = 4, g.lora.alpha = 8, g.lora.base = codegen::Elem::F16;
  arch = train::toJson(g);
  arch["kind"] = "gpt";
  arch["lora_base"] = {{"path", "/nowhere"}};
  const train::ParameterFootprint lora = train::parameterFootprintOf(arch);
  // Per layer, A is r x in and B out x r for each of q (out 32), k (16), v (16), o (32), gate (64), up (64)
  // (in 32) and down (out 32, in 64).
  const uint64_t perLayer = 4 * (6 * 32 + 64) + 4 * (32 + 16 + 16 + 32 + 64 + 64 + 32);
  CHECK(lora.trainable == 2 * perLayer);
  CHECK(lora.frozenBytes == 2 * g.parameterCount());
  // On a CPU device: 16 bytes per trained parameter and the base, then the save's copies of the adapters
  // only.
  const auto need = train::trainingHostNeed(lora.trainable, lora.frozenBytes, true, 0, 0);
  CHECK(need.total() == 40 * lora.trainable + lora.frozenBytes);
}
