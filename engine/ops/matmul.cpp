#include "engine/ops/matmul.hpp"
#include "engine/ops/coop_stats.hpp"
#include "engine/ops/elem_support.hpp"
#include "engine/ops/gemm_plan.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "engine/ops/matmul_tiled.hpp"

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
    const uint64_t sA = batchStride(a.strideA, sizeA), sB = batchStride(a.strideB, sizeB),
                   sC = batchStride(a.strideC, sizeC);
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
  return storedDeviceProfile(device).limits;
}

MatmulDType matmulOperands(const MatmulArgs& args) {
  return args.aType == Elem::F32 ? args.roundTo : args.aType;
}

void matmul(Executor& exec, const MatmulArgs& args) {
  checkMatmulArgs(args);
  const vk::Device& device = exec.context().device();
  requireElem(device, args.aType, "matmul");
  requireElem(device, args.outType, "matmul");
  requireElem(device, args.roundTo, "matmul");
  const GemmPlan plan = planGemm(args, deviceProfile(device));
  if (plan.coop) coopStats().record(*plan.coop);
  if (plan.family == GemmFamily::Coop)
    runCoopGemm(exec, plan, args);
  else
    runTiledGemm(exec, plan, args);
}

} // namespace helios::ops
