// The backward passes of the coop attention family (see attention_coop.hpp). Both recompute the scores from
// the forward's lse; neither writes the T x T matrices. Per step and subgroup, two coopM x tile blocks go
// through shared memory (the score S and dP = dO V^T, or their transposes), the lanes turn them into P and dS
// = P (dP - delta) as f16, and coop MulAdds fold those into accumulators that stay in registers for the whole
// walk (no per-row rescale is needed, unlike the forward's O).
//
// With p.rowOps (VK_NV_cooperative_matrix2 per-element operations and use conversions) the blocks stay in
// registers instead: P comes from a per-element function of S (the mask and exp(scale S - lse)), dS = P (dP -
// delta) is element-wise arithmetic on accumulators, and both convert straight into A operands; lse and delta
// enter as row-constant matrices (dQ) or column-constant ones read from the staged tile (dK/dV).
#include "codegen/kernels/attention_coop_emitter.hpp"
#include "codegen/kernels/half_pack.hpp"

#include <tuple>

namespace helios::codegen::detail {

using namespace helios::spv;

namespace {

// Shared scaffolding of the two passes: the per-subgroup scratch.
class BackwardEmitter : protected AttentionCoopEmitter {
protected:
  using AttentionCoopEmitter::AttentionCoopEmitter;

  void declareScratch() {
    if (p_.rowOps) { // only the 16 x 16 trips of setup and the final write
      shS_ = m_.workgroupArray(f32_, p_.allSubgroups() * 256);
      sBase_ = f().imul(sgId_, c(256));
      return;
    }
    const uint32_t n = p_.allSubgroups() * p_.coopM * p_.tile;
    shS_ = m_.workgroupArray(f32_, n);
    shDP_ = m_.workgroupArray(f32_, n);
    shDS_ = m_.workgroupArray(half_, n);
    sBase_ = f().imul(sgId_, c(p_.coopM * p_.tile));
  }

  // Columns of the scratch rows writeRows() may use.
  uint32_t scratchCols() const { return p_.rowOps ? 16 : p_.tile; }

  // This lane's tile / lanes entries of its scratch row i: index of entry 0.
  Value laneEntry(uint32_t i) { return f().iadd(sBase_, laneOffset(i, p_.tile, p_.tile / lanes_)); }

  Value shS_, shDP_, shDS_;
};

// dQ_i = scale * sum_j P_ij (dP_ij - delta_i) K_j, with delta_i = dO_i . O_i written out for the KV pass.
// Each subgroup owns coopM query rows and walks the key tiles its rows see.
class QueryGradEmitter : BackwardEmitter {
public:
  explicit QueryGradEmitter(const AttentionCoopParams& p) : BackwardEmitter(p) {}

  std::vector<uint32_t> build(uint32_t& pushBytes) {
    declareQueryPass(pushBytes, 8, [&] {
      o_ = isHalf(p_.out) ? m_.storageBuffer(3, uvec4_, Access::ReadOnly) : inputRows(3);
      dO_ = inputRows(4);
      lse_ = m_.storageBuffer(5, f32_, Access::ReadOnly);
      dQ_ = outputRows(6);
      delta_ = m_.storageBuffer(7, f32_, Access::WriteOnly);
    });
    declareScratch();
    setup();
    walkKeyTiles(walk_, [&](Value t0) { step(t0); });
    if (p_.keySplits > 1) { // the groups' partial dQ add up in group order
      f().workgroupBarrier();
      writeSplitRows(dq_, {{}, scale_}, dQ_, qAt_, Tq_);
    } else {
      writeRows(dq_, {scale_}, shS_, sBase_, scratchCols(), dQ_, qAt_, Tq_);
    }
    f().ret();
    return m_.build();
  }

private:
  void setup() {
    ownQueryRows();
    walk_ = startKeyWalk(shK_, shV_);
    for (uint32_t i = 0; i < rowsPerLane_; ++i)
      rowSetup(i);
    if (documents()) stageStarts(batch_, blockRow_, p_.rows()); // published by ownedRowsAsA's barrier
    qa_ = ownedRowsAsA(shRows_, q_, qAt_, Tq_);
    if (documents())
      for (const Value& row : rows_)
        start_.push_back(stagedStart(f().isub(row, blockRow_)));
    doa_ = ownedRowsAsA(shRows_, dO_, oAt_, Tq_);
    dq_ = zeroAccs(blocks_);
    if (p_.rowOps) {
      sgRow0_ = f().iadd(blockRow_, f().imul(sg_, c(16)));
      lseM_ = rowMatrix(shS_, f().fmul(lse_i_[0], f().f32(kLog2e))); // exp2 units
      deltaM_ = rowMatrix(shS_, delta_i_[0]);
      prob_ = probabilityFunction(false);
      unmasked_ = unmaskedProbabilityFunction();
    }
  }

