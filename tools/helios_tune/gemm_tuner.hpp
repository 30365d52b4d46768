#pragma once
// Tuning one GEMM shape: the candidate space (kernel family, coop tiling axes, copy subgroups, raster band,
// K slices, shared-row padding, staged store, NV2 on/off/unroll/tensor layouts; tiled tiles), the gates every
// candidate passes before it is timed (spirv-val, pipeline creation, maximum error against float64 on sampled
// outputs, bit-identical results over 3 runs, no register spills where the driver reports them) and the
// measured cost (helios-bench's sustained timing, penalised by error), searched by tuning::evolve.
#include <functional>
#include <optional>
#include <string>

#include "codegen/kernels/gemm_coop.hpp"
#include "engine/ops/executor.hpp"
#include "engine/ops/matmul.hpp"
#include "engine/ops/matmul_policy.hpp"
#include "engine/tuning/search.hpp"
#include "engine/tuning/tuning.hpp"
#include "gates.hpp"
#include "search_harness.hpp"

namespace helios::tune {

// Runs one candidate: `args` with `record` as the device's Tuning record (the default runs matmul with
// it; tests inject runners that compute wrong results).
using GemmRunner = std::function<void(ops::Executor&, const ops::MatmulArgs&, const tuning::Tuning& record)>;
void runWithRecord(ops::Executor& exec, const ops::MatmulArgs& args, const tuning::Tuning& record);

struct GemmTuneOptions : HarnessOptions {
  double maxError = 2e-3;    // gate: |got - ref| / sum |a b| over the sampled outputs
  double errorWeight = 0.01; // cost = time * (1 + errorWeight * error / maxError)
  uint32_t samples = 256;
  bool allowCoop = true; // false: only the tiled kernel's tiles are searched
  GemmRunner runner = runWithRecord;
  // The coop device the space and the plans assume; none: the context's (tests plan for a synthetic one and
  // inject a runner).
  std::optional<ops::CoopDeviceInfo> device;
};

struct GemmTuneResult : SearchOutcome {
  tuning::GemmChoice best;
};

// The candidate space for `shape` on this device (coop dimensions only where coop matrices run, NV2 ones only
// where the device lists workgroup-scope shapes): each part of the coop tiling (BM, BN, BK, subgroup rows and
// columns, stages) on its own axis, resolved against the policy's tiling of the scope the candidate runs;
// copy subgroups, raster band, K slices, A and B padding, staged store; the workgroup-scope kernel on or off
// with its unrolling and tensor layouts; the tiled kernel's tiles. Index 0 of every axis is "as the policy
// chooses".
struct GemmSpace {
  tuning::SearchSpace space;
  codegen::GemmCoopParams subgroupBase; // the policy's subgroup-scope kernel for the shape
  std::optional<codegen::GemmCoopParams>
      workgroupBase;            // and its workgroup-scope one, where the device has it
  bool policyWorkgroup = false; // the policy's own plan runs the workgroup scope
  std::vector<std::string> tiledTiles;
};
GemmSpace gemmSpace(const ops::CoopDeviceInfo& device, const tuning::GemmShape& shape,
                    const tuning::Tuning& base, bool allowCoop = true);
tuning::GemmChoice gemmChoice(const GemmSpace& space, const tuning::Candidate& c,
                              const tuning::GemmShape& shape);
// The candidate's spelling in rejections and logs ("coop 128x64x32_sg2x2_s2 w1 pA0 ...").
std::string describe(const tuning::GemmChoice& c);
// The shape as the coop plan sees it (f16 operands: coop devices have them).
ops::MatmulArgs shapeArgs(const tuning::GemmShape& s);

// Searches `shape` starting from the policy's own choice; `base` is the record the candidates extend.
GemmTuneResult tuneGemm(vk::Context& ctx, const tuning::GemmShape& shape, const tuning::Tuning& base,
                        const GemmTuneOptions& options);

// `shape` timed with record `first` and with `second`, alternately, as the search times (timeRecords: once,
// where both run the same pipelines).
PairUs timeGemmRecords(vk::Context& ctx, const tuning::GemmShape& shape, const tuning::Tuning& first,
                       const tuning::Tuning& second, const TimingOptions& timing, uint32_t rounds);

} // namespace helios::tune
