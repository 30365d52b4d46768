#include "codegen/kernels/attention_coop_emitter.hpp"

#include "codegen/kernels/elem_io.hpp"
#include "codegen/kernels/half_pack.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace helios::codegen::detail {

using namespace helios::spv;

AttentionCoopEmitter::AttentionCoopEmitter(const AttentionCoopParams& p)
    : p_(p), d8_(p.headDim / 8), rowVecs_(p.headDim / 8 + p.pad), blocks_(p.headDim / p.coopN),
      aBlocks_(p.headDim / p.coopK), lanes_(p.lanesPerRow()), rowsPerLane_(p.rowsPerLane()),
      m_(spv::ModuleOptions{.coopLowerSubgroup = p.lowered ? p.subgroupSize : 0}) {}

void AttentionCoopEmitter::declareTypes() {
  f32_ = m_.f32();
  half_ = elemStorageType(m_, p_.operands); // f16, or uint16 bits of bf16
  u32_ = m_.u32();
  uvec4_ = m_.vectorType(u32_, 4);
  vec4_ = m_.vectorType(f32_, 4);
  ta_ = halfCoopType(m_, p_.operands, p_.coopM, p_.coopK, CoopUse::MatrixAKHR);
  tb_ = halfCoopType(m_, p_.operands, p_.coopK, p_.coopN, CoopUse::MatrixBKHR);
  tc_ = m_.coopMatrixType(f32_, p_.coopM, p_.coopN, CoopUse::MatrixAccumulatorKHR);
  pc_ = declarePush<AttentionCoopPush>(m_);
}

void AttentionCoopEmitter::beginMain() {
  f_ = &m_.entryPoint("main", {p_.invocations(), 1, 1});
  Tq_ = f().loadPush(pc_, 0);
  Tk_ = f().loadPush(pc_, 1);
  H_ = f().loadPush(pc_, 2);
  Hkv_ = f().loadPush(pc_, 3);
  scale_ = f().loadPush(pc_, 4);
  for (uint32_t l = 0; l < 3; ++l)
    for (uint32_t e = 0; e < 3; ++e)
      layout_[l][e] = f().loadPush(pc_, 5 + 3 * l + e);
  scaleLog2e_ = f().fmul(scale_, f().f32(kLog2e));
  lid_ = f().localId(0);
  sgId_ = f().builtin(BuiltIn::SubgroupId);
  sg_ = sgId_;
  split_ = c(0);
  if (p_.keySplits > 1) {
    sg_ = f().rem(sgId_, c(p_.subgroups));
    split_ = f().udiv(sgId_, c(p_.subgroups));
  }
  const Value lane = f().builtin(BuiltIn::SubgroupLocalInvocationId);
  // Lanes per row and rows per lane are powers of two (validate()): lane = row * lanes + part, or (several
  // rows per lane) rows lane, lane + subgroupSize, ...
  if (lanes_ > 1) {
    uint32_t shift = 0;
    while ((1u << shift) < lanes_)
      ++shift;
    rowInSg_ = {f().shr(lane, c(shift))};
    part_ = f().bitAnd(lane, c(lanes_ - 1));
  } else {
    for (uint32_t i = 0; i < rowsPerLane_; ++i)
      rowInSg_.push_back(i ? f().iadd(lane, c(i * p_.subgroupSize)) : lane);
    part_ = c(0);
  }
  zeroAcc_ = f().coopFill(tc_, f().f32(0.0f));
}

AttentionCoopEmitter::StagingAreas AttentionCoopEmitter::declareStaging() {
  const uint32_t tiles = p_.tile * p_.keySplits; // rows of each stream
  const Value array = m_.workgroupArray(uvec4_, p_.stagedVectors());
  staged_ = array;
  StagingAreas areas{{array, 0}, {array, 0}, {array, tiles * rowVecs_}, {array, 2 * tiles * rowVecs_}};
  if (p_.keySplits > 1) areas.first.base = areas.second.base = f().imul(split_, c(p_.tile * rowVecs_));
  return areas;
}

