#include "engine/train/checkpoint_dir.hpp"

#include "engine/io/atomic_file.hpp"
#include "engine/train/checkpoint.hpp"
#include "engine/train/durable_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>

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

// The step directory `latest` names, when it exists.
std::optional<CheckpointEntry> latestEntry(const fs::path& root) {
  std::ifstream in(root / kLatest);
  std::string name;
  if (!in || !std::getline(in, name)) return std::nullopt;
  const auto step = parseCheckpointDirName(name);
  if (!step || !fs::is_directory(root / name)) return std::nullopt;
  return CheckpointEntry{*step, root / name};
}

// Puts the staged directory in place of `target`. Where `target` is the current checkpoint (the same step
// saved again), the two are exchanged atomically (Linux renameat2), so that a crash leaves one of them; a
// filesystem without the exchange gets remove-then-rename (a crash between falls back to an older one).
void moveIntoPlace(const fs::path& stage, const fs::path& target, bool targetIsCurrent) {
  if (fs::exists(target)) {
    if (targetIsCurrent &&
        ::renameat2(AT_FDCWD, stage.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0)
      return; // `stage` now holds the replaced checkpoint: pruned as .partial debris
    fs::remove_all(target);
  }
  fs::rename(stage, target);
}

// Removes .partial debris, step directories newer than `current` and complete ones beyond the newest `keep`.
void prune(const fs::path& root, uint64_t current, uint32_t keep) {
  std::vector<uint64_t> older;
  for (const auto& e : fs::directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    // Staging directories end in .partial; a torn `latest` is io's "latest.partial-<pid>-<n>".
    if (name.find(kPartial) != std::string::npos) {
      fs::remove_all(e.path());
    } else if (const auto step = parseCheckpointDirName(name); step && e.is_directory()) {
      if (*step > current)
        fs::remove_all(e.path());
      else
        older.push_back(*step);
    }
  }
  std::sort(older.rbegin(), older.rend());
  for (size_t i = keep; i < older.size(); ++i)
    fs::remove_all(root / checkpointDirName(older[i]));
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
  if (auto latest = latestEntry(run / kRoot)) return latest;
  auto all = listCheckpoints(run);
  if (all.empty()) return std::nullopt;
  return all.back();
}

fs::path resolveCheckpoint(const fs::path& path) {
  const fs::path p = withoutTrailingSlash(path);
  if (!fs::is_directory(p))
    throw CheckpointError(fmt::format("{}: no such checkpoint or run directory", p.string()));
  if (fs::is_directory(p / kRoot)) {
    if (auto current = currentCheckpoint(p)) return current->dir;
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
  fs::remove_all(stage);
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
