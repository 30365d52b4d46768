#include "engine/ops/coop_stats.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <mutex>
#include <vector>

namespace helios::ops {

namespace {
std::mutex& statsMutex() {
  static std::mutex m;
  return m;
}
CoopStatsSnapshot& statsData() {
  static CoopStatsSnapshot s;
  return s;
}
} // namespace

uint64_t CoopStatsSnapshot::total() const {
  uint64_t t = 0;
  for (uint64_t n : byDecision)
    t += n;
  return t;
}

uint64_t CoopStatsSnapshot::coop() const {
  return total() - count(CoopDecision::Fallback);
}

double CoopStatsSnapshot::hitRate() const {
  const uint64_t t = total();
  return t ? static_cast<double>(coop()) / static_cast<double>(t) : 0.0;
}

void CoopStats::record(CoopDecision decision, const std::string& missKey) {
  std::lock_guard lock(statsMutex());
  statsData().byDecision[static_cast<size_t>(decision)]++;
  if (decision == CoopDecision::Fallback) statsData().missReasons[missKey.empty() ? "unknown" : missKey]++;
}

void CoopStats::record(const CoopPlan& plan) {
  record(plan.decision, plan.missKey);
}

CoopStatsSnapshot CoopStats::snapshot() const {
  std::lock_guard lock(statsMutex());
  return statsData();
}

void CoopStats::reset() {
  std::lock_guard lock(statsMutex());
  statsData() = {};
}

CoopStats& coopStats() {
  static CoopStats stats;
  return stats;
}

std::string coopStatsLine(const CoopStatsSnapshot& s) {
  std::string line =
      fmt::format("coop_matmul: {}/{} coop ({:.1f}%)", s.coop(), s.total(), 100.0 * s.hitRate());
  for (uint32_t d = 0; d < kCoopDecisionCount; ++d)
    line += fmt::format(" {}={}", coopDecisionName(static_cast<CoopDecision>(d)), s.byDecision[d]);
  if (!s.missReasons.empty()) {
    std::vector<std::pair<std::string, uint64_t>> reasons(s.missReasons.begin(), s.missReasons.end());
    std::stable_sort(reasons.begin(), reasons.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    line += " [";
    for (size_t i = 0; i < reasons.size(); ++i)
      line += fmt::format("{}{}: {}", i ? ", " : "", reasons[i].first, reasons[i].second);
    line += "]";
  }
  return line;
}

std::string coopStatsLine() {
  return coopStatsLine(coopStats().snapshot());
}

} // namespace helios::ops