  // Row i of this lane: its key limit and lse, and delta = dO . O over the row (written out), the row's
  // lanes each taking a share of its 8-element units.
  void rowSetup(uint32_t i) {
    const Value clamped = f().umin(rows_[i], f().isub(Tq_, c(1)));
    limit_.push_back(keyLimit(clamped));
    lse_i_.push_back(f().loadAt(lse_, f().iadd(lseBase_, clamped)));
    const uint32_t units = p_.headDim / 8;
    // Contiguous shares where the units split evenly over the lanes, else unit e * lanes + part (those past
    // the row add 0).
    const bool even = units % lanes_ == 0;
    const uint32_t per = (units + lanes_ - 1) / lanes_;
    const bool split = lanes_ > 1 && even;
    const Value share = split ? f().imul(part_, c(per)) : Value{}; // (emitted first: the H100's order)
    const Value row8 = f().iadd(oAt_.base, f().imul(clamped, oAt_.stride));
    const Value at8 = split ? f().iadd(row8, share) : row8;
    Value sum = f().f32(0.0f);
    for (uint32_t e = 0; e < per; ++e) {
      Value unit = c(e), inside{};
      if (!even) {
        const Value k = f().iadd(c(e * lanes_), part_);
        inside = f().lt(k, c(units));
        unit = f().umin(k, c(units - 1));
      }
      const Value u = f().iadd(at8, unit), v = f().imul(u, c(2));
      const Value dO0 = f().loadAt(dO_, v), dO1 = f().loadAt(dO_, f().iadd(v, c(1)));
      Value o0, o1;
      if (isHalf(p_.out)) {
        std::tie(o0, o1) = unpackHalf8(f(), f().loadAt(o_, u), p_.operands);
      } else {
        o0 = f().loadAt(o_, v);
        o1 = f().loadAt(o_, f().iadd(v, c(1)));
      }
      const Value dot = f().fadd(f().dot(dO0, o0), f().dot(dO1, o1));
      sum = f().fadd(sum, even ? dot : f().select(inside, dot, f().f32(0.0f)));
    }
    delta_i_.push_back(rowSum(sum));
    const Value row = rows_[i];
    Value writes = lanes_ == 1 ? f().lt(row, Tq_) : f().logicalAnd(f().lt(row, Tq_), f().eq(part_, c(0)));
    if (p_.keySplits > 1) writes = f().logicalAnd(writes, f().eq(split_, c(0)));
    f().ifThen(writes, [&] { f().storeAt(delta_, f().iadd(lseBase_, row), delta_i_[i]); });
  }

  // The row-ops step: S, dP, P and dS as accumulators, dS converted into A operands.
  void stepInRegisters(Value t0) {
    f().workgroupBarrier();
    const uint32_t kbs = p_.tile / 16;
    std::vector<Value> s, dp, dsa;
    for (uint32_t kb = 0; kb < kbs; ++kb) {
      s.push_back(productBlock(qa_, shK_, kb));   // S = Q K^T
      dp.push_back(productBlock(doa_, shV_, kb)); // dP = dO V^T
    }
    // Documents: the subgroup's first row in the staged starts, and its last row's start.
    const Value firstRow = documents() ? f().imul(sg_, c(16)) : Value{};
    const Value lastStart = documents() ? stagedStart(f().iadd(firstRow, c(15))) : Value{};
    const std::vector<Value> pr = unlessMasked(
        fullyVisible(sgRow0_, 16, t0, p_.tile, lastStart), s,
        [&](Value x, uint32_t) {
          return f().coopPerElement(x, unmasked_, {lseM_, scaleLog2e_});
        },
        [&](Value x, uint32_t kb) {
          std::vector<Value> args{sgRow0_, f().iadd(t0, c(16 * kb)), lseM_, scaleLog2e_};
          if (documents()) args.push_back(firstRow);
          return f().coopPerElement(x, prob_, args);
        });
    for (uint32_t kb = 0; kb < kbs; ++kb)
      dsa.push_back(f().coopConvert(f().fmul(pr[kb], f().fsub(dp[kb], deltaM_)), ta_));
    for (uint32_t d = 0; d < blocks_; ++d) // dQ += dS K
      f().store(dq_[d], addTileProduct(f().load(dq_[d]), dsa, shK_, d));
    f().workgroupBarrier();
  }

