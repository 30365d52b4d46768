#include "engine/ops/matmul_policy.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

#include "engine/tuning/defaults.hpp"
#include "probe/scoring.hpp"

namespace helios::ops {

const char* coopDecisionName(CoopDecision d) {
  switch (d) {
  case CoopDecision::DirectCoop:
    return "direct";
  case CoopDecision::PaddedCoop:
    return "padded";
  case CoopDecision::PaddedBatchedCoop:
    return "padded_batched";
  case CoopDecision::TransposedADirect:
    return "transposed_a_direct";
  case CoopDecision::Bounded:
    return "bounded";
  case CoopDecision::Rewrite:
    return "rewrite";
  case CoopDecision::Fallback:
    return "fallback";
  }
  return "?";
}

uint32_t computeUnitsOr(const probe::ShaderCores& cores, uint32_t fallback) {
  return cores.known() ? cores.computeUnits : fallback;
}

uint64_t fillWorkgroups(uint32_t computeUnits) {
  return tuning::defaultFillWorkgroups(computeUnits);
}

uint64_t fillTarget(const tuning::GemmTuning& g, const CoopDeviceInfo& device) {
  return g.fillWorkgroups.value ? g.fillWorkgroups.value : fillWorkgroups(device.computeUnits);
}

CoopDeviceInfo coopDeviceFromProperties(const std::vector<probe::CoopMatrixProperty>& props,
                                        uint32_t subgroupSize, uint32_t maxSharedBytes) {
  CoopDeviceInfo d;
  d.subgroupSize = subgroupSize ? subgroupSize : 32;
  d.maxSharedBytes = maxSharedBytes;
  auto better = [](const probe::CoopMatrixProperty& a, const CoopDeviceInfo& b) {
    const uint64_t va = uint64_t{a.M} * a.N * a.K, vb = uint64_t{b.coopM} * b.coopN * b.coopK;
    if (va != vb) return va > vb;
    if (a.M * a.N != b.coopM * b.coopN) return a.M * a.N > b.coopM * b.coopN;
    return a.M > b.coopM;
  };
  for (const auto& p : props) {
    if (p.A != "float16" || p.B != "float16" || p.C != "float32" || p.Result != "float32" ||
        p.scope != "subgroup")
      continue;
    if (!d.coopMatrix || better(p, d)) {
      d.coopMatrix = true;
      d.coopM = p.M;
      d.coopN = p.N;
      d.coopK = p.K;
    }
  }
  d.bf16 = d.coopMatrix && listsBF16At(props, d.coopM, d.coopN, d.coopK);
  return d;
}

bool listsBF16At(const std::vector<probe::CoopMatrixProperty>& props, uint32_t m, uint32_t n, uint32_t k) {
  return std::any_of(props.begin(), props.end(), [&](const probe::CoopMatrixProperty& p) {
    return p.A == "bfloat16" && p.B == "bfloat16" && p.C == "float32" && p.Result == "float32" &&
           p.scope == "subgroup" && p.M == m && p.N == n && p.K == k;
  });
}

uint32_t coopSubgroupSize(uint32_t defaultSize, uint32_t minSize, uint32_t maxSize, bool controllable) {
  const auto supported = [](uint32_t s) { return s >= 4 && s <= 64 && (s & (s - 1)) == 0; };
  if (!controllable) return minSize == maxSize && supported(defaultSize) ? defaultSize : 0;
  if (supported(defaultSize) && defaultSize >= minSize && defaultSize <= maxSize) return defaultSize;
  for (uint32_t s = 64; s >= 4; s /= 2)
    if (s >= minSize && s <= maxSize) return s;
  return 0;
}

std::vector<codegen::WorkgroupCoopShape>
workgroupShapesFromProperties(const std::vector<probe::FlexibleDimensionsProperty>& props) {
  std::vector<codegen::WorkgroupCoopShape> out;
  for (const auto& p : props)
    if (p.A == "float16" && p.B == "float16" && p.C == "float32" && p.Result == "float32" &&
        p.scope == "workgroup" && !p.saturatingAccumulation)
      out.push_back({p.MGranularity, p.NGranularity, p.KGranularity, p.workgroupInvocations});
  return out;
}

CoopDeviceInfo coopDeviceFromCaps(const probe::DeviceCaps& caps) {
  // Subgroup size control is core in Vulkan 1.3; a capture without the range counts as one fixed size.
  const uint32_t lo = caps.min_subgroup_size ? caps.min_subgroup_size : caps.subgroup_size;
  const uint32_t hi = caps.max_subgroup_size ? caps.max_subgroup_size : caps.subgroup_size;
  const uint32_t sg = coopSubgroupSize(caps.subgroup_size, lo, hi,
                                       caps.hasExtension("VK_EXT_subgroup_size_control") || lo == hi);
  CoopDeviceInfo d = coopDeviceFromProperties(caps.coop_khr, sg, caps.max_compute_shared_memory);
  if (!sg) d.coopMatrix = false;
  d.bf16 = d.bf16 && probe::bf16CoopUsable(caps);
  if (d.coopMatrix) d.workgroupShapes = d.nv2Shapes = workgroupShapesFromProperties(caps.coop_nv2);
  d.computeUnits = computeUnitsOr(caps.shader_cores, kDefaultComputeUnits);
  return withRegisterPlan(d, caps.vendor_id, caps.min_subgroup_size, caps.max_subgroup_size);
}

CoopRegisterPlan coopRegisterPlan(uint32_t vendorId, uint32_t coopN, uint32_t minSubgroup,
                                  uint32_t maxSubgroup, uint32_t defaultSubgroup) {
  constexpr uint32_t kIntel = 0x8086, kAmd = 0x1002, kIntelRegisters = 128;
  if (vendorId == kAmd) return {defaultSubgroup, 0, false, defaultSubgroup >= 64 ? 64u : 128u};
  if (vendorId != kIntel || !coopN) return {defaultSubgroup, 0};
  // The native width (coopN: SIMD8 on Xe-HPG, SIMD16 on Xe2) suits the matrix engine; accumulators get an
  // eighth of the file at any width (at native width a quarter still spilled DG2's NN/TN GEMMs, 13-18).
  const uint32_t budget = kIntelRegisters * 4 * coopN / 8;
  if (coopN >= minSubgroup && coopN <= maxSubgroup) return {coopN, budget, true, 0};
  return {defaultSubgroup, budget, true, 0};
}

uint32_t coopAccumulatorBytes(const codegen::GemmCoopParams& t) {
  return t.warpM() * t.warpN() * 4;
}

bool loweredTilingFits(const codegen::GemmCoopParams& t) {
  return t.BM * t.BN <= 64 * 32 && (t.BM + t.BN) * t.BK <= 512 * t.subgroups();
}

CoopDeviceInfo withRegisterPlan(CoopDeviceInfo d, uint32_t vendorId, uint32_t minSubgroup,
                                uint32_t maxSubgroup) {
  if (!d.coopMatrix) return d;
  const CoopRegisterPlan plan = coopRegisterPlan(vendorId, d.coopN, minSubgroup, maxSubgroup, d.subgroupSize);
  d.subgroupSize = plan.subgroupSize;
  d.accumulatorBytes = plan.accumulatorBytes;
  d.biasOnVectors = plan.biasOnVectors;
  d.attentionMaxHeadDim = plan.attentionMaxHeadDim;
  return d;
}

std::string formatFlops(double flops) {
  if (flops < 1e9) return fmt::format("{:.3g} MFLOP", flops / 1e6);
  if (flops < 1e12) return fmt::format("{:.3g} GFLOP", flops / 1e9);
  return fmt::format("{:.3g} TFLOP", flops / 1e12);
}

namespace {

// gemm.bounded: "never" turns the bounded kernel off; "always", "all" and "all-vectors" drop its size limits.
bool boundedAllowed(const tuning::GemmTuning& g) {
  return g.bounded.value != tuning::BoundedMode::Never;
}
bool boundedUnlimited(const tuning::GemmTuning& g) {
  using tuning::BoundedMode;
  const BoundedMode m = g.bounded.value;
  return m == BoundedMode::Always || m == BoundedMode::All || m == BoundedMode::AllVectors;
}
double boundedMinFlops(const tuning::GemmTuning& g) {
  return boundedUnlimited(g) ? 0 : g.boundedMinFlops.value;
}
double boundedMaxFlops(const tuning::GemmTuning& g) {
  return boundedUnlimited(g) ? 1e300 : g.boundedMaxFlops.value;
}

// K slices one dispatch may take: gemm.maxKSlices, 1 without device-scope synchronisation (the slices'
// hand-over needs it).
uint32_t maxKSlices(const tuning::GemmTuning& g, const CoopDeviceInfo& dev) {
  return dev.deviceScope ? g.maxKSlices.value : 1;
}

uint32_t roundUp(uint32_t x, uint32_t m) {
  return (x + m - 1) / m * m;
}

CoopPlan miss(std::string key, std::string reason) {
  CoopPlan p;
  p.decision = CoopDecision::Fallback;
  p.missKey = std::move(key);
  p.reason = std::move(reason);
  return p;
}

// The device's coop shape (subgroup-scope tilings only: workgroup-scope ones carry their granularity),
// subgroup size and shared memory on each tiling.
std::vector<codegen::GemmCoopParams> withDevice(std::vector<codegen::GemmCoopParams> tilings,
                                                const CoopDeviceInfo& dev) {
  for (auto& t : tilings) {
    if (!t.workgroupScope) {
      t.coopM = dev.coopM;
      t.coopN = dev.coopN;
      t.coopK = dev.coopK;
    }
    t.subgroupSize = dev.subgroupSize;
    t.maxSharedBytes = dev.maxSharedBytes;
    t.lowered = dev.lowered;
    t.biasOnVectors = dev.biasOnVectors;
  }
  return tilings;
}

// The tilings whose subgroups keep their accumulators within the device's budget and that are valid at its
// subgroup size (all of them where there is no budget).
std::vector<codegen::GemmCoopParams> withinBudget(std::vector<codegen::GemmCoopParams> tilings,
                                                  const CoopDeviceInfo& dev) {
  std::erase_if(tilings, [&](const codegen::GemmCoopParams& t) {
    if (dev.accumulatorBytes && coopAccumulatorBytes(t) > dev.accumulatorBytes) return true;
    if (dev.lowered && !loweredTilingFits(t)) return true;
    try {
      t.validate();
      return false;
    } catch (const std::invalid_argument&) {
      return true;
    }
  });
  return tilings;
}

// Tilings for the device: the forced one, else gemm.tilings, else the device's menu restricted to the default
// tile and the 64x64 tiles (small problems, awkward sizes): K steps of 64 where K allows (gemm.smallTileBK),
// else 32.
std::vector<codegen::GemmCoopParams> candidateTilings(const CoopDeviceInfo& dev, const tuning::GemmTuning& g,
                                                      const codegen::GemmCoopParams* forced) {
  std::vector<codegen::GemmCoopParams> out;
  if (forced) return withDevice({*forced}, dev);
  for (const tuning::CoopTile& tile : g.tilings.value)
    out.push_back(codegen::GemmCoopParams{}.setTiling(tile));
  if (!out.empty()) return withDevice(out, dev);
  // Workgroup scope first (the default tile, then a 64x64 one), where the device has it.
  const uint32_t maxDim = dev.workgroupMaxDimension;
  bool small = false;
  for (const auto& t : codegen::gemmCoopWorkgroupTilings(dev.workgroupShapes, dev.subgroupSize)) {
    if (t.BM > maxDim || t.BN > maxDim || t.BK > maxDim) continue;
    const bool isSmall = t.BM == 64 && t.BN == 64;
    if (out.empty() || (isSmall && !small)) out.push_back(t);
    small = small || isSmall;
  }
  {
    // On the device, those that fit its shared memory.
    const auto menu = withinBudget(withDevice(codegen::gemmCoopTilings(dev.coopM, dev.coopN, dev.coopK,
                                                                       dev.maxSharedBytes, dev.subgroupSize),
                                              dev),
                                   dev);
    if (!menu.empty()) out.push_back(menu.front());
    // The 64x64 tile: 2 x 2 subgroups, or where accumulators are budgeted the first layout within it.
    for (const uint32_t bk : {64u, 32u}) {
      if (bk > g.smallTileBK.value) continue;
      for (const auto& t : menu)
        if (t.BM == 64 && t.BN == 64 && t.BK == bk &&
            (dev.accumulatorBytes || (t.sgRows == 2 && t.sgCols == 2))) {
          out.push_back(t);
          break;
        }
    }
  }
  return withDevice(out, dev);
}

uint64_t workgroups(const codegen::GemmCoopParams& t, uint32_t M, uint32_t N, uint32_t batch) {
  return uint64_t{roundUp(M, t.BM) / t.BM} * (roundUp(N, t.BN) / t.BN) * batch;
}

// Among the tilings `eligible` accepts (in menu order, largest first): the first that fills the GPU, else the
// one launching the most workgroups; nullptr when none is eligible.
template <typename Eligible>
const codegen::GemmCoopParams* fillingTiling(const std::vector<codegen::GemmCoopParams>& tilings,
                                             const MatmulProblem& pr, uint64_t fill, Eligible eligible) {
  const codegen::GemmCoopParams* pick = nullptr;
  for (const auto& t : tilings)
    if (eligible(t) &&
        (!pick || (workgroups(*pick, pr.M, pr.N, pr.batch) < fill &&
                   workgroups(t, pr.M, pr.N, pr.batch) > workgroups(*pick, pr.M, pr.N, pr.batch))))
      pick = &t;
  return pick;
}

// Under one wave (K slices and batches counted): the tile split among twice the subgroups, where that is a
// valid tiling, so each busy SM has more warps to hide the copies' latency behind; over a wave it lost
// (2026-11-25-h100-gemm-bounded-subgroups.json).
codegen::GemmCoopParams withMoreSubgroups(const codegen::GemmCoopParams& t, const MatmulProblem& pr,
                                          uint64_t fill) {
  if (t.workgroupScope || t.producers || workgroups(t, pr.M, pr.N, pr.batch) * t.kSlices >= fill) return t;
  codegen::GemmCoopParams more = t;
  more.sgRows *= 2;
  try {
    more.validate();
    return more;
  } catch (const std::invalid_argument&) {
    return t;
  }
}

} // namespace

uint32_t kSlicesFor(const codegen::GemmCoopParams& t, const MatmulProblem& pr, const tuning::GemmTuning& g,
                    const CoopDeviceInfo& dev) {
  if (t.workgroupScope || t.producers || pr.batch != 1) return 1;
  const uint64_t tiles = workgroups(t, pr.M, pr.N, 1);
  if (tiles > kMaxSlicedTiles) return 1;
  const uint32_t steps = (pr.K + t.BK - 1) / t.BK;
  if (steps < g.minSlicedSteps.value) return 1;
  const uint64_t fill = fillTarget(g, dev);
  const uint32_t busySteps =
      t.bounded && !t.boundedVectors ? g.scalarBusySliceSteps.value : g.busySliceSteps.value;
  uint32_t slices = 1;
  const auto more = [&](uint32_t s) {
    const uint64_t grid = tiles * s, stepsEach = steps / (2 * s);
    return (grid < fill && stepsEach >= g.minSliceSteps.value) || (grid < 4 * fill && stepsEach >= busySteps);
  };
  while (2 * slices <= maxKSlices(g, dev) && more(slices))
    slices *= 2;
  return slices;
}

bool vectorCopies(const MatmulProblem& pr) {
  return pr.vectorRows && pr.M % 8 == 0 && pr.N % 8 == 0 && pr.K % 8 == 0;
}

void makeBounded(codegen::GemmCoopParams& t, const MatmulProblem& pr, bool vectors,
                 const tuning::GemmTuning& g) {
  t.bounded = true;
  t.boundedVectors = vectors;
  t.crosswiseA = !vectors && g.crosswiseA.value;
  t.crosswiseB = !vectors && g.crosswiseB.value && pr.transB;
}

void shiftEdges(codegen::GemmCoopParams& t, const MatmulProblem& pr, const tuning::GemmTuning& g,
                const CoopDeviceInfo& dev) {
  const bool scalarUnderWave =
      g.edgeShiftScalar.value && workgroups(t, pr.M, pr.N, pr.batch) < fillTarget(g, dev);
  t.edgeShift = g.edgeShift.value && t.bounded && (t.boundedVectors || scalarUnderWave) && t.kSlices == 1 &&
                !t.producers && !(t.stages == 1 && pr.transB) && codegen::edgeShiftFits(t, pr.M, pr.N, pr.K);
}

namespace {

// K slices that let the first (largest) tiling fill the GPU where its tiles alone cannot: doubled while the
// grid is under two waves and each slice keeps at least 16 steps; 0 when that still leaves it under a wave,
// or the problem is not aligned to it. Its tile does twice the 64x64 one's work per byte loaded
// (2026-11-24-h100-gemm-big-tile-slices.json); under a wave the 64x64 tile with K steps of 64 does better
// (2026-11-25-h100-gemm-small-tile-bk64.json).
uint32_t bigTileSlices(const codegen::GemmCoopParams& big, const MatmulProblem& pr,
                       const tuning::GemmTuning& g, const CoopDeviceInfo& dev) {
  const uint64_t fill = fillTarget(g, dev);
  constexpr uint32_t kMinSteps = 16;
  if (big.workgroupScope || big.producers || pr.batch != 1 || pr.M % big.BM || pr.N % big.BN || pr.K % big.BK)
    return 0;
  const uint64_t tiles = workgroups(big, pr.M, pr.N, 1);
  const uint32_t steps = pr.K / big.BK;
  if (tiles > kMaxSlicedTiles) return 0;
  uint32_t s = 1;
  while (2 * s <= maxKSlices(g, dev) && tiles * s < 2 * fill && steps / (2 * s) >= kMinSteps)
    s *= 2;
  return s > 1 && tiles * s >= fill ? s : 0;
}

} // namespace

CoopPlan planMatmul(const MatmulProblem& pr, const CoopDeviceInfo& dev, const tuning::GemmTuning& g,
                    const codegen::GemmCoopParams* forced) {
  if (pr.M == 0 || pr.N == 0 || pr.K == 0 || pr.batch == 0) return miss("empty problem", "empty problem");
  if (!dev.coopMatrix)
    return miss("no cooperative matrices on this device", "no cooperative matrices on this device");
  using codegen::Elem;
  if (pr.a != pr.b || !codegen::isHalf(pr.a)) {
    const std::string what =
        pr.a == pr.b ? std::string(codegen::elemName(pr.a)) + " inputs"
                     : std::string(codegen::elemName(pr.a)) + " x " + codegen::elemName(pr.b) + " inputs";
    return miss("type not supported: " + what, "type not supported: " + what);
  }
  if (pr.a == Elem::BF16 && !dev.bf16)
    return miss("type not supported: bf16 inputs (no bf16 cooperative matrices at the device's shape)",
                "type not supported: bf16 inputs (no bf16 cooperative matrices at the device's shape)");
  if (pr.c != pr.a && pr.c != Elem::F32) {
    const std::string what = std::string(codegen::elemName(pr.c)) + " output";
    return miss("type not supported: " + what, "type not supported: " + what);
  }
  const auto tilings = candidateTilings(dev, g, forced);
  const uint64_t fill = fillTarget(g, dev);
  if (tilings.empty()) return miss("no tiling fits", "no coop tiling fits the device's shared memory");

  // One B for the whole batch and A stored M x K: the batch is just more rows of one GEMM.
  if (pr.batch > 1 && pr.sharedB && !pr.transA && g.allowRewrite.value &&
      uint64_t{pr.M} * pr.batch <= 0xffffffffu) {
    MatmulProblem folded = pr;
    folded.M = pr.M * pr.batch;
    folded.batch = 1;
    folded.sharedB = false;
    CoopPlan inner = planMatmul(folded, dev, g, forced);
    if (!isCoop(inner.decision)) return inner;
    inner.reason = "batch of " + std::to_string(pr.batch) +
                   " sharing B folded into M=" + std::to_string(folded.M) + ", then " +
                   coopDecisionName(inner.decision) + " (" + inner.reason + ")";
    inner.decision = CoopDecision::Rewrite;
    return inner;
  }

  CoopPlan plan;
  plan.problem = pr;
  auto finish = [&](codegen::GemmCoopParams t, CoopDecision d, std::string reason) {
    t.transA = pr.transA;
    t.transB = pr.transB;
    t.batched = pr.batch > 1;
    t.operands = t.storedA = t.storedB = pr.a;
    t.storedC = pr.c;
    if (t.batched) t.kSlices = 1;
    plan.Mp = roundUp(pr.M, t.BM);
    plan.Np = roundUp(pr.N, t.BN);
    // Grids wide both ways walk bands of 8 tile rows: each B tile is then read from L2 by 8 rows of A tiles
    // instead of once per row from memory (GPT-2 small's 77 MB head weight against M = 16384 tokens).
    // (Subgroup scope: the NV2 kernel measured the same with and without.)
    const uint32_t band = g.bandMinTiles.value;
    if (!t.workgroupScope && plan.Mp / t.BM >= band && plan.Np / t.BN >= band) t.groupM = g.bandRows.value;
    plan.params = t;
    plan.decision = d;
    plan.inner = d;
    plan.reason = std::move(reason);
    plan.Kp = roundUp(pr.K, t.BK);
    plan.paddingOverhead =
        static_cast<double>(plan.Mp) * plan.Np * plan.Kp / (static_cast<double>(pr.M) * pr.N * pr.K) - 1.0;
    return plan;
  };

  // Aligned to some tiling: the first that fills the GPU, else the one launching the most workgroups.
  const codegen::GemmCoopParams* aligned =
      fillingTiling(tilings, pr, fill, [&](const codegen::GemmCoopParams& t) {
        return pr.M % t.BM == 0 && pr.N % t.BN == 0 && pr.K % t.BK == 0;
      });
  if (aligned) {
    // Long K over few tiles (weight gradients: K = tokens): cut K so the slices fill the GPU several times
    // over, on the first (largest) tiling if it is aligned, also above one wave; not where the aligned tiling
    // fills the GPU whole and K is short (under 256 steps of it), where the whole GEMM won
    // (2026-11-24-h100-gemm-tn-split-rule.json).
    const auto& big = tilings.front();
    const bool shortAndFull = workgroups(*aligned, pr.M, pr.N, 1) >= fill && pr.K / aligned->BK < 256;
    if (g.allowSplitK.value && pr.transA && !pr.transB && pr.batch == 1 && pr.c == Elem::F32 &&
        !pr.epilogue && !shortAndFull && pr.M % big.BM == 0 && pr.N % big.BN == 0 &&
        workgroups(big, pr.M, pr.N, 1) < 4 * fill) {
      uint32_t split = 1;
      while (split < 16 && workgroups(big, pr.M, pr.N, 1) * split < 4 * fill &&
             pr.K % (2 * split * big.BK) == 0 && pr.K / (2 * split) >= 4 * big.BK)
        split *= 2;
      // Under one wave even split, the 64x64 tile with K slices below does better
      // (2026-11-24-h100-gemm-tn-split-rule.json).
      if (split > 1 && workgroups(big, pr.M, pr.N, 1) * split >= fill) {
        CoopPlan p =
            finish(big, CoopDecision::TransposedADirect,
                   "K split in " + std::to_string(split) + " slices of " + std::to_string(pr.K / split) +
                       " on " + std::to_string(big.BM) + "x" + std::to_string(big.BN) + "x" +
                       std::to_string(big.BK) + ", A read column-major");
        p.splitK = split;
        return p;
      }
    }
    codegen::GemmCoopParams t = *aligned;
    if (t.kSlices == 1) t.kSlices = kSlicesFor(t, pr, g, dev);
    if ((aligned->BM != big.BM || aligned->BN != big.BN) && aligned->kSlices == 1)
      if (const uint32_t s = bigTileSlices(big, pr, g, dev)) {
        t = big;
        t.kSlices = s;
      }
    const std::string slices = t.kSlices > 1 ? ", K in " + std::to_string(t.kSlices) + " slices" : "";
    const std::string shape = std::to_string(t.BM) + "x" + std::to_string(t.BN) + "x" + std::to_string(t.BK);
    if (pr.transA)
      return finish(t, CoopDecision::TransposedADirect,
                    "aligned to " + shape + ", A read column-major" + slices);
    return finish(t, CoopDecision::DirectCoop, "aligned to " + shape + slices);
  }

  // Unaligned: pad to a tiling within the cap, chosen as for aligned problems (the first that fills the GPU,
  // else the one launching the most workgroups, which won on GPUs left idle by few large tiles). With none
  // within the cap, the least extra work names the miss.
  const auto overhead = [&](const codegen::GemmCoopParams& t) {
    return static_cast<double>(roundUp(pr.M, t.BM)) * roundUp(pr.N, t.BN) * roundUp(pr.K, t.BK) /
               (static_cast<double>(pr.M) * pr.N * pr.K) -
           1.0;
  };
  const double cap = g.paddingCap.value, minFlops = g.minFlops.value;
  const auto withinCap = [&](double o) { return o <= cap * (1.0 + 1e-9) + 1e-12; };
  const codegen::GemmCoopParams* best = fillingTiling(
      tilings, pr, fill, [&](const codegen::GemmCoopParams& t) { return withinCap(overhead(t)); });
  if (!best)
    for (const auto& t : tilings)
      if (!best || overhead(t) < overhead(*best) - 1e-12) best = &t;
  const double bestOverhead = overhead(*best);
  const auto pct = [](double x) { return fmt::format("{:.0f}%", x * 100.0); };
  const bool overCap = !withinCap(bestOverhead);
  // Bounded: a subgroup-scope tiling, the first that fills the GPU (else the one launching the most
  // workgroups), as for aligned problems; its edge tiles check bounds instead of being padded.
  // The 64x64 tile's 64-wide K step only with vector copies: the scalar copies lost on it
  // (2026-11-25-h100-gemm-crosswise.json), the vector copies gained
  // (2026-11-25-h100-gemm-bounded-vector-tiles.json).
  const bool vectors = vectorCopies(pr);
  const codegen::GemmCoopParams* edge =
      fillingTiling(tilings, pr, fill, [&](const codegen::GemmCoopParams& t) {
        return !t.workgroupScope && (vectors || !(t.BM == 64 && t.BN == 64 && t.BK == 64));
      });
  const bool noPadding = overCap || !g.allowPadding.value;
  if (edge && boundedAllowed(g) && pr.flops() >= minFlops &&
      (noPadding ? pr.flops() >= boundedMinFlops(g) : pr.flops() <= boundedMaxFlops(g) || vectors)) {
    codegen::GemmCoopParams t = *edge;
    makeBounded(t, pr, vectors, g);
    if (t.kSlices == 1) t.kSlices = kSlicesFor(t, pr, g, dev); // (a forced tiling may bring its own)
    if (g.underWaveSubgroups.value) t = withMoreSubgroups(t, pr, fill);
    shiftEdges(t, pr, g, dev);
    CoopPlan p =
        finish(t, CoopDecision::Bounded,
               "unaligned, run as it is on " + std::to_string(t.BM) + "x" + std::to_string(t.BN) + "x" +
                   std::to_string(t.BK) + " with bounds checks" + (vectors ? " and vector copies" : "") +
                   (t.kSlices > 1 ? ", K in " + std::to_string(t.kSlices) + " slices" : "") +
                   (t.sgRows != edge->sgRows ? ", " + std::to_string(t.subgroups()) + " subgroups" : "") +
                   (t.edgeShift ? ", edge tiles shifted inside" : ""));
    p.Mp = pr.M;
    p.Np = pr.N;
    p.Kp = pr.K;
    p.paddingOverhead = 0;
    return p;
  }
  if (!g.allowPadding.value) return miss("unaligned, padding disabled", "unaligned and padding is disabled");
  if (overCap)
    return miss("unaligned and over the " + pct(cap) + " padding cap",
                "unaligned and over the " + pct(cap) + " padding cap (" + pct(bestOverhead) + ")");
  if (pr.flops() < minFlops)
    return miss("too small", "too small (" + formatFlops(pr.flops()) + " < " + formatFlops(minFlops) + ")");
  return finish(*best, pr.batch > 1 ? CoopDecision::PaddedBatchedCoop : CoopDecision::PaddedCoop,
                "padded to " + std::to_string(roundUp(pr.M, best->BM)) + "x" +
                    std::to_string(roundUp(pr.N, best->BN)) + "x" + std::to_string(roundUp(pr.K, best->BK)) +
                    " (+" + pct(bestOverhead) + " work)");
}

} // namespace helios::ops