AttentionCoopEmitter::StagingAreas AttentionCoopEmitter::declarePass(uint32_t& pushBytes, uint32_t docBinding,
                                                                     uint32_t docCount,
                                                                     const std::function<void()>& buffers) {
  declareTypes();
  declareQkv();
  buffers();
  declareDocuments(docBinding, docCount);
  pushBytes = pc_.size;
  beginMain();
  return declareStaging();
}

void AttentionCoopEmitter::declareQueryPass(uint32_t& pushBytes, uint32_t docBinding,
                                            const std::function<void()>& buffers) {
  const StagingAreas staged = declarePass(pushBytes, docBinding, p_.rows(), buffers);
  shRows_ = staged.rows;
  shK_ = staged.first;
  shV_ = staged.second;
}

void AttentionCoopEmitter::declareQkv() {
  // 16-bit rows are read as 16-byte vectors of 8 halves, just as fetch() packs f32 rows.
  const auto rows = [&](uint32_t binding) {
    return isHalf(p_.qkv) ? m_.storageBuffer(binding, uvec4_, Access::ReadOnly) : inputRows(binding);
  };
  q_ = rows(0);
  k_ = rows(1);
  v_ = rows(2);
}

void AttentionCoopEmitter::declareDocuments(uint32_t binding, uint32_t count) {
  if (!documents()) return;
  positions_ = m_.storageBuffer(binding, u32_, Access::ReadOnly);
  starts_ = m_.workgroupArray(u32_, count);
}

Value AttentionCoopEmitter::docStart(Value b, Value i) {
  return satSub(i, f().loadAt(positions_, f().iadd(f().imul(b, Tq_), i)));
}

void AttentionCoopEmitter::stageStarts(Value b, Value first, uint32_t count) {
  const uint32_t n = p_.invocations();
  for (uint32_t e = 0; e * n < count; ++e) {
    const Value r = f().iadd(lid_, c(e * n));
    const auto body = [&] {
      const Value row = f().umin(f().iadd(first, r), f().isub(Tq_, c(1)));
      f().store(f().accessChain(starts_, {r}), docStart(b, row));
    };
    if ((e + 1) * n <= count)
      body();
    else
      f().ifThen(f().lt(r, c(count)), body);
  }
}

HeadRows AttentionCoopEmitter::headRows(uint32_t layout, Value b, Value h) {
  const Value* l = layout_[layout];
  return {f().iadd(f().imul(b, l[2]), f().imul(h, l[1])), l[0]};
}

void AttentionCoopEmitter::ownQueryRows() {
  const Value bh = f().workgroupId(1), b = f().udiv(bh, H_), h = f().rem(bh, H_);
  batch_ = b;
  qAt_ = headRows(0, b, h);
  kvAt_ = headRows(1, b, f().udiv(h, f().udiv(H_, Hkv_)));
  oAt_ = headRows(2, b, h);
  lseBase_ = f().imul(bh, Tq_);
  Value block = f().workgroupId(0);
  if (p_.causal) // the last row blocks see the most keys: hand them out first (shorter tail)
    block = f().isub(f().isub(f().udiv(f().iadd(Tq_, c(p_.rows() - 1)), c(p_.rows())), c(1)), block);
  blockRow_ = f().imul(block, c(p_.rows()));
  for (const Value& r : rowInSg_)
    rows_.push_back(f().iadd(blockRow_, f().iadd(f().imul(sg_, c(p_.coopM)), r)));
}