  // K and V of tile t0 are being stored by this step's stream calls.
  void step(Value t0) {
    if (p_.rowOps) return stepInRegisters(t0);
    f().workgroupBarrier();
    productT(shS_, qa_, shK_);   // S = Q K^T
    productT(shDP_, doa_, shV_); // dP = dO V^T
    subgroupBarrier();
    const uint32_t cols = p_.tile / lanes_;
    for (uint32_t r = 0; r < rowsPerLane_; ++r) {
      const Value at = laneEntry(r), col0 = lanes_ == 1 ? t0 : f().iadd(t0, f().imul(part_, c(cols)));
      for (uint32_t e = 0; e < cols; ++e) {
        const Value i = f().iadd(at, c(e));
        const Value s = f().load(f().accessChain(shS_, {i})), dp = f().load(f().accessChain(shDP_, {i}));
        const Value ex = f().exp(f().fsub(f().fmul(scale_, s), lse_i_[r]));
        Value seen = f().lt(f().iadd(col0, c(e)), limit_[r]);
        if (documents()) seen = f().logicalAnd(seen, f().ge(f().iadd(col0, c(e)), start_[r]));
        const Value p = f().select(seen, ex, f().f32(0.0f));
        f().store(f().accessChain(shDS_, {i}),
                  elemFromF32(f(), p_.operands, f().fmul(p, f().fsub(dp, delta_i_[r]))));
      }
    }
    subgroupBarrier();
    accumulate(dq_, shDS_, shK_); // dQ += dS K
    f().workgroupBarrier();
  }

  Buffer o_, dO_, lse_, dQ_, delta_;
  std::vector<Value> limit_, start_, lse_i_, delta_i_; // per row of this lane
  Value sgRow0_, lseM_, deltaM_;                       // row ops
  FunctionId prob_, unmasked_;
  std::vector<Value> qa_, doa_, dq_;
};

// dV_j = sum_i P_ij dO_i and dK_j = scale * sum_i P_ij (dP_ij - delta_i) Q_i over every query head of the
// group. Each subgroup owns coopM key rows and walks the query tiles that see them, working on the transposes
// (S^T = K Q^T, dP^T = V dO^T) so the key rows stay the accumulators' rows.
class KeyValueGradEmitter : BackwardEmitter {
public:
  explicit KeyValueGradEmitter(const AttentionCoopParams& p) : BackwardEmitter(p) {}

