#include "tune.hpp"

#include <chrono>
#include <fmt/format.h>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include "engine/ops/device_tuning.hpp"
#include "engine/tuning/defaults.hpp"
#include "engine/tuning/file.hpp"
#include "engine/tuning/values.hpp"
#include "engine/vk/pipeline.hpp"

namespace helios::tune {

namespace {

using Clock = std::chrono::steady_clock;

// One line, redrawn: [#####.....] what  N evaluated  best X us.
class ProgressBar {
public:
  explicit ProgressBar(std::ostream* out) : out_(out), tty_(isatty(STDERR_FILENO) != 0) {}
  void draw(double fraction, const std::string& what, uint32_t evaluated, double bestUs) {
    if (!out_ || !tty_) return;
    const int filled = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * 30);
    *out_ << fmt::format("\r[{:<30}] {:<28} {:>3} evaluated  best {:>10.1f} us", std::string(filled, '#'),
                         what, evaluated, std::isfinite(bestUs) ? bestUs : 0.0)
          << std::flush;
  }
  void done(const std::string& line) {
    if (out_) *out_ << (tty_ ? "\r" : "") << fmt::format("{:<90}", line) << "\n";
  }

private:
  std::ostream* out_;
  bool tty_;
};

} // namespace

namespace {

// One search of a tuning run: a GEMM shape, or an attention shape's forward or backward, with its share of
// the step's FLOPs.
struct Job {
  const tuning::GemmShape* gemm = nullptr;
  const AttentionTarget* attention = nullptr;
  AttentionStage stage = AttentionStage::Forward;
  double flops = 0;
};

std::vector<Job> jobsOf(const Targets& targets) {
  std::vector<Job> jobs;
  const auto count = [](const std::vector<uint32_t>& counts, size_t i) {
    return i < counts.size() ? double(counts[i]) : 1.0;
  };
  for (size_t i = 0; i < targets.gemms.size(); ++i)
    jobs.push_back(
        {&targets.gemms[i], nullptr, {}, gemmFlops(targets.gemms[i]) * count(targets.gemmCounts, i)});
  for (size_t i = 0; i < targets.attention.size(); ++i)
    for (const AttentionStage stage : {AttentionStage::Forward, AttentionStage::Backward})
      jobs.push_back({nullptr, &targets.attention[i], stage,
                      attentionFlops(targets.attention[i], stage == AttentionStage::Backward) *
                          count(targets.attentionCounts, i)});
  return jobs;
}

} // namespace

std::vector<double> budgetShares(const std::vector<double>& flops) {
  double total = 0;
  for (const double f : flops)
    total += f;
  std::vector<double> shares;
  for (const double f : flops)
    shares.push_back(total > 0 ? 0.8 * f / total + 0.2 / double(flops.size()) : 1.0 / double(flops.size()));
  return shares;
}

