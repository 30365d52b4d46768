#include "engine/ops/slice3d.hpp"

#include "engine/ops/elementwise.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace helios::ops {

namespace {

std::string dims(uint64_t b, uint64_t r, uint64_t c) {
  return std::to_string(b) + " x " + std::to_string(r) + " x " + std::to_string(c);
}

void run(Executor& exec, vk::BufferRange src, vk::BufferRange dst, const Slice3dShape& s, Elem type,
         bool scatter) {
  const char* op = scatter ? "ops::scatterSlice3d" : "ops::slice3d";
  const uint32_t srcStride = s.srcRowStride ? s.srcRowStride : s.srcCols;
  const uint32_t dstStride = s.dstRowStride ? s.dstRowStride : s.dstCols;
  if (srcStride < s.srcCols)
    throw std::invalid_argument(std::string(op) + ": srcRowStride " + std::to_string(srcStride) +
                                " < srcCols " + std::to_string(s.srcCols));
  if (dstStride < s.dstCols)
    throw std::invalid_argument(std::string(op) + ": dstRowStride " + std::to_string(dstStride) +
                                " < dstCols " + std::to_string(s.dstCols));
  if (scatter) {
    if (s.rowOffset < 0 || s.colOffset < 0)
      throw std::invalid_argument(std::string(op) + ": offsets must be >= 0, got (" +
                                  std::to_string(s.rowOffset) + ", " + std::to_string(s.colOffset) + ")");
    if (uint64_t(s.rowOffset) + s.srcRows > s.dstRows || uint64_t(s.colOffset) + s.srcCols > s.dstCols)
      throw std::invalid_argument(std::string(op) + ": a " + std::to_string(s.srcRows) + " x " +
                                  std::to_string(s.srcCols) + " window at (" + std::to_string(s.rowOffset) +
                                  ", " + std::to_string(s.colOffset) + ") does not fit in dst " +
                                  std::to_string(s.dstRows) + " x " + std::to_string(s.dstCols));
  }
  const uint64_t srcElems = uint64_t(s.batch) * s.srcRows * srcStride;
  const uint64_t dstElems = uint64_t(s.batch) * s.dstRows * dstStride;
  if (srcElems > 0xffffffffull || dstElems > 0xffffffffull)
    throw std::invalid_argument(std::string(op) + ": more elements than 32-bit indexing allows");
  const uint64_t elemBytes = codegen::elemBytes(type);
  // The last row needs only cols elements, not a full stride.
  const auto need = [](uint64_t batch, uint64_t rows, uint64_t cols, uint64_t stride) {
    return batch == 0 || rows == 0 || cols == 0 ? 0 : ((batch * rows - 1) * stride + cols);
  };
  const uint64_t srcNeed = need(s.batch, s.srcRows, s.srcCols, srcStride) * elemBytes;
  const uint64_t dstNeed = need(s.batch, s.dstRows, s.dstCols, dstStride) * elemBytes;
  if (src.size != 0 && src.size < srcNeed)
    throw std::invalid_argument(std::string(op) + ": src holds " + std::to_string(src.size) +
                                " bytes, needs " + std::to_string(srcNeed) + " (" +
                                dims(s.batch, s.srcRows, s.srcCols) + ")");
  if (dst.size != 0 && dst.size < dstNeed)
    throw std::invalid_argument(std::string(op) + ": dst holds " + std::to_string(dst.size) +
                                " bytes, needs " + std::to_string(dstNeed) + " (" +
                                dims(s.batch, s.dstRows, s.dstCols) + ")");
  requireElem(exec.context().device(), type, op);

  const uint32_t rows = scatter ? s.srcRows : s.dstRows, cols = scatter ? s.srcCols : s.dstCols;
  if (s.batch == 0 || rows == 0 || cols == 0) return;
  codegen::Slice3dPush push;
  push.batch = s.batch;
  push.srcRows = s.srcRows;
  push.srcCols = s.srcCols;
  push.dstRows = s.dstRows;
  push.dstCols = s.dstCols;
  push.srcRowStride = srcStride;
  push.dstRowStride = dstStride;
  push.srcBatchStride = s.srcRows * srcStride;
  push.dstBatchStride = s.dstRows * dstStride;
  push.rowOffset = s.rowOffset;
  push.colOffset = s.colOffset;
  const codegen::Slice3dParams params{type, scatter, cols <= 64 ? 64u : 256u};
  const vk::Pipeline& pipe =
      exec.pipeline(params, [](const codegen::Slice3dParams& p) { return codegen::generateSlice3d(p); });
  const auto& lim = exec.context().device().limits().maxComputeWorkGroupCount;
  const vk::Groups groups{gridStrideGroups(exec.context(), cols, params.localSize),
                          std::min<uint32_t>({rows, lim[1], 65535u}),
                          std::min<uint32_t>({s.batch, lim[2], 65535u})};
  exec.dispatch(pipe, {{src, Access::Read}, {dst, scatter ? Access::ReadWrite : Access::Write}}, push,
                groups);
}

} // namespace

void slice3d(Executor& exec, vk::BufferRange src, vk::BufferRange dst, const Slice3dShape& shape, Elem type) {
  run(exec, src, dst, shape, type, false);
}

void scatterSlice3d(Executor& exec, vk::BufferRange src, vk::BufferRange dst, const Slice3dShape& shape,
                    Elem type) {
  run(exec, src, dst, shape, type, true);
}

} // namespace helios::ops