  std::vector<uint32_t> build(uint32_t& pushBytes) {
    const StagingAreas staged = declarePass(pushBytes, 8, p_.tile, [&] {
      dO_ = inputRows(3);
      lse_ = m_.storageBuffer(4, f32_, Access::ReadOnly);
      if (recompute_)
        o_ = isHalf(p_.out) ? m_.storageBuffer(5, uvec4_, Access::ReadOnly) : inputRows(5);
      else
        delta_ = m_.storageBuffer(5, f32_, Access::ReadOnly);
      dK_ = outputRows(6);
      dV_ = outputRows(7);
    });
    shRows_ = staged.rows;
    shQ_ = staged.first;
    shDO_ = staged.second;
    shO_ = staged.third;
    shLse_ = m_.workgroupArray(f32_, p_.tile);
    shDelta_ = m_.workgroupArray(f32_, p_.tile);
    if (!p_.rowOps) shP_ = m_.workgroupArray(half_, p_.subgroups * p_.coopM * p_.tile);
    declareScratch();
    if (p_.rowOps) {
      prob_ = probabilityFunction(true);
      unmasked_ = unmaskedProbabilityFunction();
      lseCol_ = columnFunction("lse_column", shLse_);
      deltaCol_ = columnFunction("delta_column", shDelta_);
    }
    setup();
    const Value group = f().udiv(H_, Hkv_);
    f().forRange(c(0), group, [&](Value g) {
      const Value h = f().iadd(f().imul(kvh_, group), g);
      qAt_ = headRows(0, b_, h);
      oAt_ = headRows(2, b_, h);
      lseBase_ = f().imul(f().iadd(f().imul(b_, H_), h), Tq_);
      TileStream qs = tileStream(shQ_, q_, qAt_, Tq_), ds = tileStream(shDO_, dO_, oAt_, Tq_);
      TileStream os = tileStream(shO_, o_, oAt_, Tq_);
      const Value first = firstTile();
      begin(qs, f().imul(first, c(p_.tile)));
      begin(ds, f().imul(first, c(p_.tile)));
      if (recompute_) begin(os, f().imul(first, c(p_.tile)));
      // The tile's lse and delta are prefetched a tile ahead as well.
      std::vector<Value> held;
      if (p_.prefetch)
        for (const Value& v : tileScalars(f().imul(first, c(p_.tile)))) {
          held.push_back(f().variable(f32_));
          f().store(held.back(), v);
        }
      f().forRange(first, f().udiv(f().iadd(Tq_, c(p_.tile - 1)), c(p_.tile)), [&](Value t) {
        const Value i0 = f().imul(t, c(p_.tile)), i1 = f().iadd(i0, c(p_.tile));
        // Documents: a tile whose first query starts after the block's last key, and every later one, sees
        // none of its keys.
        if (documents()) f().ifThen(f().gt(docStart(b_, i0), lastKey_), [&] { f().breakLoop(); });
        next(qs, i0, i1);
        next(ds, i0, i1);
        if (recompute_) next(os, i0, i1);
        std::vector<Value> scalars;
        if (p_.prefetch) {
          for (const Value& v : held)
            scalars.push_back(f().load(v));
          const std::vector<Value> ahead = tileScalars(i1);
          for (size_t i = 0; i < held.size(); ++i)
            f().store(held[i], ahead[i]);
        } else {
          scalars = tileScalars(i0);
        }
        step(i0, scalars);
      });
    });
    writeRows(dk_, {scale_}, shS_, sBase_, scratchCols(), dK_, kvAt_, Tk_);
    writeRows(dv_, {f().f32(1.0f)}, shS_, sBase_, scratchCols(), dV_, kvAt_, Tk_);
    f().ret();
    return m_.build();
  }

private:
  void setup() {
    const Value bkv = f().workgroupId(1);
    b_ = f().udiv(bkv, Hkv_);
    kvh_ = f().rem(bkv, Hkv_);
    kvAt_ = headRows(1, b_, kvh_);
    blockRow_ = f().imul(f().workgroupId(0), c(p_.rows()));
    if (documents()) lastKey_ = f().umin(f().iadd(blockRow_, c(p_.rows() - 1)), f().isub(Tk_, c(1)));
    for (const Value& r : rowInSg_)
      rows_.push_back(f().iadd(blockRow_, f().iadd(f().imul(sg_, c(p_.coopM)), r)));
    ka_ = ownedRowsAsA(shRows_, k_, kvAt_, Tk_);
    va_ = ownedRowsAsA(shRows_, v_, kvAt_, Tk_);
    dk_ = zeroAccs(blocks_);
    dv_ = zeroAccs(blocks_);
  }

  // Causal: the first query that sees this block's first key is j + Tq - Tk (queries before it see none).
  Value firstTile() {
    if (!p_.causal) return c(0);
    return f().udiv(satSub(f().iadd(blockRow_, Tq_), Tk_), c(p_.tile));
  }

