#pragma once
// Checkpoints. A checkpoint is a step directory (checkpoint_dir.hpp puts it in a run directory as one unit):
//   model.safetensors      the weights, F32 (loadable by PyTorch's `safetensors` without Helios);
//                          __metadata__: helios.model (architecture JSON), helios.step, format "pt"
//   optimizer.safetensors  AdamW moments "<name>.m" / "<name>.v"; __metadata__: helios.trainer (step, loss
//                          scale, AdamW step counter, data-loader state, tokenizer, training config),
//                          helios.step
//   config.json            the same configuration, for people (never read back)
//   tokenizer files        a file-backed tokenizer's files (tokenizer.model; encoder.json and
//                          vocab.bpe; tokenizer.json and its configuration files), named by the
//                          helios.tokenizer description in model.safetensors
// Every safetensors file carries helios.crc32c in __metadata__: a JSON object of each tensor's CRC-32C and
// one of the other metadata entries, and helios.seal over them and the tensor table. Each file is written
// durably (temporary name, fsync, rename). Loading refuses, with a message naming the file and the problem, a
// truncated file, a bad header, a checksum mismatch (altered bytes, or the data offsets of two tensors
// swapped), a file without checksums (the old layout), a NaN or infinity in any tensor, a dtype other than
// F32, missing or extra tensors, shapes that do not match the model, a different architecture, and
// model/optimizer files from different steps.
#include "engine/train/model.hpp"
#include "engine/train/safetensors.hpp"
#include "engine/train/stored_tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace helios::train {

// Opens a checkpoint file (SafetensorsReader: its metadata checksum and seal verified on opening, each
// tensor's checksum as it is read) and requires its checksums: a file whose helios.crc32c is missing is
// refused (its data cannot be trusted); one written before helios.seal existed loads with a warning. Every
// path that reads a checkpoint (resume, sample, export, the architecture and tokenizer lookups) opens it so.
SafetensorsReader openCheckpointFile(const std::filesystem::path& path);
// The same, read whole (readSafetensors).
SafeTensorsFile readCheckpointFile(const std::filesystem::path& path, bool headerOnly = false);
// The same check on a file already open (a directory Helios exported, met by --init-from).
void requireChecksums(const SafeTensorsFile& f, const std::filesystem::path& path);
void requireChecksums(const SafetensorsReader& f, const std::filesystem::path& path);

// Saves the model (and, when trainerState is not null, the optimizer moments and trainer state) into `dir`
// (created when missing; normally stageCheckpoint()'s directory). The caller has made all GPU work complete
// and checked that the state is finite (finite_check.hpp).
void saveCheckpoint(vk::Context& ctx, const std::filesystem::path& dir, Model& model, uint64_t step,
                    const nlohmann::json& trainerState,
                    const std::vector<text::TokenizerFile>& tokenizerFiles = {});

// The architecture JSON stored with a checkpoint (to build the model before loading it), the tokenizer
// (model.safetensors, so that sampling needs no optimizer file) and the trainer state
// (optimizer.safetensors).
nlohmann::json checkpointModelConfig(const std::filesystem::path& dir);
nlohmann::json checkpointTokenizer(const std::filesystem::path& dir);
nlohmann::json checkpointTrainerState(const std::filesystem::path& dir);
// The tokenizer itself, its files read from the step directory. Throws CheckpointError when they are missing
// or differ from the description.
Tokenizer loadCheckpointTokenizer(const std::filesystem::path& dir);

// Loads weights (and, with withOptimizer, the moments) from the step directory `dir` into `model`, checking
// checksums, finiteness, architecture and shapes. Returns the trainer state (null when !withOptimizer).
nlohmann::json loadCheckpoint(vk::Context& ctx, const std::filesystem::path& dir, Model& model,
                              bool withOptimizer);

} // namespace helios::train
