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
  const size_t total = targets.gemms.size() + targets.attention.size();
  const auto start = Clock::now();
  const auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  ProgressBar bar(o.progress);
  report.summary = nlohmann::json::array();
  size_t index = 0;
  for (const tuning::GemmShape& shape : targets.gemms) {
    const double until = o.budgetSeconds * double(++index) / double(total);
    const std::string what = "gemm " + tuning::text(shape);
    GemmTuneOptions g;
    g.timing = o.timing;
    g.maxEvaluations = o.maxEvaluations;
    g.seed = o.seed;
    g.stop = [&] { return seconds() >= until; };
    g.progress = [&](uint32_t n, double best) { bar.draw(seconds() / o.budgetSeconds, what, n, best); };
    const GemmTuneResult r = tuneGemm(ctx, shape, base, g);
    if (r.bestUs > 0) tuning::putGemm(out, r.best, tuning::Source::File);
    bar.done(fmt::format("{}: {:.1f} -> {:.1f} us ({} evaluated, {} rejected, {} duplicates)", what,
                         r.defaultUs, r.bestUs, r.evaluated, r.rejected, r.duplicates));
    nlohmann::json j{{"duplicates", r.duplicates},   {"kind", "gemm"},
                     {"shape", tuning::text(shape)}, {"default_us", r.defaultUs},
                     {"tuned_us", r.bestUs},         {"evaluated", r.evaluated},
                     {"rejected", r.rejected},       {"rejections", r.rejections}};
    if (r.bestUs > 0) j["choice"] = tuning::toJson(out)["fields"]["gemm.shapes"].back();
    report.summary.push_back(j);
  }
  for (const AttentionTarget& t : targets.attention) {
    const double until = o.budgetSeconds * double(++index) / double(total);
    const std::string what =
        fmt::format("attn B{}H{}S{}D{}{}", t.batch, t.heads, t.seq, t.headDim, t.causal ? "c" : "d");
    AttentionTuneOptions a;
    a.timing = o.timing;
    a.maxEvaluations = o.maxEvaluations;
    a.seed = o.seed;
    a.stop = [&] { return seconds() >= until; };
    a.progress = [&](uint32_t n, double best) { bar.draw(seconds() / o.budgetSeconds, what, n, best); };
    const AttentionTuneResult r = tuneAttention(ctx, t, base, a);
    nlohmann::json j{{"kind", "attention"}, {"shape", what.substr(5)}, {"available", r.available}};
    if (!r.available) {
      bar.done(what + ": coop attention does not run here; skipped");
      report.summary.push_back(j);
      continue;
    }
    if (r.bestUs > 0) tuning::putAttention(out, r.best, tuning::Source::File);
    bar.done(fmt::format("{}: {:.1f} -> {:.1f} us ({} evaluated, {} rejected)", what, r.defaultUs, r.bestUs,
                         r.evaluated, r.rejected));
    j.update({{"default_us", r.defaultUs},
              {"tuned_us", r.bestUs},
              {"evaluated", r.evaluated},
              {"rejected", r.rejected},
              {"rejections", r.rejections}});
    report.summary.push_back(j);
  }
  out.key = base.key;
  tuning::writeTuningFile(report.file, out);
  ops::reloadDeviceTuning(dev);
  return report;
}

} // namespace helios::tune
