#include "compare.hpp"

#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "attention_tuner.hpp"
#include "engine/ops/attention.hpp"
#include "engine/tuning/file.hpp"
#include "engine/tuning/values.hpp"
#include "gemm_tuner.hpp"

namespace helios::tune {

tuning::Tuning withoutShapes(tuning::Tuning record) {
  record.gemm.shapes.set({}, tuning::Source::Default);
  record.attention.shapes.set({}, tuning::Source::Default);
  return record;
}

tuning::Tuning withShapesOf(tuning::Tuning record, const std::filesystem::path& path) {
  tuning::Tuning file = record;
  std::ostringstream warned;
  if (!tuning::readTuningFile(file, path, tuning::Source::File, warned, /*warnMissing=*/true))
    throw std::runtime_error("--compare: " + warned.str());
  record.gemm.shapes = file.gemm.shapes;
  record.attention.shapes = file.attention.shapes;
  return record;
}

nlohmann::json compareRecords(vk::Context& ctx, const Targets& targets, const tuning::Tuning& before,
                              const tuning::Tuning& after, const CompareOptions& o) {
  nlohmann::json rows = nlohmann::json::array();
  double logSum = 0, least = std::numeric_limits<double>::infinity();
  if (o.table)
    *o.table << fmt::format("{:<34} {:>12} {:>12} {:>8}\n", "problem", "default us", "tuned us", "x");
  const auto add = [&](nlohmann::json row, const std::string& name, PairUs t) {
    const double speedup = t.first / t.second;
    logSum += std::log(speedup);
    least = std::min(least, speedup);
    row.update(
        {{"default_us", t.first}, {"tuned_us", t.second}, {"speedup", speedup}, {"same_kernels", t.same}});
    rows.push_back(row);
    if (o.table)
      *o.table << fmt::format("{:<34} {:>12.1f} {:>12.1f} {:>8.3f}{}\n", name, t.first, t.second, speedup,
                              t.same ? "  same kernels" : "");
  };
  for (const tuning::GemmShape& s : targets.gemms)
    add({{"kind", "gemm"}, {"shape", tuning::text(s)}}, "gemm " + tuning::text(s),
        timeGemmRecords(ctx, s, before, after, o.timing, o.rounds));
  for (const AttentionTarget& t : targets.attention)
    for (const AttentionStage stage : {AttentionStage::Forward, AttentionStage::Backward}) {
      if (!ops::attentionCoopAvailable(ctx.device(), t.headDim)) continue;
      const std::string shape =
          fmt::format("B{}H{}S{}D{}{}", t.batch, t.heads, t.seq, t.headDim, t.causal ? "c" : "d");
      add({{"kind", "attention"}, {"shape", shape}, {"stage", stageName(stage)}},
          fmt::format("attn {} {}", shape, stageName(stage)),
          timeAttentionRecords(ctx, t, stage, before, after, o.timing, o.rounds));
    }
  const double geomean = rows.empty() ? 0.0 : std::exp(logSum / double(rows.size()));
  if (o.table)
    *o.table << fmt::format("geomean {:.3f}, min {:.3f} over {} problems\n", geomean, least, rows.size());
  return {{"rows", rows}, {"geomean", geomean}, {"min", rows.empty() ? 0.0 : least}};
}

} // namespace helios::tune