AttentionCoopEmitter::KeyWalk AttentionCoopEmitter::startKeyWalk(const Staging& shK, const Staging& shV) {
  const Value lastRow = f().umin(f().iadd(blockRow_, c(p_.rows() - 1)), f().isub(Tq_, c(1)));
  KeyWalk w{tileStream(shK, k_, kvAt_, Tk_),
            tileStream(shV, v_, kvAt_, Tk_),
            f().udiv(f().iadd(keyLimit(lastRow), c(p_.tile - 1)), c(p_.tile)),
            {},
            c(0)};
  if (documents()) { // tiles before the first row's start hold no key any row of the block sees
    const Value firstTile = f().udiv(docStart(batch_, blockRow_), c(p_.tile));
    w.tiles = f().isub(w.tiles, firstTile);
    w.first = f().imul(firstTile, c(p_.tile));
  }
  if (p_.keySplits > 1) {
    w.tiles = f().udiv(f().iadd(w.tiles, c(p_.keySplits - 1)), c(p_.keySplits)); // per group
    w.ks.splitStride = w.vs.splitStride = f().imul(w.tiles, c(p_.tile));
    w.splitFirst = f().imul(split_, w.ks.splitStride);
  }
  begin(w.ks, w.first);
  begin(w.vs, w.first);
  return w;
}

void AttentionCoopEmitter::walkKeyTiles(KeyWalk& w, const std::function<void(Value)>& body) {
  f().forRange(c(0), w.tiles, [&](Value t) {
    Value t0 = f().imul(t, c(p_.tile));
    if (documents()) t0 = f().iadd(t0, w.first);
    const Value t1 = f().iadd(t0, c(p_.tile));
    next(w.ks, t0, t1);
    next(w.vs, t0, t1);
    body(w.splitFirst.valid() ? f().iadd(t0, w.splitFirst) : t0);
  });
}

Buffer AttentionCoopEmitter::inputRows(uint32_t binding) {
  return m_.storageBuffer(binding, vec4_, Access::ReadOnly);
}

Buffer AttentionCoopEmitter::outputRows(uint32_t binding) {
  return m_.storageBuffer(binding, isHalf(p_.out) ? uvec4_ : vec4_, Access::WriteOnly);
}

std::vector<Value> AttentionCoopEmitter::fetch(const Buffer& rows, const HeadRows& head, Value first,
                                               uint32_t count, Value total, Value splitStride) {
  const uint32_t vecs = count * d8_, n = p_.invocations();
  const Value zero = m_.constComposite(uvec4_, {c(0), c(0), c(0), c(0)});
  const Value last = f().isub(total, c(1));
  std::vector<Value> regs;
  for (uint32_t e = 0; e < (vecs + n - 1) / n; ++e) {
    // A trailing partial pass reads a valid vector and put() skips the store.
    const Value idx = f().umin(f().iadd(lid_, c(e * n)), c(vecs - 1));
    const Value r = f().udiv(idx, c(d8_));
    const Value row = splitStride.valid()
                          ? f().iadd(f().iadd(first, f().imul(f().udiv(r, c(p_.tile)), splitStride)),
                                     f().rem(r, c(p_.tile)))
                          : f().iadd(first, r);
    // A row past the end reads the last row and yields zeros.
    const Value at =
        f().iadd(f().iadd(head.base, f().imul(f().umin(row, last), head.stride)), f().rem(idx, c(d8_)));
    const Value h8 =
        rows.element == uvec4_ ? f().loadAt(rows, at) : loadF32AsHalf8(f(), rows, at, p_.operands);
    regs.push_back(f().select(f().lt(row, total), h8, zero));
  }
  return regs;
}

void AttentionCoopEmitter::put(const Staging& shared, const std::vector<Value>& regs, uint32_t count) {
  const uint32_t vecs = count * d8_, n = p_.invocations();
  for (uint32_t e = 0; e < regs.size(); ++e) {
    const Value idx = f().iadd(lid_, c(e * n));
    const auto body = [&] {
      const Value at =
          p_.pad ? f().iadd(f().imul(f().udiv(idx, c(d8_)), c(rowVecs_)), f().rem(idx, c(d8_))) : idx;
      f().store(f().accessChain(shared.array, {f().iadd(at, c(shared.offset))}), regs[e]);
    };
    if ((e + 1) * n <= vecs)
      body();
    else
      f().ifThen(f().lt(idx, c(vecs)), body);
  }
}

void AttentionCoopEmitter::stage(const Staging& shared, const Buffer& rows, const HeadRows& at, Value first,
                                 uint32_t count, Value total) {
  put(shared, fetch(rows, at, first, count, total), count);
}