TuneReport tuneTargets(vk::Context& ctx, const Targets& targets, const TuneOptions& o) {
  const vk::Device& dev = ctx.device();
  const tuning::Tuning base = ops::deviceTuning(dev);
  TuneReport report;
  report.file = o.out.empty() ? tuning::tuningFilePath(vk::cacheDirectory(), base.key) : o.out;
  // The file keeps what it had for this device; the new winners replace their shapes' entries.
  tuning::Tuning out = tuning::defaultTuning(ops::deviceFacts(dev));
  // (The device's own file has warned already when the record was resolved, if it was bad.)
  std::ostringstream warned;
  tuning::readTuningFile(out, report.file, tuning::Source::File, warned, /*warnMissing=*/false);
  if (report.file != tuning::tuningFilePath(vk::cacheDirectory(), base.key)) std::cerr << warned.str();
  const std::vector<Job> jobs = jobsOf(targets);
  std::vector<double> flops;
  for (const Job& j : jobs)
    flops.push_back(j.flops);
  const std::vector<double> shares = budgetShares(flops);
  const auto start = Clock::now();
  const auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  ProgressBar bar(o.progress);
  report.summary = nlohmann::json::array();
  // Each search ends by its cumulative share of the budget (time one leaves goes to the next), all of them by
  // kSearchShare of it: the rest is for the candidate under way at a deadline, the re-timings and the file.
  constexpr double kSearchShare = 0.93;
  double until = 0;
  for (size_t index = 0; index < jobs.size(); ++index) {
    const Job& job = jobs[index];
    until += kSearchShare * o.budgetSeconds * shares[index];
    const auto stop = [&, until] { return seconds() >= until; };
    const auto progress = [&](const std::string& what) {
      return [&, what](uint32_t n, double best) { bar.draw(seconds() / o.budgetSeconds, what, n, best); };
    };
    // The search settings every family shares.
    const auto settings = [&](HarnessOptions& s, const std::string& what) {
      s.timing = o.timing;
      s.maxEvaluations = o.maxEvaluations;
      s.seed = o.seed;
      s.stop = stop;
      s.progress = progress(what);
    };
    const double share = shares[index];
    if (job.gemm) {
      const tuning::GemmShape& shape = *job.gemm;
      const std::string what = "gemm " + tuning::text(shape);
      GemmTuneOptions g;
      settings(g, what);
      const GemmTuneResult r = tuneGemm(ctx, shape, base, g);
      if (r.bestUs > 0) tuning::putGemm(out, r.best, tuning::Source::File);
      bar.done(fmt::format("{}: {:.1f} -> {:.1f} us ({} evaluated, {} rejected, {} duplicates) {}", what,
                           r.defaultUs, r.bestUs, r.evaluated, r.rejected, r.duplicates,
                           r.bestUs > 0 ? describe(r.best) : ""));
      nlohmann::json j{{"duplicates", r.duplicates},   {"kind", "gemm"},
                       {"shape", tuning::text(shape)}, {"default_us", r.defaultUs},
                       {"tuned_us", r.bestUs},         {"evaluated", r.evaluated},
                       {"rejected", r.rejected},       {"rejections", r.rejections},
                       {"budget_share", share}};
      if (r.bestUs > 0) j["choice"] = tuning::toJson(out)["fields"]["gemm.shapes"].back();
      report.summary.push_back(j);
      continue;
    }
    const AttentionTarget& t = *job.attention;
    const std::string shape =
        fmt::format("B{}H{}S{}D{}{}", t.batch, t.heads, t.seq, t.headDim, t.causal ? "c" : "d");
    const std::string what = fmt::format("attn {} {}", shape, stageName(job.stage));
    AttentionTuneOptions a;
    settings(a, what);
    const AttentionTuneResult r = tuneAttention(ctx, t, job.stage, base, a);
    nlohmann::json j{{"kind", "attention"},
                     {"shape", shape},
                     {"stage", stageName(job.stage)},
                     {"available", r.available},
                     {"budget_share", share}};
    if (!r.available) {
      bar.done(what + ": coop attention does not run here; skipped");
      report.summary.push_back(j);
      continue;
    }
    nlohmann::json chosen = nlohmann::json::array();
    if (r.bestUs > 0)
      for (const tuning::AttentionChoice& c : r.best) {
        tuning::putAttention(out, c, tuning::Source::File);
        chosen.push_back(tuning::toJson(out)["fields"]["attention.shapes"].back());
      }
    bar.done(fmt::format("{}: {:.1f} -> {:.1f} us ({} evaluated, {} rejected)", what, r.defaultUs, r.bestUs,
                         r.evaluated, r.rejected));
    j.update({{"default_us", r.defaultUs},
              {"tuned_us", r.bestUs},
              {"evaluated", r.evaluated},
              {"rejected", r.rejected},
              {"rejections", r.rejections},
              {"choice", chosen}});
    report.summary.push_back(j);
  }
  out.key = base.key;
  tuning::writeTuningFile(report.file, out);
  ops::reloadDeviceTuning(dev);
  report.seconds = seconds();
  return report;
}

} // namespace helios::tune
