#pragma once
// The before/after table of a tuning run: every target timed with the record before tuning (its tuned shapes
// left out: the hand-tuned policy) and with the record written, alternately in one process, as the search
// times (timeAlternately; a row whose two records run the same pipelines is timed once and reads 1,
// timeRecords); the speed-ups, their geometric mean and the smallest.
#include <filesystem>
#include <iosfwd>
#include <nlohmann/json.hpp>

#include "gates.hpp"
#include "targets.hpp"

namespace helios::tune {

struct CompareOptions {
  TimingOptions timing;
  uint32_t rounds = 3;           // timings of each side, alternately
  std::ostream* table = nullptr; // one line per target as it is timed
};

// {"rows": [{kind, shape, stage, default_us, tuned_us, speedup, same_kernels}], "geomean", "min"}.
nlohmann::json compareRecords(vk::Context& ctx, const Targets& targets, const tuning::Tuning& before,
                              const tuning::Tuning& after, const CompareOptions& options);

// `record` without its per-shape choices (gemm.shapes and attention.shapes back to none).
tuning::Tuning withoutShapes(tuning::Tuning record);
// `record` with the per-shape choices of the tuning file `path` (the run's written file; throws when it does
// not read).
tuning::Tuning withShapesOf(tuning::Tuning record, const std::filesystem::path& path);

} // namespace helios::tune
