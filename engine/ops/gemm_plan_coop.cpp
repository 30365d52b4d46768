// The coop part of the GEMM planner (gemm_plan.hpp): the policy (matmul_policy.hpp) on the Tuning record's
// choices, the buffers' layout checked, and the kernel a coop plan runs.
#include "engine/ops/device_tuning.hpp"
#include "engine/ops/gemm_plan.hpp"
#include "engine/tuning/values.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace helios::ops {

using codegen::Elem;

// C leaves the subgroup-scope kernel through shared memory (GemmCoopParams::stagedStore) where the kernel
// allows it and C's binding is aligned for row vectors: the coop stores straight to memory were the tail of
// every tile (bench/results/2026-11-24-h100-gemm-staged-store.json). The bounded kernel with vector
// copies takes it too (C as checked 4-element vectors; 2026-11-25-h100-gemm-edge-shift.json).
// The Tuning record's gemm.stagedStore (HELIOS_GEMM_STAGED_STORE=0) turns it off (CoopPlan::stagedStore).
// (Rows of N elements are vector-aligned too: N is a multiple of the tile, or of 8 with vector copies.)
bool rowVectorAligned(const codegen::GemmCoopParams& p, const vk::BufferRange& c, uint64_t strideC) {
  return c.offset % (p.halfC() ? 8 : 16) == 0 && strideC % 4 == 0;
}

namespace {

bool stagedStoreFits(codegen::GemmCoopParams p, const vk::BufferRange& c, uint64_t strideC, bool allowed) {
  if (!allowed || p.workgroupScope || (p.alphaBeta && !p.bounded) || !rowVectorAligned(p, c, strideC))
    return false;
  p.stagedStore = true;
  try {
    p.validate();
  } catch (const std::invalid_argument&) {
    return false;
  }
  return true;
}

// Why the buffers/strides rule a coop plan out ("" = fine).
std::string layoutMiss(const CoopPlan& plan, const MatmulArgs& a) {
  const uint64_t M = a.M, N = a.N, K = a.K;
  const uint32_t sA = batchStride(a.strideA, M * K), sB = batchStride(a.strideB, K * N),
                 sC = batchStride(a.strideC, M * N);
  const bool batched = a.batch > 1;
  if (plan.inner == CoopDecision::Bounded) return {}; // scalar reads: any offset and stride
  if (plan.inner == CoopDecision::DirectCoop || plan.inner == CoopDecision::TransposedADirect) {
    if (a.a.offset % 16 || a.b.offset % 16) return "A or B binding not 16-byte aligned";
    if (batched && (sA % 8 || sB % 8)) return "batch strides of A or B not multiples of 8";
    return {};
  }
  // Padded (and rewritten): slice3d handles dense batches (or one broadcast A/B).
  if (batched && ((sA != M * K && sA != 0) || (sB != K * N && sB != 0) || sC != M * N))
    return "padded path needs dense batch strides";
  return {};
}

} // namespace

MatmulProblem matmulProblem(const MatmulArgs& a, bool boundedVectors) {
  MatmulProblem p;
  p.M = a.M;
  p.N = a.N;
  p.K = a.K;
  p.batch = a.batch;
  p.transA = a.transA;
  p.transB = a.transB;
  p.a = p.b = matmulOperands(a);
  p.c = a.outType;
  const uint64_t M = a.M, N = a.N, K = a.K;
  p.sharedB = a.batch > 1 && a.strideB && *a.strideB == 0 && batchStride(a.strideA, M * K) == M * K &&
              batchStride(a.strideC, M * N) == M * N;
  p.epilogue = a.bias.buffer != VK_NULL_HANDLE || a.gelu;
  // f32 operands reach the bounded kernel as fresh 16-bit copies (withHalfCopies).
  const bool vectorsOff = !boundedVectors;
  const bool copied = a.roundTo != Elem::F32 && a.aType == Elem::F32;
  p.vectorRows =
      !vectorsOff && (copied || (a.a.offset % 16 == 0 && a.b.offset % 16 == 0)) &&
      (a.batch == 1 || (batchStride(a.strideA, M * K) % 8 == 0 && batchStride(a.strideB, K * N) % 8 == 0));
  return p;
}

codegen::GemmCoopParams coopKernelParams(const CoopPlan& plan, const MatmulArgs& args) {
  codegen::GemmCoopParams p = plan.params;
  p.alphaBeta = args.alpha != 1.0f || args.beta != 0.0f;
  p.bias = args.bias.buffer != VK_NULL_HANDLE;
  p.gelu = args.gelu;
  // f32 operands multiplied as 16 bits (roundTo) are rounded to the plan's operands while staged.
  p.storedA = p.storedB = args.roundTo != Elem::F32 ? Elem::F32 : p.operands;
  p.stagedStore =
      stagedStoreFits(p, args.c, batchStride(args.strideC, uint64_t{args.M} * args.N), plan.stagedStore);
  p.biasOnVectors =
      p.biasOnVectors && p.stagedStore && p.halfC() && p.bias; // only where it changes the kernel
  return p;
}

