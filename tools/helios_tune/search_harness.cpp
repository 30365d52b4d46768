#include "search_harness.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

namespace helios::tune {

namespace {

constexpr double kRejected = std::numeric_limits<double>::infinity();
constexpr int kRuns = 3; // runs whose outputs must agree bit for bit

// One search's gates and cost over the candidates, and what they rejected.
class Gates {
public:
  Gates(vk::Context& ctx, const GatedOutputs& outputs, const TimingOptions& timing, HarnessResult& result)
      : ctx_(ctx), outputs_(outputs), timing_(timing), result_(result) {}

  double cost(const Trial& t) {
    if (const std::optional<double> early = before(t)) return *early;
    std::vector<std::vector<float>> first;
    double error = 0;
    for (int run = 0; run < kRuns; ++run) {
      outputs_.poison();
      WatchingExecutor exec(ctx_);
      try {
        t.run(exec);
        exec.flush();
      } catch (const std::exception& e) {
        return reject(t, "pipeline", e.what());
      }
      if (run == 0)
        if (const std::string why = spillGate(ctx_, exec); !why.empty()) return reject(t, "spills", why);
      std::vector<std::vector<float>> got = outputs_.read();
      if (run == 0) {
        error = outputs_.error(got);
        if (!(error <= outputs_.maxError)) return reject(t, "max error", std::to_string(error));
        first = std::move(got);
      } else if (!sameBits(first, got)) {
        return reject(t, "determinism", "run " + std::to_string(run + 1) + " differs from run 1");
      }
    }
    // Timing records many calls before any completes: a candidate whose per-call scratch (K-slice partial
    // tiles) does not fit that many times is rejected, not the run.
    try {
      return timeUs(ctx_, timing_, t.run) * (1.0 + outputs_.errorWeight * error / outputs_.maxError);
    } catch (const std::exception& e) {
      return reject(t, "timing", e.what());
    }
  }

private:
  // The tuner's own gates, and a kernel already timed: the cost that ends the candidate, if any.
  std::optional<double> before(const Trial& t) {
    try {
      const Checked k = t.check();
      if (!k.gate.empty()) return reject(t, k.gate, k.why);
      // A choice the plan does not take (a tiling that does not divide, K slices on a batch, ...) runs a
      // kernel already timed: not timed again, and never recorded as a choice.
      if (!k.kernel.empty() && !kernels_.insert(k.kernel).second) {
        ++result_.duplicates;
        return kRejected;
      }
    } catch (const std::exception& e) {
      return reject(t, "parameters", e.what());
    }
    return std::nullopt;
  }

  double reject(const Trial& t, const std::string& gate, const std::string& why) {
    ++result_.rejected;
    if (result_.rejections.size() < 8) result_.rejections.push_back(t.name + ": " + gate + ": " + why);
    return kRejected;
  }

  static bool sameBits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)))
        return false;
    return true;
  }

  vk::Context& ctx_;
  const GatedOutputs& outputs_;
  const TimingOptions& timing_;
  HarnessResult& result_;
  std::set<std::string> kernels_; // the planned kernels timed so far
};

} // namespace

HarnessResult searchCandidates(vk::Context& ctx, const tuning::SearchSpace& space, const TrialMaker& trial,
                               const GatedOutputs& outputs, const HarnessOptions& o) {
  HarnessResult r;
  Gates gates(ctx, outputs, o.timing, r);
  const auto cost = [&](const tuning::Candidate& c) {
    return trial(c, [&](const Trial& t) { return gates.cost(t); });
  };
  tuning::SearchOptions so;
  so.seed = o.seed;
  so.maxEvaluations = o.maxEvaluations;
  so.stop = o.stop;
  so.progress = [&](uint32_t n, const tuning::Scored& best) {
    if (o.progress) o.progress(n, best.cost);
  };
  const tuning::Candidate start(space.dims.size(), 0);
  const std::vector<tuning::Scored> all = tuning::evolve(space, start, cost, so);
  r.evaluated = static_cast<uint32_t>(all.size());
  for (const tuning::Scored& s : all)
    if (s.candidate == start) r.defaultUs = std::isfinite(s.cost) ? s.cost : 0;
  if (all.empty() || !std::isfinite(all.front().cost)) return r;
  const tuning::Candidate& winner = all.front().candidate;
  const Pick pick = pickWinner(r.defaultUs, all.front().cost, o.minGain, [&](bool timeWinner) {
    return trial(timeWinner ? winner : start, [&](const Trial& t) { return timeUs(ctx, o.timing, t.run); });
  });
  r.defaultUs = pick.defaultUs;
  r.chosen = pick.winner ? winner : start;
  r.bestUs = pick.chosenUs;
  return r;
}

} // namespace helios::tune
