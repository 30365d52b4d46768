#pragma once
// A run directory's checkpoints, each one a step directory that is complete or absent:
//   RUN/checkpoints/step-000000120/          model.safetensors, optimizer.safetensors, config.json
//   RUN/checkpoints/step-000000121.partial/  a save in progress (or interrupted): never read
//   RUN/checkpoints/latest                   "step-000000121": the current checkpoint
// A save writes every file into the .partial directory and flushes them and it to the disk, renames it to
// its final name, flushes checkpoints/, then replaces `latest` (temporary file, fsync, rename, fsync). Only
// then are older checkpoints beyond the newest `keep`, step directories newer than the current one (an
// abandoned continuation) and .partial debris removed, each unless a reader pins it (checkpoint_pin.hpp). The
// current checkpoint is the one `latest` names when that directory exists, else the newest complete step
// directory; resolveCheckpoint() then warns on stderr what was wrong with `latest` (missing, empty, garbage,
// or naming a directory that does not exist).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace helios::train {

std::string checkpointDirName(uint64_t step); // "step-000000121"
// The step of a complete step directory's name; nullopt for anything else ("step-12.partial", "latest").
std::optional<uint64_t> parseCheckpointDirName(const std::string& name);

struct CheckpointEntry {
  uint64_t step = 0;
  std::filesystem::path dir;
};
// The complete step directories of a run, oldest first.
std::vector<CheckpointEntry> listCheckpoints(const std::filesystem::path& run);
// The current checkpoint of a run (see above); nullopt when there is none.
std::optional<CheckpointEntry> currentCheckpoint(const std::filesystem::path& run);
// What is wrong with RUN/checkpoints/latest ("... is missing", "... is empty", "... holds 'x', not a step
// directory's name", "... names step-N, which does not exist"); empty when it names a step directory.
std::string latestProblem(const std::filesystem::path& run);

// The step directory that --resume PATH names: a run directory's current checkpoint, or PATH itself when
// it holds model.safetensors (a step directory). Throws CheckpointError saying what PATH holds instead.
std::filesystem::path resolveCheckpoint(const std::filesystem::path& path);
// The run directory a step directory belongs to (RUN for RUN/checkpoints/step-N), else empty.
std::filesystem::path runOfCheckpoint(const std::filesystem::path& stepDir);

// Saving: stageCheckpoint() returns an empty RUN/checkpoints/step-N.partial directory (an earlier one of
// that name is removed) for the caller to fill with durably written files; commitCheckpoint() makes it the
// current checkpoint and prunes (see above); it returns the final step directory.
std::filesystem::path stageCheckpoint(const std::filesystem::path& run, uint64_t step);
std::filesystem::path commitCheckpoint(const std::filesystem::path& run, uint64_t step, uint32_t keep);

} // namespace helios::train
