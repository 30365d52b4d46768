#include "engine/train/checkpoint_dir.hpp"

#include "engine/io/atomic_file.hpp"
#include "engine/io/input_file.hpp"
#include "engine/train/checkpoint.hpp"
#include "engine/train/checkpoint_pin.hpp"
#include "engine/train/durable_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <unistd.h>
#include <utility>

namespace helios::train {

namespace fs = std::filesystem;

namespace {

constexpr const char* kRoot = "checkpoints";
constexpr const char* kLatest = "latest";
constexpr std::string_view kPartial = ".partial";

fs::path withoutTrailingSlash(const fs::path& p) {
  fs::path n = p.lexically_normal();
  return n.has_filename() || !n.has_parent_path() ? n : n.parent_path();
}

// The step directory `latest` names, or what is wrong with `latest`.
struct Latest {
  std::optional<CheckpointEntry> entry;
  std::string problem; // empty when entry is set
};

Latest readLatest(const fs::path& root) {
  const fs::path file = root / kLatest;
  const std::string_view kind = io::fileKind(file);
  if (kind == "missing") return {std::nullopt, fmt::format("{} is missing", file.string())};
  if (kind != "a regular file")
    return {std::nullopt, fmt::format("{} is {}, not a file", file.string(), kind)};
  std::ifstream in(file);
  std::string name;
  if (!in || !std::getline(in, name) || name.empty())
    return {std::nullopt, fmt::format("{} is empty", file.string())};
  const auto step = parseCheckpointDirName(name);
  if (!step || name.size() > 64)
    return {std::nullopt,
            fmt::format("{} holds '{}', not a step directory's name", file.string(), name.substr(0, 64))};
  if (!fs::is_directory(root / name))
    return {std::nullopt, fmt::format("{} names {}, which does not exist", file.string(), name)};
  return {CheckpointEntry{*step, root / name}, {}};
}

// The current checkpoint, and why `latest` did not name it (empty when it did, or when there is none).
std::pair<std::optional<CheckpointEntry>, std::string> findCurrent(const fs::path& run) {
  Latest latest = readLatest(run / kRoot);
  if (latest.entry) return {latest.entry, {}};
  auto all = listCheckpoints(run);
  if (all.empty()) return {std::nullopt, {}};
  return {all.back(), latest.problem};
}

// Frees `path` for a new directory: removed, or, while a reader pins it, renamed to a .partial name that a
// later prune removes.
void clearName(const fs::path& path) {
  if (removeUnlessPinned(path)) return;
  for (int k = 0;; ++k) {
    const fs::path aside = path.string() + fmt::format("{}-pinned-{}-{}", kPartial, ::getpid(), k);
    if (!fs::exists(aside)) {
      fs::rename(path, aside);
      return;
    }
  }
}

// Puts the staged directory in place of `target`. Where `target` is the current checkpoint (the same step
// saved again), the two are exchanged atomically (Linux renameat2), so that a crash leaves one of them; a
// filesystem without the exchange gets remove-then-rename (a crash between falls back to an older one).
void moveIntoPlace(const fs::path& stage, const fs::path& target, bool targetIsCurrent) {
  if (fs::exists(target)) {
    if (targetIsCurrent &&
        ::renameat2(AT_FDCWD, stage.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0)
      return; // `stage` now holds the replaced checkpoint: pruned as .partial debris
    clearName(target);
  }
  fs::rename(stage, target);
}

// Removes .partial debris, step directories newer than `current` and complete ones beyond the newest `keep`;
// a directory a reader pins (checkpoint_pin.hpp) stays until a later save.
void prune(const fs::path& root, uint64_t current, uint32_t keep) {
  std::vector<uint64_t> older;
  for (const auto& e : fs::directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    // Staging directories end in .partial; a torn `latest` is io's "latest.partial-<pid>-<n>".
    if (name.find(kPartial) != std::string::npos) {
      removeUnlessPinned(e.path());
    } else if (const auto step = parseCheckpointDirName(name); step && e.is_directory()) {
      if (*step > current)
        removeUnlessPinned(e.path());
      else
        older.push_back(*step);
    }
  }
  std::sort(older.rbegin(), older.rend());
  for (size_t i = keep; i < older.size(); ++i)
    removeUnlessPinned(root / checkpointDirName(older[i]));
}

} // namespace

std::string checkpointDirName(uint64_t step) {
  return fmt::format("step-{:09}", step);
}

std::optional<uint64_t> parseCheckpointDirName(const std::string& name) {
  if (name.size() < 6 || name.compare(0, 5, "step-") != 0) return std::nullopt;
  uint64_t step = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || step > (UINT64_MAX - 9) / 10) return std::nullopt;
    step = step * 10 + uint64_t(name[i] - '0');
  }
  return step;
}

std::vector<CheckpointEntry> listCheckpoints(const fs::path& run) {
  std::vector<CheckpointEntry> out;
  const fs::path root = run / kRoot;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (const auto step = parseCheckpointDirName(e.path().filename().string()); step && e.is_directory())
      out.push_back({*step, e.path()});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return out;
}

std::optional<CheckpointEntry> currentCheckpoint(const fs::path& run) {
  return findCurrent(run).first;
}

std::string latestProblem(const fs::path& run) {
  return readLatest(run / kRoot).problem;
}

fs::path resolveCheckpoint(const fs::path& path) {
  const fs::path p = withoutTrailingSlash(path);
  if (!fs::is_directory(p))
    throw CheckpointError(fmt::format("{}: no such checkpoint or run directory", p.string()));
  if (fs::is_directory(p / kRoot)) {
    if (const auto [current, problem] = findCurrent(p); current) {
      if (!problem.empty())
        std::fprintf(stderr, "helios: warning: %s; reading %s, the newest complete checkpoint\n",
                     problem.c_str(), current->dir.string().c_str());
      return current->dir;
    }
    throw CheckpointError(
        fmt::format("{}: no complete checkpoint in {} (the run stopped before its first save completed)",
                    p.string(), (p / kRoot).string()));
  }
  if (fs::exists(p / "model.safetensors")) return p;
  throw CheckpointError(fmt::format(
      "{}: not a checkpoint: it holds neither {}/ (a run directory) nor model.safetensors (a step directory)",
      p.string(), kRoot));
}

fs::path runOfCheckpoint(const fs::path& stepDir) {
  const fs::path p = withoutTrailingSlash(stepDir);
  if (!parseCheckpointDirName(p.filename().string()) || p.parent_path().filename() != kRoot) return {};
  const fs::path run = p.parent_path().parent_path();
  return run.empty() ? fs::path(".") : run;
}

fs::path stageCheckpoint(const fs::path& run, uint64_t step) {
  const fs::path root = run / kRoot;
  fs::create_directories(root);
  fs::path stage = root / (checkpointDirName(step) + std::string(kPartial));
  if (fs::exists(stage)) clearName(stage);
  fs::create_directory(stage);
  return stage;
}

fs::path commitCheckpoint(const fs::path& run, uint64_t step, uint32_t keep) {
  const fs::path root = run / kRoot, name = checkpointDirName(step);
  const fs::path stage = root / (name.string() + std::string(kPartial)), target = root / name;
  io::syncDirectory(stage); // its files were flushed as they were written
  savePause();
  const auto current = currentCheckpoint(run);
  moveIntoPlace(stage, target, current && current->step == step);
  io::syncDirectory(root);
  savePause();
  writeFileDurably(root / kLatest, name.string() + "\n"); // the commit point
  savePause();
  prune(root, step, std::max(keep, 1u));
  return target;
}

} // namespace helios::train
