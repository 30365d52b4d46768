#pragma once
// helios-train's terminal output: a progress line per step (redrawn in place on a terminal, every
// --log-every steps otherwise), eval lines, and the end-of-run summary.
#include "engine/train/trainer.hpp"

#include <cstdint>
#include <deque>
#include <string>

namespace helios::train_cli {

class Progress {
public:
  Progress(const train::Trainer& trainer, uint64_t totalSteps, uint32_t logEvery);
  void onStep(const train::StepRecord& r);
  void onEval(uint64_t step, float val);
  void onCheckpoint(uint64_t step, const std::string& dir);
  void onNote(const std::string& line);
  void finish(); // ends an in-place line
  double windowTokPerSec() const;

private:
  std::string line(const train::StepRecord& r) const;
  void clear();
  const train::Trainer& trainer_;
  uint64_t total_;
  uint32_t logEvery_;
  bool tty_;
  bool open_ = false; // an in-place line is on screen
  std::deque<double> ms_;
  uint64_t tokensPerStep_;
};

std::string formatDuration(double seconds);
std::string formatBytes(uint64_t bytes);
std::string formatRate(double perSecond);

} // namespace helios::train_cli
