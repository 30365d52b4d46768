#pragma once
// The shares of a data-parallel job over its steps. Every training rank times each step (observe); after a
// few settling steps and a window of measured ones, the ranks exchange their median times (conclude, a
// collective at the same step everywhere) and every rank computes the same proposal from the same numbers
// (balance.hpp). Measured shares move to it when it is worth it; shares set evenly or by hand stay, and the
// proposal only names the ranks that cost more than they add.
#include "engine/dist/balance.hpp"
#include "engine/dist/communicator.hpp"
#include "engine/dist/shares.hpp"

#include <set>

namespace helios::dist {

class Balancer {
public:
  Balancer(ShareMode mode, BalanceOptions options, uint32_t batch, std::vector<uint32_t> rows);

  ShareMode mode() const { return mode_; }
  const std::vector<uint32_t>& rows() const { return rows_; } // per rank of the job (0: left out)
  // This rank's times of the step just taken: its own work, then the exchange.
  void observe(double busyMs, double waitMs);
  // The step just observed completed a window: every training rank calls conclude() now.
  bool due() const { return busy_.size() >= options_.windowSteps; }

  struct Outcome {
    std::vector<RankTiming> timing; // per rank of the job, with the rows each had (0: left out)
    Proposal proposal;
    bool changed = false;          // rows() now holds the proposal's split
    std::vector<size_t> newlySlow; // ranks found slow for the first time
  };
  // Collective over the ranks training now; `members` are their ranks in the job, in the communicator's
  // rank order.
  Outcome conclude(Communicator& training, std::span<const int> members);

private:
  ShareMode mode_;
  BalanceOptions options_;
  uint32_t batch_;
  std::vector<uint32_t> rows_;
  uint32_t settle_;                 // steps still to skip
  std::vector<double> busy_, wait_; // the window so far
  SplitHistory measured_;           // splits tried and their measured step times
  std::set<size_t> reported_;       // ranks already reported slow
};

} // namespace helios::dist
