#include "progress.hpp"

#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <numeric>
#include <unistd.h>

namespace helios::train_cli {

std::string formatDuration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto t = static_cast<uint64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

std::string formatBytes(uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", double(b) / double(1ull << 30));
  return fmt::format("{:.1f} MiB", double(b) / double(1ull << 20));
}

std::string formatRate(double r) {
  if (r >= 1e6) return fmt::format("{:.2f}M", r / 1e6);
  if (r >= 1e3) return fmt::format("{:.1f}k", r / 1e3);
  return fmt::format("{:.0f}", r);
}

Progress::Progress(const train::Trainer& trainer, uint64_t totalSteps, uint32_t logEvery)
    : trainer_(trainer), total_(totalSteps), logEvery_(std::max(logEvery, 1u)), tty_(isatty(2) != 0),
      tokensPerStep_(trainer.config().tokensPerStep()) {}

double Progress::windowTokPerSec() const {
  const double ms = std::accumulate(ms_.begin(), ms_.end(), 0.0);
  return ms > 0 ? double(tokensPerStep_) * double(ms_.size()) / (ms * 1e-3) : 0;
}

std::string Progress::line(const train::StepRecord& r) const {
  const double avgMs = ms_.empty() ? 0 : std::accumulate(ms_.begin(), ms_.end(), 0.0) / double(ms_.size());
  const auto& ph = trainer_.phases();
  std::string split;
  if (ph.measuredAt > 0 && ph.split())
    split = fmt::format(" (fwd {:.1f} bwd {:.1f} opt {:.1f})", ph.forwardMs, ph.backwardMs, ph.optimizerMs);
  else if (ph.measuredAt > 0)
    split = fmt::format(" (fwd+bwd {:.1f} opt {:.1f})", ph.forwardBackwardMs, ph.optimizerMs);
  std::string s =
      fmt::format("step {:>{}}/{} | loss {:.4f} | lr {:.2e} | norm {:.2f} | {} tok/s | {:.1f} ms/step{}",
                  r.step, std::to_string(total_).size(), total_, r.loss, r.lr, r.gradNorm,
                  formatRate(windowTokPerSec()), avgMs, split);
  if (trainer_.config().dynamicLossScale()) s += fmt::format(" | scale {:g}", r.lossScale);
  if (r.skippedTotal) s += fmt::format(" | skipped {}", r.skippedTotal);
  s += fmt::format(" | ETA {}", formatDuration(double(total_ - std::min(total_, r.step)) * avgMs * 1e-3));
  return s;
}

void Progress::clear() {
  if (open_) {
    std::fputs("\r\033[K", stderr);
    open_ = false;
  }
}

void Progress::onStep(const train::StepRecord& r) {
  ms_.push_back(r.ms);
  if (ms_.size() > 20) ms_.pop_front();
  if (tty_) {
    std::fputs(("\r\033[K" + line(r)).c_str(), stderr);
    open_ = true;
  } else if (r.step % logEvery_ == 0 || r.step == total_ || r.step == 1) {
    std::fputs((line(r) + "\n").c_str(), stderr);
  }
  std::fflush(stderr);
}

void Progress::onEval(uint64_t step, float val) {
  clear();
  std::fputs(fmt::format("step {}: val loss {:.4f}\n", step, val).c_str(), stderr);
}

void Progress::onCheckpoint(uint64_t step, const std::string& dir) {
  clear();
  std::fputs(fmt::format("step {}: checkpoint saved to {}\n", step, dir).c_str(), stderr);
}

void Progress::onNote(const std::string& line) {
  clear();
  std::fputs((line + "\n").c_str(), stderr);
}

void Progress::finish() {
  if (open_) std::fputs("\n", stderr);
  open_ = false;
}

} // namespace helios::train_cli