AttentionCoopEmitter::TileStream AttentionCoopEmitter::tileStream(const Staging& shared, const Buffer& rows,
                                                                  const HeadRows& at, Value total) {
  return {shared, &rows, at, total, {}, p_.tile * p_.keySplits, {}};
}

void AttentionCoopEmitter::begin(TileStream& s, Value first) {
  if (!p_.prefetch) return;
  for (const Value& r : fetch(*s.rows, s.at, first, s.count, s.total, s.splitStride)) {
    s.held.push_back(f().variable(uvec4_));
    f().store(s.held.back(), r);
  }
}

void AttentionCoopEmitter::next(TileStream& s, Value first, Value nextFirst) {
  if (!p_.prefetch) {
    put(s.shared, fetch(*s.rows, s.at, first, s.count, s.total, s.splitStride), s.count);
    return;
  }
  std::vector<Value> regs;
  for (const Value& v : s.held)
    regs.push_back(f().load(v));
  put(s.shared, regs, s.count);
  const auto ahead = fetch(*s.rows, s.at, nextFirst, s.count, s.total, s.splitStride);
  for (size_t i = 0; i < ahead.size(); ++i)
    f().store(s.held[i], ahead[i]);
}

std::vector<Value> AttentionCoopEmitter::ownedRowsAsA(const Staging& shared, const Buffer& rows,
                                                      const HeadRows& at, Value total) {
  stage(shared, rows, at, blockRow_, p_.rows(), total);
  f().workgroupBarrier();
  std::vector<Value> a = loadA(shared, f().imul(sg_, c(p_.coopM)));
  f().workgroupBarrier();
  return a;
}

std::vector<Value> AttentionCoopEmitter::loadA(const Staging& shared, Value row) {
  std::vector<Value> out;
  Value at = f().imul(row, c(rowVecs_));
  if (shared.base.valid()) at = f().iadd(at, shared.base);
  for (uint32_t d = 0; d < aBlocks_; ++d)
    out.push_back(
        f().coopLoad(ta_, f().accessChain(shared.array, {f().iadd(at, c(shared.offset + d * p_.coopK / 8))}),
                     c(rowVecs_), CoopLayout::RowMajorKHR));
  return out;
}

Value AttentionCoopEmitter::tileB(const Staging& tile, uint32_t kb, uint32_t d, CoopLayout layout) {
  const bool columns = layout == CoopLayout::ColumnMajorKHR;
  const uint32_t row = kb * (columns ? p_.coopN : p_.coopK), col = d * (columns ? p_.coopK : p_.coopN) / 8;
  const Value at = c(tile.offset + row * rowVecs_ + col);
  return f().coopLoad(tb_, f().accessChain(tile.array, {tile.base.valid() ? f().iadd(tile.base, at) : at}),
                      c(rowVecs_), layout);
}

FunctionId AttentionCoopEmitter::combineFunction(const char* name, const Binary& op) {
  FunctionBuilder& fn = m_.function(name, f32_, {f32_, f32_});
  fn.ret(op(fn, fn.param(0), fn.param(1)));
  return fn.id();
}

FunctionId AttentionCoopEmitter::elementFunction(const char* name, const Binary& op) {
  FunctionBuilder& fn = m_.function(name, f32_, {u32_, u32_, f32_, f32_});
  fn.ret(op(fn, fn.param(2), fn.param(3)));
  return fn.id();
}

namespace {

// With documents: also the query's staged start at starts[start0 + r] at most key j.
Value withinDocument(FunctionBuilder& fn, Value sees, Value starts, Value start0, Value r, Value j) {
  return fn.logicalAnd(sees, fn.le(fn.load(fn.accessChain(starts, {fn.iadd(start0, r)})), j));
}

} // namespace

