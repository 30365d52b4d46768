#pragma once
#include <chrono>
#include <fmt/format.h>
#include <string>

namespace helios::train_cli {

// Where start-up time goes: laps from construction, printed as "2.31 s: data 0.20 s, device 0.51 s, ...".
class StartupClock {
public:
  void lap(const char* what) {
    const auto now = std::chrono::steady_clock::now();
    laps_ += fmt::format("{}{} {:.2f} s", laps_.empty() ? "" : ", ", what, seconds(last_, now));
    last_ = now;
  }
  std::string summary() const { return fmt::format("{:.2f} s: {}", seconds(start_, last_), laps_); }

private:
  using Clock = std::chrono::steady_clock;
  static double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  Clock::time_point start_ = Clock::now(), last_ = start_;
  std::string laps_;
};

} // namespace helios::train_cli
