#include "engine/dist/balancer.hpp"

#include <algorithm>

namespace helios::dist {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

} // namespace

Balancer::Balancer(ShareMode mode, BalanceOptions options, uint32_t batch, std::vector<uint32_t> rows)
    : mode_(mode), options_(options), batch_(batch), rows_(std::move(rows)), settle_(options.settleSteps) {
  options_.exclude = options.exclude && mode == ShareMode::Measured;
}

void Balancer::observe(double busyMs, double waitMs) {
  if (settle_ > 0) {
    --settle_;
    return;
  }
  busy_.push_back(busyMs);
  wait_.push_back(waitMs);
}

Balancer::Outcome Balancer::conclude(Communicator& training, std::span<const int> members) {
  const double mine[2] = {median(busy_), median(wait_)};
  busy_.clear();
  wait_.clear();
  const std::vector<double> all = allgatherValues(training, mine, "comparing the ranks' step times");
  Outcome o;
  o.timing.resize(rows_.size());
  for (size_t i = 0; i < members.size(); ++i) {
    const auto r = size_t(members[i]);
    o.timing[r] = {rows_[r], all[2 * i], all[2 * i + 1]};
  }
  o.proposal = propose(batch_, o.timing, options_);
  measured_[rows_] = o.proposal.measuredMs;
  for (size_t r : o.proposal.slow)
    if (reported_.insert(r).second) o.newlySlow.push_back(r);
  if (mode_ == ShareMode::Measured && worthApplying(o.proposal, rows_, measured_, options_.hysteresis)) {
    rows_ = o.proposal.rows;
    o.changed = true;
    settle_ = options_.settleSteps;
  }
  return o;
}

} // namespace helios::dist
