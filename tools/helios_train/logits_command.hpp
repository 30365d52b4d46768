#pragma once
// helios-train logits: the model's logits for given token ids, as a .npy file. For checks against another
// implementation (tests/train/hf_models.py, bench/device/hf-models-check.py) and for users who want them.
//   helios-train logits --init-from DIR --tokens ids.npy --out logits.npy [--precision f32|mixed]
// ids.npy: int32 [T] or [B, T]; logits.npy: float32 [T, vocab] or [B, T, vocab].
#include "model_source.hpp"

#include <CLI/CLI.hpp>
#include <string>

namespace helios::train_cli {

struct LogitsFlags {
  ModelSourceFlags source;
  std::string tokens, out, precision, device;
};

CLI::App* addLogitsCommand(CLI::App& app, LogitsFlags& f);
int runLogits(const LogitsFlags& f);

} // namespace helios::train_cli
