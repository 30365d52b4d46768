#include "codegen/kernels/gemm_coop_copies.hpp"

#include <algorithm>

#include "codegen/kernels/elem_io.hpp"
#include "codegen/kernels/half_pack.hpp"

namespace helios::codegen::coop {

using namespace helios::spv;

TileCopy tileA(const GemmCoopParams& p) {
  return p.stagedTransA() ? TileCopy{p.BK, p.BM / 8, (p.BM + p.padA) / 8}
                          : TileCopy{p.BM, p.BK / 8, (p.BK + p.padA) / 8};
}

TileCopy tileB(const GemmCoopParams& p) {
  return p.stagedTransB() ? TileCopy{p.BN, p.BK / 8, (p.BK + p.padB) / 8}
                          : TileCopy{p.BK, p.BN / 8, (p.BN + p.padB) / 8};
}

uint32_t stagedRowVecs(const GemmCoopParams& p) {
  return p.warpN() / 4 + 1;
}

uint32_t sharedAVecs(const GemmCoopParams& p) {
  const uint32_t stages = p.stages * tileA(p).stageVecs();
  if (!p.stagedStore && !p.bounded) return stages;
  return std::max(stages, p.subgroups() * p.coopM * stagedRowVecs(p));
}

std::vector<CopySlot> copySlots(FunctionBuilder& f, const TileCopy& t, uint32_t copiers, Value globalRowVecs,
                                Value tid, bool crosswise) {
  const auto c = [&f](uint32_t v) { return f.u32(v); };
  std::vector<CopySlot> slots;
  const uint32_t total = t.rows * t.vecsPerRow, n = copiers;
  if (crosswise) {
    // Only the bounded scalar copies read crosswise, and they address global memory by row and column.
    for (uint32_t i = 0; i < total / n; ++i) {
      const Value idx = f.iadd(tid, c(i * n));
      const Value row = f.rem(idx, c(t.rows)), col = f.udiv(idx, c(t.rows));
      slots.push_back({c(0), f.iadd(f.imul(row, c(t.sharedRowVecs)), col), row, col});
    }
    return slots;
  }
  if (n % t.vecsPerRow == 0) {
    // Slot i is slot 0 moved down i * n / vecsPerRow rows: one per-invocation offset plus uniform steps.
    const Value row = f.udiv(tid, c(t.vecsPerRow)), col = f.rem(tid, c(t.vecsPerRow));
    const Value g0 = f.iadd(f.imul(row, globalRowVecs), col),
                s0 = f.iadd(f.imul(row, c(t.sharedRowVecs)), col);
    const uint32_t rowsPerSlot = n / t.vecsPerRow;
    const Value gStep = f.imul(globalRowVecs, c(rowsPerSlot));
    for (uint32_t i = 0; i < total / n; ++i)
      slots.push_back({i ? f.iadd(g0, f.imul(gStep, c(i))) : g0,
                       f.iadd(s0, c(i * rowsPerSlot * t.sharedRowVecs)),
                       i ? f.iadd(row, c(i * rowsPerSlot)) : row, col});
    return slots;
  }
  for (uint32_t i = 0; i < total / n; ++i) {
    const Value idx = f.iadd(tid, c(i * n));
    const Value row = f.udiv(idx, c(t.vecsPerRow)), col = f.rem(idx, c(t.vecsPerRow));
    slots.push_back(
        {f.iadd(f.imul(row, globalRowVecs), col), f.iadd(f.imul(row, c(t.sharedRowVecs)), col), row, col});
  }
  return slots;
}

std::vector<Value> loadVectors(FunctionBuilder& f, const Buffer& buf, const std::vector<CopySlot>& slots,
                               Value origin, Value step, Value kt, uint32_t BK, Elem stored, Elem operands,
                               const Edge* edge) {
  const auto c = [&f](uint32_t v) { return f.u32(v); };
  const Value base = f.iadd(origin, f.imul(kt, step));
  std::vector<Value> regs;
  Value row0{}, col0{}, zero{};
  if (edge) {
    const Value k0 = f.imul(kt, c(BK));
    row0 = edge->kInRows ? f.iadd(edge->rowOrigin, k0) : edge->rowOrigin;
    col0 = edge->kInRows ? edge->colOrigin : f.iadd(edge->colOrigin, k0);
    zero = f.construct(f.module().vectorType(f.module().u32(), 4), {c(0), c(0), c(0), c(0)});
  }
  for (const CopySlot& s : slots) {
    const Value at = f.iadd(base, s.global);
    if (!edge) {
      regs.push_back(stored == Elem::F32 ? loadF32AsHalf8(f, buf, at, operands) : f.loadAt(buf, at));
      continue;
    }
    const Value inside = f.logicalAnd(f.lt(f.iadd(row0, s.row), edge->rows),
                                      f.lt(f.iadd(col0, f.shl(s.col, c(3))), edge->cols));
    regs.push_back(f.select(inside, f.loadAt(buf, f.umin(at, edge->last)), zero));
  }
  return regs;
}

// Only one value per vector stays live until the halves are packed, the count of them inside the matrix:
// indices are clamped to the binding (so no read leaves it) and die once the loads are issued (a predicate
// per half kept the 64x64x32 tiling at 255 registers with spills, where the unchecked kernel takes 146).
std::vector<Value> loadScalars(FunctionBuilder& f, const Buffer& buf, const std::vector<CopySlot>& slots,
                               const Edge& e, Value kt, uint32_t BK, ScalarCheck check, Elem kind) {
  const auto c = [&f](uint32_t v) { return f.u32(v); };
  Module& m = f.module();
  const Value k0 = f.imul(kt, c(BK));
  const Value row0 = e.kInRows ? f.iadd(e.rowOrigin, k0) : e.rowOrigin;
  const Value col0 = e.kInRows ? e.colOrigin : f.iadd(e.colOrigin, k0);
  const TypeId half = elemStorageType(m, kind);
  const TypeId h2 = m.vectorType(half, 2), uvec4 = m.vectorType(m.u32(), 4);
  const Value zero = m.constant(half, 0.0);
  const bool across = e.crosswise;
  std::vector<Value> regs;
  for (const CopySlot& s : slots) {
    const Value along = f.shl(s.col, c(3)); // the vector's first half, in its direction
    const Value row = f.iadd(row0, across ? along : s.row), col = f.iadd(col0, across ? s.row : along);
    std::vector<Value> halves, words;
    if (check == ScalarCheck::None) {
      const Value at = f.iadd(e.base, f.iadd(f.imul(row, e.ld), col));
      for (uint32_t i = 0; i < 8; ++i)
        halves.push_back(f.loadAt(buf, i ? f.iadd(at, across ? f.imul(e.ld, c(i)) : c(i)) : at));
    } else {
      // Halves lo..hi-1 lie inside. FromBelow: the start p along the halves may lie below 0 (u32 arithmetic
      // wrapped), so lo may be above 0.
      Value lo{}, hi{};
      if (check == ScalarCheck::FromBelow) {
        const Value p = across ? row : col, q = across ? col : row;
        const Value extent = across ? e.rows : e.cols, other = across ? e.cols : e.rows;
        const Value below = f.lt(c(0x7fffffffu), p);
        const Value inside = f.logicalAnd(f.lt(q, other), f.logicalOr(below, f.lt(p, extent)));
        lo = f.select(below, f.isub(c(0), p), c(0));
        hi = f.select(inside, f.umin(f.isub(extent, p), c(8)), c(0));
      } else {
        const Value inside = f.logicalAnd(f.lt(row, e.rows), f.lt(col, e.cols));
        const Value left = across ? f.isub(e.rows, row) : f.isub(e.cols, col);
        hi = f.select(inside, f.umin(left, c(8)), c(0));
      }
      const Value at = f.iadd(e.base, f.iadd(f.imul(row, e.ld), col));
      const auto masked = [&](uint32_t i, Value h) {
        const Value in = lo.valid() ? f.logicalAnd(f.ge(c(i), lo), f.lt(c(i), hi)) : f.lt(c(i), hi);
        return f.select(in, h, zero);
      };
      // (FromBelow masks each half as it is loaded, Edges after all 8 loads: the orders measured on the
      // H100.)
      for (uint32_t i = 0; i < 8; ++i) {
        const Value offset = across ? (i ? f.imul(e.ld, c(i)) : c(0)) : c(i);
        const Value h = f.loadAt(buf, f.umin(f.iadd(at, offset), e.last));
        halves.push_back(lo.valid() ? masked(i, h) : h);
      }
      if (!lo.valid())
        for (uint32_t i = 0; i < 8; ++i)
          halves[i] = masked(i, halves[i]);
    }
    for (uint32_t i = 0; i < 8; i += 2)
      words.push_back(f.bitcast(f.construct(h2, {halves[i], halves[i + 1]}), m.u32()));
    regs.push_back(f.construct(uvec4, words));
  }
  return regs;
}

void storeSlots(FunctionBuilder& f, Value shared, const std::vector<CopySlot>& slots,
                const std::vector<Value>& regs, Value stageOffset) {
  for (size_t i = 0; i < slots.size(); ++i)
    f.store(f.accessChain(shared, {f.iadd(stageOffset, slots[i].shared)}), regs[i]);
}

} // namespace helios::codegen::coop