FunctionId AttentionCoopEmitter::scoreMaskFunction() {
  std::vector<TypeId> params{u32_, u32_, f32_, u32_, u32_};
  if (documents()) params.push_back(u32_);
  FunctionBuilder& fn = m_.function("score_mask", f32_, params);
  const Value i = fn.iadd(fn.param(3), fn.param(0)), j = fn.iadd(fn.param(4), fn.param(1));
  const Value tq = fn.loadPush(pc_, 0), tk = fn.loadPush(pc_, 1);
  Value sees = fn.logicalAnd(fn.lt(i, tq), fn.lt(j, tk));
  if (p_.causal) sees = fn.logicalAnd(sees, fn.le(fn.iadd(j, tq), fn.iadd(i, tk)));
  if (documents()) sees = withinDocument(fn, sees, starts_, fn.param(5), fn.param(0), j);
  fn.ret(fn.select(sees, fn.param(2), fn.f32(kMasked)));
  return fn.id();
}

FunctionId AttentionCoopEmitter::probabilityFunction(bool transposed) {
  std::vector<TypeId> params{u32_, u32_, f32_, u32_, u32_, f32_, f32_};
  if (documents()) params.push_back(u32_);
  FunctionBuilder& fn = m_.function(transposed ? "probability_t" : "probability", f32_, params);
  Value i = fn.iadd(fn.param(3), fn.param(0)), j = fn.iadd(fn.param(4), fn.param(1));
  if (transposed) std::swap(i, j);
  const Value tq = fn.loadPush(pc_, 0), tk = fn.loadPush(pc_, 1);
  Value sees = fn.logicalAnd(fn.lt(i, tq), fn.lt(j, tk));
  if (p_.causal) sees = fn.logicalAnd(sees, fn.le(fn.iadd(j, tq), fn.iadd(i, tk)));
  if (documents())
    sees = withinDocument(fn, sees, starts_, fn.param(7), transposed ? fn.param(1) : fn.param(0), j);
  fn.ret(fn.select(sees, fn.exp2(fn.fma(fn.param(2), fn.param(6), fn.fneg(fn.param(5)))), fn.f32(0.0f)));
  return fn.id();
}

FunctionId AttentionCoopEmitter::unmaskedProbabilityFunction() {
  FunctionBuilder& fn = m_.function("probability_unmasked", f32_, {u32_, u32_, f32_, f32_, f32_});
  fn.ret(fn.exp2(fn.fma(fn.param(2), fn.param(4), fn.fneg(fn.param(3)))));
  return fn.id();
}

Value AttentionCoopEmitter::fullyVisible(Value q0, uint32_t nq, Value k0, uint32_t nk, Value lastStart) {
  Value all = f().logicalAnd(f().le(f().iadd(q0, c(nq)), Tq_), f().le(f().iadd(k0, c(nk)), Tk_));
  if (p_.causal) // the block's last key is seen by its first query
    all = f().logicalAnd(all, f().le(f().iadd(f().iadd(k0, c(nk - 1)), Tq_), f().iadd(q0, Tk_)));
  if (lastStart.valid()) // the block's first key is in its last query's document
    all = f().logicalAnd(all, f().le(lastStart, k0));
  return all;
}

std::vector<Value> AttentionCoopEmitter::unlessMasked(Value visible, const std::vector<Value>& in,
                                                      const std::function<Value(Value, uint32_t)>& plain,
                                                      const std::function<Value(Value, uint32_t)>& masked) {
  std::vector<Value> vars, out;
  for (size_t i = 0; i < in.size(); ++i)
    vars.push_back(f().variable(tc_));
  const auto fill = [&](const std::function<Value(Value, uint32_t)>& fn) {
    return [&, fn] {
      for (uint32_t i = 0; i < in.size(); ++i)
        f().store(vars[i], fn(in[i], i));
    };
  };
  f().ifThenElse(visible, fill(plain), fill(masked));
  for (const Value& v : vars)
    out.push_back(f().load(v));
  return out;
}

FunctionId AttentionCoopEmitter::columnFunction(const char* name, Value array) {
  FunctionBuilder& fn = m_.function(name, f32_, {u32_, u32_, f32_, u32_});
  fn.ret(fn.load(fn.accessChain(array, {fn.iadd(fn.param(3), fn.param(1))})));
  return fn.id();
}

