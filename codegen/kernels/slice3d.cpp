#include "codegen/kernels/slice3d.hpp"

#include <stdexcept>
#include <vector>

#include "codegen/kernels/elem_io.hpp"
#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

std::string Slice3dParams::cacheKey() const {
  return std::string("slice3d:") + elemName(type) + (scatter ? ":scatter" : ":gather") + ":wg" +
         std::to_string(localSize);
}

Kernel generateSlice3d(const Slice3dParams& p) {
  if (p.localSize == 0 || p.localSize > 1024)
    throw std::invalid_argument("slice3d: localSize must be in [1, 1024], got " +
                                std::to_string(p.localSize));
  using spv::Value;
  spv::Module m;
  const spv::TypeId u32 = m.u32(), i32 = m.i32();
  const spv::TypeId elem = elemStorageType(m, p.type);
  const spv::Buffer src = m.storageBuffer(0, elem, spv::Access::ReadOnly);
  const spv::Buffer dst =
      m.storageBuffer(1, elem, p.scatter ? spv::Access::ReadWrite : spv::Access::WriteOnly);
  const spv::PushConstants pc = declarePush<Slice3dPush>(m);
  spv::FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  const Value batch = f.loadPush(pc, 0), srcRows = f.loadPush(pc, 1), srcCols = f.loadPush(pc, 2);
  const Value dstRows = f.loadPush(pc, 3), dstCols = f.loadPush(pc, 4);
  const Value srcRowStride = f.loadPush(pc, 5), dstRowStride = f.loadPush(pc, 6);
  const Value srcBatchStride = f.loadPush(pc, 7), dstBatchStride = f.loadPush(pc, 8);
  const Value rowOffset = f.loadPush(pc, 9), colOffset = f.loadPush(pc, 10);
  const Value strideX = f.imul(f.builtin(spv::BuiltIn::NumWorkgroups, 0), f.u32(p.localSize));
  const Value strideY = f.builtin(spv::BuiltIn::NumWorkgroups, 1);
  const Value strideZ = f.builtin(spv::BuiltIn::NumWorkgroups, 2);
  // The iteration space is the written (gather: dst) or read (scatter: src) matrix; the other side is
  // addressed at (i + rowOffset, j + colOffset) and bounds-checked with signed arithmetic.
  const Value rows = p.scatter ? srcRows : dstRows, cols = p.scatter ? srcCols : dstCols;
  const Value otherRows = f.convert(p.scatter ? dstRows : srcRows, i32);
  const Value otherCols = f.convert(p.scatter ? dstCols : srcCols, i32);
  const Value zeroI = f.i32(0);
  f.forRange(f.workgroupId(2), batch, strideZ, [&](Value b) {
    const Value srcBase = f.imul(b, srcBatchStride), dstBase = f.imul(b, dstBatchStride);
    f.forRange(f.workgroupId(1), rows, strideY, [&](Value i) {
      const Value oi = f.iadd(f.convert(i, i32), rowOffset);
      const Value rowInside = f.logicalAnd(f.ge(oi, zeroI), f.lt(oi, otherRows));
      const Value oiU = f.convert(oi, u32);
      // Row starts of the iterated matrix and the other one (the latter only used when inside).
      const Value iterRow =
          p.scatter ? f.iadd(srcBase, f.imul(i, srcRowStride)) : f.iadd(dstBase, f.imul(i, dstRowStride));
      const Value otherRow =
          p.scatter ? f.iadd(dstBase, f.imul(oiU, dstRowStride)) : f.iadd(srcBase, f.imul(oiU, srcRowStride));
      f.forRange(f.globalId(0), cols, strideX, [&](Value j) {
        const Value oj = f.iadd(f.convert(j, i32), colOffset);
        const Value inside = f.logicalAnd(rowInside, f.logicalAnd(f.ge(oj, zeroI), f.lt(oj, otherCols)));
        const Value otherIdx = f.iadd(otherRow, f.convert(oj, u32));
        const Value iterIdx = f.iadd(iterRow, j);
        if (p.scatter) {
          f.ifThen(inside, [&] { f.storeAt(dst, otherIdx, f.loadAt(src, iterIdx)); });
        } else {
          f.ifThenElse(
              inside, [&] { f.storeAt(dst, iterIdx, f.loadAt(src, otherIdx)); },
              [&] { f.storeAt(dst, iterIdx, f.constant(elem, 0.0)); });
        }
      });
    });
  });
  f.ret();
  std::string name = std::string("slice3d_") + (p.scatter ? "scatter_" : "gather_") + elemName(p.type) +
                     "_wg" + std::to_string(p.localSize);
  return linearKernel(std::move(name), p.cacheKey(), m.build(), 2, pc.size, p.localSize);
}

void registerSlice3d(KernelRegistry& registry) {
  registry.add({"slice3d",
                "batched pad/crop (gather, zeros outside src) and scatter-back into a window, f32/f16/bf16",
                [] { return generateSlice3d({}); },
                [] {
                  std::vector<Kernel> ks;
                  for (Elem t : {Elem::F32, Elem::F16, Elem::BF16})
                    for (bool scatter : {false, true})
                      for (uint32_t ls : {64u, 256u})
                        ks.push_back(generateSlice3d({t, scatter, ls}));
                  return ks;
                }});
}

} // namespace helios::codegen