  // This invocation's share of the lse and delta of the queries [i0, i0 + tile) (0 past Tq; lse in exp2 units
  // for the row-ops step, as probabilityFunction takes it): {lse, delta} per share ({lse} where delta is
  // recomputed).
  std::vector<Value> tileScalars(Value i0) {
    std::vector<Value> out;
    for (uint32_t e = 0; e * p_.invocations() < p_.tile; ++e) {
      const Value col = f().umin(f().iadd(lid_, c(e * p_.invocations())), c(p_.tile - 1));
      const Value i = f().iadd(i0, col), inside = f().lt(i, Tq_);
      const Value at = f().iadd(lseBase_, f().umin(i, f().isub(Tq_, c(1))));
      const Value lse = p_.rowOps ? f().fmul(f().loadAt(lse_, at), f().f32(kLog2e)) : f().loadAt(lse_, at);
      out.push_back(f().select(inside, lse, f().f32(0.0f)));
      if (!recompute_) out.push_back(f().select(inside, f().loadAt(delta_, at), f().f32(0.0f)));
    }
    return out;
  }

  // delta = dO . O of the tile's queries from the staged f16 dO and O rows into shDelta_ (0 past Tq): a
  // power-of-two number of lanes per row, each summing some of its 8-element units, reduced by shuffles.
  // Rounding dO as dP = dO V^T rounds it keeps dS = P (dP - delta) = P dO . (V - O) consistent.
  void recomputeDelta(Value i0) {
    const uint32_t T = p_.tile, n = p_.invocations();
    uint32_t per = 1; // lanes per row
    while (2 * per <= d8_ && T * 2 * per <= n && 2 * per <= p_.subgroupSize)
      per *= 2;
    for (uint32_t e = 0; e * n < T * per; ++e) {
      const Value item = f().iadd(lid_, c(e * n));
      const Value row = f().udiv(item, c(per)), part = f().rem(item, c(per));
      const Value at = f().imul(f().umin(row, c(T - 1)), c(rowVecs_));
      Value sum = f().f32(0.0f);
      for (uint32_t k = 0; k * per < d8_; ++k) {
        const Value unit = f().iadd(part, c(k * per));
        const Value u = d8_ % per ? f().umin(unit, c(d8_ - 1)) : unit;
        const auto half8 = [&](const Staging& s) {
          return unpackHalf8(
              f(), f().load(f().accessChain(s.array, {f().iadd(f().iadd(at, u), c(s.offset))})), p_.operands);
        };
        const auto [a0, a1] = half8(shDO_);
        const auto [b0, b1] = half8(shO_);
        const Value dot = f().fadd(f().dot(a0, b0), f().dot(a1, b1));
        sum = f().fadd(sum, d8_ % per ? f().select(f().lt(unit, c(d8_)), dot, f().f32(0.0f)) : dot);
      }
      for (uint32_t x = 1; x < per; x <<= 1)
        sum = f().fadd(sum, f().subgroupShuffleXor(sum, c(x)));
      f().ifThen(f().logicalAnd(f().eq(part, c(0)), f().lt(row, c(T))), [&] {
        const Value inside = f().lt(f().iadd(i0, row), Tq_);
        f().store(f().accessChain(shDelta_, {row}), f().select(inside, sum, f().f32(0.0f)));
      });
    }
  }

  // Q and dO of tile i0 are being stored by this step's stream calls; `scalars` are the tile's lse and delta
  // (tileScalars).
  void step(Value i0, const std::vector<Value>& scalars) {
    const uint32_t k = recompute_ ? 1 : 2; // scalars per share
    for (uint32_t e = 0; e * p_.invocations() < p_.tile; ++e) {
      const Value col = f().iadd(lid_, c(e * p_.invocations()));
      f().ifThen(f().lt(col, c(p_.tile)), [&] {
        f().store(f().accessChain(shLse_, {col}), scalars[k * e]);
        if (!recompute_) f().store(f().accessChain(shDelta_, {col}), scalars[k * e + 1]);
      });
    }
    if (documents()) stageStarts(b_, i0, p_.tile);
    f().workgroupBarrier();
    if (recompute_) {
      recomputeDelta(i0);
      f().workgroupBarrier();
    }
    if (p_.rowOps) return stepInRegisters(i0);
    productT(shS_, ka_, shQ_);   // S^T = K Q^T
    productT(shDP_, va_, shDO_); // dP^T = V dO^T
    subgroupBarrier();
    const uint32_t cols = p_.tile / lanes_;
    for (uint32_t r = 0; r < rowsPerLane_; ++r) {
      const Value at = laneEntry(r), col0 = f().imul(part_, c(cols));
      for (uint32_t e = 0; e < cols; ++e) {
        const Value idx = f().iadd(at, c(e)), col = f().iadd(col0, c(e));
        const Value s = f().load(f().accessChain(shS_, {idx})), dp = f().load(f().accessChain(shDP_, {idx}));
        const Value lse = f().load(f().accessChain(shLse_, {col}));
        const Value delta = f().load(f().accessChain(shDelta_, {col}));
        const Value ex = f().exp(f().fsub(f().fmul(scale_, s), lse));
        Value seen = sees(f().iadd(i0, col), rows_[r]);
        if (documents()) seen = f().logicalAnd(seen, f().le(stagedStart(col), rows_[r]));
        const Value p = f().select(seen, ex, f().f32(0.0f));
        f().store(f().accessChain(shP_, {idx}), elemFromF32(f(), p_.operands, p));
        f().store(f().accessChain(shDS_, {idx}),
                  elemFromF32(f(), p_.operands, f().fmul(p, f().fsub(dp, delta))));
      }
    }
    subgroupBarrier();
    accumulate(dv_, shP_, shDO_); // dV += P^T dO
    accumulate(dk_, shDS_, shQ_); // dK += dS^T Q
    f().workgroupBarrier();
  }