// (Row ops only: 16 x 16 on 32 lanes, two per row.)
Value AttentionCoopEmitter::rowMatrix(Value scratch, Value v) {
  const Value mine = f().iadd(sBase_, laneOffset(0, 16, 8));
  for (uint32_t e = 0; e < 8; ++e)
    f().store(f().accessChain(scratch, {f().iadd(mine, c(e))}), v);
  subgroupBarrier();
  const Value m = f().coopLoad(tc_, f().accessChain(scratch, {sBase_}), c(16), CoopLayout::RowMajorKHR);
  subgroupBarrier();
  return m;
}

Value AttentionCoopEmitter::rowValue(Value scratch, Value matrix) {
  f().coopStore(f().accessChain(scratch, {sBase_}), matrix, c(16), CoopLayout::RowMajorKHR);
  subgroupBarrier();
  const Value v = f().load(f().accessChain(scratch, {f().iadd(sBase_, f().imul(rowInSg_[0], c(16)))}));
  subgroupBarrier();
  return v;
}

Value AttentionCoopEmitter::productBlock(const std::vector<Value>& xa, const Staging& tile, uint32_t kb) {
  Value acc = zeroAcc_;
  for (uint32_t d = 0; d < aBlocks_; ++d)
    acc = f().coopMulAdd(xa[d], tileB(tile, kb, d, CoopLayout::ColumnMajorKHR), acc);
  return acc;
}

Value AttentionCoopEmitter::addTileProduct(Value acc, const std::vector<Value>& wa, const Staging& tile,
                                           uint32_t d) {
  for (uint32_t kb = 0; kb < wa.size(); ++kb)
    acc = f().coopMulAdd(wa[kb], tileB(tile, kb, d, CoopLayout::RowMajorKHR), acc);
  return acc;
}

std::vector<Value> AttentionCoopEmitter::zeroAccs(uint32_t n) {
  std::vector<Value> out;
  for (uint32_t i = 0; i < n; ++i) {
    out.push_back(f().variable(tc_));
    f().store(out.back(), zeroAcc_);
  }
  return out;
}

void AttentionCoopEmitter::productT(Value dst, const std::vector<Value>& xa, const Staging& tile) {
  for (uint32_t kb = 0; kb < p_.tile / p_.coopN; ++kb)
    f().coopStore(f().accessChain(dst, {f().iadd(sBase_, c(kb * p_.coopN))}), productBlock(xa, tile, kb),
                  c(p_.tile), CoopLayout::RowMajorKHR);
}

void AttentionCoopEmitter::accumulate(const std::vector<Value>& accs, Value w, const Staging& tile) {
  std::vector<Value> wa;
  for (uint32_t kb = 0; kb < p_.tile / p_.coopK; ++kb)
    wa.push_back(f().coopLoad(ta_, f().accessChain(w, {f().iadd(sBase_, c(kb * p_.coopK))}), c(p_.tile),
                              CoopLayout::RowMajorKHR));
  for (uint32_t d = 0; d < blocks_; ++d)
    f().store(accs[d], addTileProduct(f().load(accs[d]), wa, tile, d));
}

void AttentionCoopEmitter::subgroupBarrier() {
  f().controlBarrier(Scope::Subgroup, Scope::Workgroup,
                     static_cast<uint32_t>(MemorySemanticsMask::AcquireRelease) |
                         static_cast<uint32_t>(MemorySemanticsMask::WorkgroupMemory));
}

Value AttentionCoopEmitter::satSub(Value a, Value b) {
  return f().select(f().ge(a, b), f().isub(a, b), c(0));
}

Value AttentionCoopEmitter::keyLimit(Value i) {
  return p_.causal ? f().umin(Tk_, satSub(f().iadd(f().iadd(i, c(1)), Tk_), Tq_)) : Tk_;
}

Value AttentionCoopEmitter::sees(Value i, Value j) {
  const Value inside = f().logicalAnd(f().lt(i, Tq_), f().lt(j, Tk_));
  return p_.causal ? f().logicalAnd(inside, f().le(f().iadd(j, Tq_), f().iadd(i, Tk_))) : inside;
}

