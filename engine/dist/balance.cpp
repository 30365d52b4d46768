#include "engine/dist/balance.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace helios::dist {

namespace {

constexpr double kMinBusyMs = 1e-3; // a rank that reports no busy time still gets a finite speed

size_t members(const std::vector<bool>& member) {
  return size_t(std::count(member.begin(), member.end(), true));
}

} // namespace

double exchangeMs(std::span<const RankTiming> t) {
  double least = std::numeric_limits<double>::infinity();
  size_t active = 0;
  for (const auto& r : t)
    if (r.rows > 0) {
      least = std::min(least, r.waitMs);
      ++active;
    }
  return active > 1 ? least : 0.0;
}

double measuredStepMs(std::span<const RankTiming> t) {
  double most = 0;
  for (const auto& r : t)
    if (r.rows > 0) most = std::max(most, r.busyMs + r.waitMs);
  return most;
}

std::vector<double> speeds(std::span<const RankTiming> t) {
  std::vector<double> s(t.size(), 0.0);
  for (size_t r = 0; r < t.size(); ++r)
    if (t[r].rows > 0) s[r] = double(t[r].rows) / std::max(t[r].busyMs, kMinBusyMs);
  return s;
}

std::vector<uint32_t> balancedRows(uint32_t batch, std::span<const double> speed,
                                   const std::vector<bool>& member) {
  std::vector<uint32_t> rows(speed.size(), 0);
  uint32_t given = 0;
  for (size_t r = 0; r < speed.size(); ++r)
    if (member[r]) rows[r] = 1, ++given;
  for (; given < batch; ++given) { // the next row goes to the rank that would finish it first
    size_t best = speed.size();
    double bestMs = std::numeric_limits<double>::infinity();
    for (size_t r = 0; r < speed.size(); ++r) {
      if (!member[r]) continue;
      const double ms = double(rows[r] + 1) / std::max(speed[r], 1e-12);
      if (ms < bestMs) best = r, bestMs = ms;
    }
    if (best == speed.size()) break; // no members
    ++rows[best];
  }
  return rows;
}

double predictStepMs(std::span<const uint32_t> rows, std::span<const double> speed, double exchange) {
  double most = 0;
  size_t active = 0;
  for (size_t r = 0; r < rows.size(); ++r)
    if (rows[r] > 0) {
      most = std::max(most, double(rows[r]) / std::max(speed[r], 1e-12));
      ++active;
    }
  return most + (active > 1 ? exchange : 0.0);
}

Proposal propose(uint32_t batch, std::span<const RankTiming> timing, const BalanceOptions& options) {
  Proposal p;
  p.measuredMs = measuredStepMs(timing);
  const std::vector<double> speed = speeds(timing);
  const double exchange = exchangeMs(timing);
  std::vector<bool> member(timing.size());
  for (size_t r = 0; r < timing.size(); ++r)
    member[r] = timing[r].rows > 0;
  p.rows = balancedRows(batch, speed, member);
  p.keptMs = p.predictedMs = predictStepMs(p.rows, speed, exchange);
  // Candidates to leave out: the slower ranks first, never rank 0 (it writes the run).
  std::vector<size_t> order;
  for (size_t r = 1; r < timing.size(); ++r)
    if (member[r]) order.push_back(r);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return speed[a] < speed[b]; });
  std::vector<bool> m = member;
  size_t bestDropped = 0;
  std::vector<uint32_t> bestRows = p.rows;
  double bestMs = p.keptMs;
  for (size_t k = 0; k < order.size() && members(m) > 1; ++k) {
    m[order[k]] = false;
    std::vector<uint32_t> rows = balancedRows(batch, speed, m);
    const double ms = predictStepMs(rows, speed, exchange);
    if (ms < bestMs) bestRows = std::move(rows), bestMs = ms, bestDropped = k + 1;
  }
  if (bestDropped == 0 || bestMs >= p.keptMs * (1.0 - options.hysteresis)) return p;
  p.slow.assign(order.begin(), order.begin() + std::ptrdiff_t(bestDropped));
  p.withoutSlowMs = bestMs;
  if (options.exclude) p.rows = std::move(bestRows), p.predictedMs = bestMs;
  return p;
}

bool worthApplying(const Proposal& p, std::span<const uint32_t> current, const SplitHistory& measured,
                   double hysteresis) {
  if (std::equal(p.rows.begin(), p.rows.end(), current.begin(), current.end())) return false;
  const double bar = p.measuredMs * (1.0 - hysteresis);
  if (p.predictedMs >= bar) return false;
  const auto seen = measured.find(p.rows);
  return seen == measured.end() || seen->second < bar;
}

} // namespace helios::dist