  // The row-ops step: S^T, dP^T, P^T and dS^T as accumulators; lse and delta of the tile's queries as
  // column-constant matrices.
  void stepInRegisters(Value i0) {
    const Value row0 = f().iadd(blockRow_, f().imul(sg_, c(16)));
    const uint32_t kbs = p_.tile / 16;
    std::vector<Value> s, dp, lse, pa, dsa;
    for (uint32_t kb = 0; kb < kbs; ++kb) {
      s.push_back(productBlock(ka_, shQ_, kb));   // S^T = K Q^T
      dp.push_back(productBlock(va_, shDO_, kb)); // dP^T = V dO^T
      lse.push_back(f().coopPerElement(zeroAcc_, lseCol_, {c(16 * kb)}));
    }
    // Queries [i0, i0 + tile) against this subgroup's 16 keys.
    const Value lastStart = documents() ? stagedStart(c(p_.tile - 1)) : Value{};
    const std::vector<Value> pr = unlessMasked(
        fullyVisible(i0, p_.tile, row0, 16, lastStart), s,
        [&](Value x, uint32_t kb) {
          return f().coopPerElement(x, unmasked_, {lse[kb], scaleLog2e_});
        },
        [&](Value x, uint32_t kb) {
          std::vector<Value> args{row0, f().iadd(i0, c(16 * kb)), lse[kb], scaleLog2e_};
          if (documents()) args.push_back(c(16 * kb));
          return f().coopPerElement(x, prob_, args);
        });
    for (uint32_t kb = 0; kb < kbs; ++kb) {
      const Value delta = f().coopPerElement(zeroAcc_, deltaCol_, {c(16 * kb)});
      pa.push_back(f().coopConvert(pr[kb], ta_));
      dsa.push_back(f().coopConvert(f().fmul(pr[kb], f().fsub(dp[kb], delta)), ta_));
    }
    for (uint32_t d = 0; d < blocks_; ++d) {
      f().store(dv_[d], addTileProduct(f().load(dv_[d]), pa, shDO_, d)); // dV += P^T dO
      f().store(dk_[d], addTileProduct(f().load(dk_[d]), dsa, shQ_, d)); // dK += dS^T Q
    }
    f().workgroupBarrier();
  }

  const bool recompute_ = p_.delta == DkvDelta::Recompute;
  Buffer dO_, lse_, delta_, o_, dK_, dV_;
  Staging shQ_, shDO_, shO_;
  Value shLse_, shDelta_, shP_;
  FunctionId prob_, unmasked_, lseCol_, deltaCol_;
  Value b_, kvh_, lastKey_;
  std::vector<Value> ka_, va_, dk_, dv_;
};

} // namespace

std::vector<uint32_t> emitAttentionCoopQueryGrad(const AttentionCoopParams& p, uint32_t& pushBytes) {
  return QueryGradEmitter(p).build(pushBytes);
}

std::vector<uint32_t> emitAttentionCoopKeyValueGrad(const AttentionCoopParams& p, uint32_t& pushBytes) {
  return KeyValueGradEmitter(p).build(pushBytes);
}

} // namespace helios::codegen::detail
