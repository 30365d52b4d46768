#pragma once
// The share policy: from each rank's measured step, the split of the global batch that should make the step
// fastest, and which ranks cost more in exchange than they add. Pure functions over plain data, tried in
// order by propose(); the Balancer (balancer.hpp) measures and decides when to apply a proposal.
//
// Model: rank r trains rows_r sequences per micro-batch in busy_r ms (its own work: the forward, backward and
// optimizer as far as they are not hidden), then waits wait_r ms for the exchange (for slower ranks and for
// the sum itself). Its speed is rows_r / busy_r; the slowest rank's wait is the exchange alone. A split is
// predicted to take max_r rows'_r / speed_r plus the exchange, which a single remaining rank does not need.
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace helios::dist {

struct RankTiming {
  uint32_t rows = 0; // sequences per micro-batch (0: the rank is left out)
  double busyMs = 0; // from the step's start until its gradients were ready
  double waitMs = 0; // from then until the exchange was done
};

struct BalanceOptions {
  // A new split must promise a step at least this fraction faster than the one measured (hysteresis: noise
  // and whole-row steps do not make shares flap), and so must leaving a rank out.
  double hysteresis = 0.05;
  bool exclude = true;      // ranks that cost more than they add leave (else they are only reported)
  uint32_t settleSteps = 2; // steps not measured after the split changes (they record the step anew)
  uint32_t windowSteps = 4; // steps measured per decision (their median)
};

// The exchange's own time: the smallest wait among the ranks taking part (the slowest one waits for nobody).
double exchangeMs(std::span<const RankTiming> t);
// The step as measured: the longest busy + wait.
double measuredStepMs(std::span<const RankTiming> t);
// Rows per ms of each rank (0 for ranks left out).
std::vector<double> speeds(std::span<const RankTiming> t);

// The split of `batch` rows over the ranks with `member` set that minimises max rows_r / speed_r, each member
// at least one row (greedy: each row goes where it finishes first); 0 rows for the others.
std::vector<uint32_t> balancedRows(uint32_t batch, std::span<const double> speed,
                                   const std::vector<bool>& member);
// max rows_r / speed_r, plus `exchange` when more than one rank trains.
double predictStepMs(std::span<const uint32_t> rows, std::span<const double> speed, double exchange);

struct Proposal {
  std::vector<uint32_t> rows; // the split proposed (0: left out)
  double predictedMs = 0;     // its step time, by the model
  double measuredMs = 0;      // the current split's step time, measured
  double keptMs = 0;          // the balanced split with every current rank kept
  double withoutSlowMs = 0;   // the balanced split without the slow ranks (when there are any)
  std::vector<size_t> slow;   // ranks that cost more than they add (left out of `rows` when options.exclude)
};

// The balanced split of the current ranks; then, while it promises a step `hysteresis` faster, the same with
// the slowest remaining rank (never rank 0, which writes the run) left out. Ranks found slow are dropped from
// `rows` only with options.exclude.
Proposal propose(uint32_t batch, std::span<const RankTiming> timing, const BalanceOptions& options);

// Splits measured so far and their step times.
using SplitHistory = std::map<std::vector<uint32_t>, double>;
// Whether to move from `current` to the proposal: it differs, promises a step `hysteresis` faster than the
// one measured, and is not a split already measured that was not that much faster (no flapping between two
// neighbouring splits that the model ranks the other way round each time).
bool worthApplying(const Proposal& p, std::span<const uint32_t> current, const SplitHistory& measured,
                   double hysteresis);

} // namespace helios::dist