Value AttentionCoopEmitter::laneOffset(uint32_t i, uint32_t rowStride, uint32_t partStride) {
  if (lanes_ == 1) return f().imul(rowInSg_[i], c(rowStride));
  return f().iadd(f().imul(rowInSg_[i], c(rowStride)), f().imul(part_, c(partStride)));
}

Value AttentionCoopEmitter::rowMax(Value v) {
  for (uint32_t x = 1; x < lanes_; x <<= 1)
    v = f().fmax(v, f().subgroupShuffleXor(v, c(x)));
  return v;
}

Value AttentionCoopEmitter::rowSum(Value v) {
  for (uint32_t x = 1; x < lanes_; x <<= 1)
    v = f().fadd(v, f().subgroupShuffleXor(v, c(x)));
  return v;
}

void AttentionCoopEmitter::writeRows(const std::vector<Value>& accs, const std::vector<Value>& scales,
                                     Value scratch, Value scratchBase, uint32_t scratchCols,
                                     const Buffer& out, const HeadRows& at, Value total) {
  // `width` columns (whole blocks) go through the scratch at once: enough that each lane of a row gets a
  // whole 8-column unit, where D and the scratch allow; lanes past `writers` then idle.
  uint32_t width = p_.coopN;
  while (width < 8 * lanes_ && p_.headDim % (2 * width) == 0 && 2 * width <= scratchCols)
    width *= 2;
  const uint32_t writers = std::min(lanes_, width / 8), units = width / 8 / writers, group = width / p_.coopN;
  std::vector<Value> mine, rowAt;
  for (uint32_t i = 0; i < rowsPerLane_; ++i) {
    mine.push_back(f().iadd(scratchBase, laneOffset(i, width, 8 * units)));
    // This lane's units of each chunk: 8-element unit rowAt + chunk * width / 8 + u (two vec4 from twice it).
    const Value first = f().iadd(at.base, f().imul(f().umin(rows_[i], f().isub(total, c(1))), at.stride));
    rowAt.push_back(lanes_ == 1 ? first : f().iadd(first, units == 1 ? part_ : f().imul(part_, c(units))));
  }
  for (uint32_t chunk = 0; chunk < blocks_ / group; ++chunk) {
    for (uint32_t j = 0; j < group; ++j)
      f().coopStore(f().accessChain(scratch, {j ? f().iadd(scratchBase, c(j * p_.coopN)) : scratchBase}),
                    f().load(accs[chunk * group + j]), c(width), CoopLayout::RowMajorKHR);
    subgroupBarrier();
    for (uint32_t i = 0; i < rowsPerLane_; ++i) {
      Value inside = f().lt(rows_[i], total);
      if (writers < lanes_) inside = f().logicalAnd(inside, f().lt(part_, c(writers)));
      const Value scale = scales[scales.size() == 1 ? 0 : i];
      f().ifThen(inside, [&] {
        for (uint32_t u = 0; u < units; ++u) {
          std::vector<Value> v4;
          for (uint32_t h = 0; h < 2; ++h) {
            const auto part = [&](uint32_t offset, Value by) {
              std::vector<Value> x;
              for (uint32_t e = 0; e < 4; ++e)
                x.push_back(
                    f().load(f().accessChain(scratch, {f().iadd(mine[i], c(offset + 8 * u + 4 * h + e))})));
              return f().vectorTimesScalar(f().construct(vec4_, x), by);
            };
            v4.push_back(part(0, scale));
          }
          const Value at8 = f().iadd(rowAt[i], c(chunk * width / 8 + u));
          if (isHalf(p_.out)) {
            f().storeAt(out, at8, packHalf8(f(), v4[0], v4[1], p_.operands));
          } else {
            for (uint32_t h = 0; h < 2; ++h)
              f().storeAt(out, f().iadd(f().imul(at8, c(2)), c(h)), v4[h]);
          }
        }
      });
    }
    subgroupBarrier();
  }
}

} // namespace helios::codegen::detail