namespace {

bool fits(const codegen::GemmCoopParams& p) {
  try {
    p.validate();
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// The device as a shape's tuned choice sees it: GemmChoice::coop2 turns the workgroup-scope kernel on or off
// for that shape alone (where the device has it).
CoopDeviceInfo withCoop2(const CoopDeviceInfo& dev, const tuning::GemmChoice* choice) {
  if (!choice || !choice->coop2) return dev;
  CoopDeviceInfo d = dev;
  d.workgroupShapes = *choice->coop2 ? dev.nv2Shapes : std::vector<codegen::WorkgroupCoopShape>{};
  return d;
}

// `c`'s parts of the kernel that are neither its tiling nor its raster/slices/padding: copy subgroups on
// subgroup scope, unrolling and tensor layouts on workgroup scope; each where the kernel still validates.
void applyKernelParts(codegen::GemmCoopParams& params, const tuning::GemmChoice& c) {
  const auto tryOn = [&](auto&& change) {
    codegen::GemmCoopParams p = params;
    change(p);
    if (fits(p)) params = p;
  };
  if (!params.workgroupScope && c.producers)
    tryOn([&](codegen::GemmCoopParams& p) { p.producers = *c.producers; });
  if (params.workgroupScope && c.unroll) tryOn([&](codegen::GemmCoopParams& p) { p.unroll = *c.unroll; });
  if (params.workgroupScope && c.tensorLayouts)
    tryOn([&](codegen::GemmCoopParams& p) { p.tensorLayouts = *c.tensorLayouts; });
}

// `tile` on the plan where the kernel can take it: bounded plans any, direct ones where it divides the sizes;
// the workgroup-scope kernel takes only BM x BN x BK (its invocations stay those of its granularity).
void setTile(CoopPlan& plan, const MatmulArgs& args, const tuning::CoopTile& tile, bool direct,
             uint32_t maxDimension) {
  if (direct && (args.M % tile.bm || args.N % tile.bn || args.K % tile.bk)) return;
  codegen::GemmCoopParams p = plan.params;
  if (p.workgroupScope) {
    if (std::max({tile.bm, tile.bn, tile.bk}) > maxDimension) return;
    p.BM = tile.bm, p.BN = tile.bn, p.BK = tile.bk;
  } else {
    p.setTiling(tile);
  }
  if (fits(p)) plan.params = p;
}

// Whether `f` was set by a file, --tuning or the environment.
template <class T> bool isSet(const tuning::Field<T>& f) {
  return f.source != tuning::Source::Default;
}

} // namespace

CoopPlan planMatmulCoop(const MatmulArgs& args, const CoopDeviceInfo& dev, const tuning::Tuning* tuned,
                        const codegen::GemmCoopParams* forced) {
  static const tuning::Tuning untuned;
  const tuning::Tuning& t = tuned ? *tuned : untuned;
  const tuning::GemmTuning& g = t.gemm;
  const MatmulProblem problem = matmulProblem(args, g.boundedVectors.value);
  // The shape's own choice from the tuner; global fields set by a file or override come after it.
  const tuning::GemmChoice* choice = tuning::findGemm(
      t, gemmShape(args.M, args.N, args.K, args.batch, args.transA, args.transB, args.outType == Elem::F16));
  CoopPlan plan = planMatmul(problem, withCoop2(dev, choice), g, forced);
  if (choice && choice->kernel == tuning::GemmKernel::Tiled) {
    plan.decision = plan.inner = CoopDecision::Fallback;
    plan.missKey = "tuned to the tiled kernel";
    plan.reason = "tuned to the tiled kernel (" + tuning::text(choice->shape) + ")";
    return plan;
  }
  using tuning::BoundedMode;
  const bool allVectors = g.bounded.value == BoundedMode::AllVectors;
  if ((g.bounded.value == BoundedMode::All || allVectors) && plan.splitK == 1 &&
      !plan.params.workgroupScope &&
      (plan.decision == CoopDecision::DirectCoop || plan.decision == CoopDecision::TransposedADirect)) {
    makeBounded(plan.params, problem, allVectors && vectorCopies(problem), g);
    plan.decision = plan.inner = CoopDecision::Bounded;
  }
  const bool subgroupScope = isCoop(plan.decision) && !plan.params.workgroupScope;
  const bool direct = plan.inner == CoopDecision::DirectCoop || plan.inner == CoopDecision::TransposedADirect;
  const bool bounded = plan.inner == CoopDecision::Bounded;
  const uint32_t maxDim = dev.workgroupMaxDimension;
  if (choice && choice->tile && (direct || bounded)) setTile(plan, args, *choice->tile, direct, maxDim);
  const auto& globalTile = bounded ? g.boundedTile.value : direct ? g.directTile.value : std::nullopt;
  if (globalTile && !plan.params.workgroupScope) setTile(plan, args, *globalTile, direct, maxDim);
  static const tuning::GemmChoice none;
  const tuning::GemmChoice& c = choice ? *choice : none;
  const std::optional<uint32_t>& groupM = isSet(g.groupM) ? g.groupM.value : c.groupM;
  const std::optional<uint32_t>& kSlices = isSet(g.kSlices) ? g.kSlices.value : c.kSlices;
  const std::optional<tuning::SharedPad>& pad = isSet(g.pad) ? g.pad.value : c.pad;
  plan.stagedStore = g.stagedStore.value && c.stagedStore.value_or(true);
  if (subgroupScope && groupM) plan.params.groupM = *groupM;
  if (subgroupScope && pad) plan.params.padA = pad->a, plan.params.padB = pad->b;
  if (kSlices && subgroupScope && args.batch == 1) {
    plan.params.kSlices = *kSlices;
    if (plan.params.kSlices > 1) plan.splitK = 1;
    if (plan.params.kSlices > 1 && codegen::gemmCoopTileCount(plan.params, args.M, args.N) > kMaxSlicedTiles)
      plan.params.kSlices = 1;
  }
  // On the final tiling (the choices above may have changed it, or made an aligned plan bounded).
  if (bounded) shiftEdges(plan.params, problem, g, dev);
  if (choice && isCoop(plan.decision) && plan.splitK == 1) applyKernelParts(plan.params, *choice);
  if (isCoop(plan.decision)) {
    if (const std::string why = layoutMiss(plan, args); !why.empty()) {
      plan.decision = plan.inner = CoopDecision::Fallback;
      plan.missKey = plan.reason = why;
    }
  }
  return plan;
}

} // namespace helios::ops
