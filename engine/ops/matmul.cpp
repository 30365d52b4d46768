#include "engine/ops/matmul.hpp"
#include "engine/ops/compute_units.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/matmul_coop.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace helios::ops {

namespace {

using codegen::Elem;

std::string str(uint64_t v) {
  return std::to_string(v);
}

uint32_t strideOf(const std::optional<uint32_t>& s, uint64_t dense) {
  return s ? *s : static_cast<uint32_t>(dense);
}

bool overlaps(const vk::BufferRange& x, const vk::BufferRange& y) {
  return x.buffer == y.buffer && x.offset < y.offset + y.size && y.offset < x.offset + x.size;
}

// A buffer range holding `needed` elements of `type` (what = "A has", expr = "M*K").
void checkSize(const vk::BufferRange& r, Elem type, uint64_t needed, const char* what,
               const std::string& expr) {
  if (r.buffer == VK_NULL_HANDLE) throw std::invalid_argument(std::string("matmul: ") + what + " no buffer");
  const uint64_t have = r.size / codegen::elemBytes(type);
  if (have < needed)
    throw std::invalid_argument(std::string("matmul: ") + what + " " + str(have) + " elements, " + expr +
                                " = " + str(needed) + " needed");
  if (needed - 1 > UINT32_MAX)
    throw std::invalid_argument(std::string("matmul: ") + what + " more than 2^32 elements to index (" +
                                expr + " = " + str(needed) + ")");
}

} // namespace

void checkMatmulArgs(const MatmulArgs& a) {
  if (a.roundTo != Elem::F32 && a.aType != Elem::F32)
    throw std::invalid_argument(std::string("matmul: roundTo multiplies f32 operands as ") +
                                codegen::elemName(a.roundTo) + "; A and B must be f32, not " +
                                codegen::elemName(a.aType));
  if (a.M == 0 || a.N == 0 || a.K == 0 || a.batch == 0)
    throw std::invalid_argument("matmul: M, N, K and batch must be positive (M=" + str(a.M) +
                                ", N=" + str(a.N) + ", K=" + str(a.K) + ", batch=" + str(a.batch) + ")");
  const uint64_t M = a.M, N = a.N, K = a.K, batch = a.batch;
  const uint64_t sizeA = M * K, sizeB = K * N, sizeC = M * N;
  if (sizeA > UINT32_MAX || sizeB > UINT32_MAX || sizeC > UINT32_MAX)
    throw std::invalid_argument("matmul: a matrix exceeds 2^32 elements (M*K=" + str(sizeA) +
                                ", K*N=" + str(sizeB) + ", M*N=" + str(sizeC) + ")");
  if (batch == 1) {
    checkSize(a.a, a.aType, sizeA, "A has", "M*K");
    checkSize(a.b, a.aType, sizeB, "B has", "K*N");
    checkSize(a.c, a.outType, sizeC, "C has", "M*N");
  } else {
    const uint64_t sA = strideOf(a.strideA, sizeA), sB = strideOf(a.strideB, sizeB),
                   sC = strideOf(a.strideC, sizeC);
    if (sC < sizeC)
      throw std::invalid_argument("matmul: strideC = " + str(sC) + " < M*N = " + str(sizeC) +
                                  " (batches of C would overlap)");
    checkSize(a.a, a.aType, (batch - 1) * sA + sizeA, "A has", "(batch-1)*strideA + M*K");
    checkSize(a.b, a.aType, (batch - 1) * sB + sizeB, "B has", "(batch-1)*strideB + K*N");
    checkSize(a.c, a.outType, (batch - 1) * sC + sizeC, "C has", "(batch-1)*strideC + M*N");
  }
  if (a.bias.buffer != VK_NULL_HANDLE) {
    checkSize(a.bias, a.outType, N, "bias has", "N");
    if (overlaps(a.bias, a.c)) throw std::invalid_argument("matmul: bias overlaps C");
  }
  if (overlaps(a.a, a.c)) throw std::invalid_argument("matmul: A overlaps C");
  if (overlaps(a.b, a.c)) throw std::invalid_argument("matmul: B overlaps C");
}

codegen::GemmDeviceLimits gemmDeviceLimits(const vk::Device& device) {
  const VkPhysicalDeviceLimits& l = device.limits();
  codegen::GemmDeviceLimits g;
  g.maxSharedBytes = l.maxComputeSharedMemorySize;
  g.maxInvocations = std::min(l.maxComputeWorkGroupInvocations, l.maxComputeWorkGroupSize[0]);
  g.subgroupSize = device.subgroupSize();
  g.targetWorkgroups = deviceComputeUnits(device);
  return g;
}

