#pragma once
// Process-wide counters of the matmul coop policy's decisions: how many matmuls ran on cooperative matrices,
// by which path, and why the others fell back. Thread-safe; matmul() records every Auto/Coop decision.
#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "engine/ops/matmul_policy.hpp"

namespace helios::ops {

struct CoopStatsSnapshot {
  std::array<uint64_t, kCoopDecisionCount> byDecision{}; // indexed by CoopDecision
  std::map<std::string, uint64_t> missReasons;           // CoopPlan::missKey -> count
  uint64_t total() const;
  uint64_t coop() const;  // everything but Fallback
  double hitRate() const; // coop / total, 0 when nothing was recorded
  uint64_t count(CoopDecision d) const { return byDecision[static_cast<size_t>(d)]; }
};

class CoopStats {
public:
  void record(const CoopPlan& plan);
  void record(CoopDecision decision, const std::string& missKey = {});
  CoopStatsSnapshot snapshot() const;
  void reset();
};

CoopStats& coopStats();

// One line, e.g. "coop_matmul: 118/120 coop (98.3%) direct=100 padded=18 padded_batched=0
// transposed_a_direct=0 rewrite=0 fallback=2 [too small: 2]" (miss reasons by count, then name).
std::string coopStatsLine(const CoopStatsSnapshot& s);
std::string coopStatsLine(); // of coopStats()

} // namespace helios::ops