codegen::GemmTiledParams matmulTiledParams(const MatmulArgs& a, const codegen::GemmDeviceLimits& limits) {
  codegen::GemmTiledParams p;
  p.inType = a.aType;
  p.outType = a.outType;
  p.transA = a.transA;
  p.transB = a.transB;
  p.batched = a.batch > 1;
  p.bias = a.bias.buffer != VK_NULL_HANDLE;
  p.gelu = a.gelu;
  // vec4: every contiguous dimension (A: K or M, B: N or K, C: N) a multiple of 4, strides too, and the
  // bindings aligned to a whole 4-vector.
  const uint64_t M = a.M, N = a.N, K = a.K;
  const uint32_t ldA = a.transA ? a.M : a.K, ldB = a.transB ? a.K : a.N;
  const uint32_t inVec = 4 * codegen::elemBytes(a.aType), outVec = 4 * codegen::elemBytes(a.outType);
  bool v4 = ldA % 4 == 0 && ldB % 4 == 0 && a.N % 4 == 0 && a.a.offset % inVec == 0 &&
            a.b.offset % inVec == 0 && a.c.offset % outVec == 0;
  if (p.batched)
    v4 = v4 && strideOf(a.strideA, M * K) % 4 == 0 && strideOf(a.strideB, K * N) % 4 == 0 &&
         strideOf(a.strideC, M * N) % 4 == 0;
  p.vec4Aligned = v4;
  if (a.tile) {
    p.tile = *a.tile;
    return p;
  }
  return codegen::chooseGemmTiling(a.M, a.N, a.K, a.batch, limits, p);
}

MatmulDType matmulOperands(const MatmulArgs& args) {
  return args.aType == Elem::F32 ? args.roundTo : args.aType;
}

MatmulArgs withHalfCopies(Executor& exec, const MatmulArgs& args) {
  const uint64_t M = args.M, N = args.N, K = args.K;
  const auto copy = [&](vk::BufferRange src, std::optional<uint32_t> stride, uint64_t dense,
                        const char* what) {
    const uint64_t extent =
        args.batch > 1 ? (args.batch - 1) * uint64_t{strideOf(stride, dense)} + dense : dense;
    const vk::BufferRange range = exec.scratch(extent * 2, what);
    cast(exec, src, range, static_cast<uint32_t>(extent), Elem::F32, args.roundTo);
    return range;
  };
  MatmulArgs h = args;
  h.a = copy(args.a, args.strideA, M * K, "matmul A rounded to 16 bits");
  h.b = copy(args.b, args.strideB, K * N, "matmul B rounded to 16 bits");
  h.aType = args.roundTo;
  h.roundTo = Elem::F32;
  return h;
}

namespace {

// `p` on the tile the device's Tuning record chose for this shape, where it has one that fits the device.
codegen::GemmTiledParams withTunedTile(codegen::GemmTiledParams p, const MatmulArgs& a,
                                       const vk::Device& device) {
  const tuning::GemmChoice* c =
      tuning::findGemm(deviceTuning(device),
                       gemmShape(a.M, a.N, a.K, a.batch, a.transA, a.transB, codegen::isHalf(a.outType)));
  if (!c || !c->tiled) return p;
  codegen::GemmTiledParams tuned = p;
  try {
    tuned.tile = codegen::GemmTile::parse(*c->tiled);
    tuned.validate(gemmDeviceLimits(device));
  } catch (const std::invalid_argument&) {
    return p; // a file from a device with other limits: the menu's choice stays
  }
  return tuned;
}

} // namespace

codegen::GemmTiledParams matmulTiledPlan(const MatmulArgs& args, const vk::Device& device) {
  const codegen::GemmTiledParams p = matmulTiledParams(args, gemmDeviceLimits(device));
  return args.tile ? p : withTunedTile(p, args, device);
}

void matmul(Executor& exec, const MatmulArgs& args) {
  checkMatmulArgs(args);
  const vk::Device& device = exec.context().device();
  requireElem(device, args.aType, "matmul");
  requireElem(device, args.outType, "matmul");
  requireElem(device, args.roundTo, "matmul");
  // Cooperative matrices (matmul_coop.hpp): Coop forces them, Auto asks the policy when the device has them.
  if (args.kernel == MatmulKernel::Coop ||
      (args.kernel == MatmulKernel::Auto && !args.tile && coopDeviceInfo(device).coopMatrix)) {
    matmulCoop(exec, args, {}, args.kernel == MatmulKernel::Coop);
    return;
  }
  if (args.roundTo != Elem::F32) {
    matmul(exec, withHalfCopies(exec, args));
    return;
  }
  const codegen::GemmDeviceLimits limits = gemmDeviceLimits(device);
  const codegen::GemmTiledParams params = matmulTiledPlan(args, device);
  params.validate(limits); // a forced tile that does not fit throws here, before any pipeline exists
  const vk::Pipeline& pipeline = exec.pipeline(
      params, [&](const codegen::GemmTiledParams& p) { return codegen::generateGemmTiled(p, limits); });

  struct Push {
    uint32_t M, N, K;
    float alpha, beta;
    uint32_t strideA, strideB, strideC;
  };
  const uint64_t M = args.M, N = args.N, K = args.K;
  const Push push{args.M,
                  args.N,
                  args.K,
                  args.alpha,
                  args.beta,
                  strideOf(args.strideA, M * K),
                  strideOf(args.strideB, K * N),
                  strideOf(args.strideC, M * N)};
  const Access cAccess = args.beta != 0.0f ? Access::ReadWrite : Access::Write;
  std::array<Binding, 4> bindings{Binding{args.a, Access::Read}, Binding{args.b, Access::Read},
                                  Binding{args.c, cAccess}, Binding{args.bias, Access::Read}};
  const size_t numBindings = params.bias ? 4 : 3;
  const vk::Groups groups{(args.N + params.tile.BN - 1) / params.tile.BN,
                          (args.M + params.tile.BM - 1) / params.tile.BM, args.batch};
  exec.dispatch(pipeline, std::span<const Binding>(bindings.data(), numBindings), &push,
                pipeline.pushConstantBytes, groups);
}

} // namespace helios::ops
