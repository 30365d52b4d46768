// The forward pass of the coop attention family with the softmax on the accumulators (p.rowOps, needs the
// reductions, per-element operations and use conversions of VK_NV_cooperative_matrix2). Same interface and
// results as attention_coop_fwd.cpp, but S and P never leave registers: per key tile and subgroup,
//
//   S_kb  = mask(scale * Q K_kb^T)                 per-element function (masked scores: kMasked)
//   m_new = max(m, rowmax(S_kb) over kb)           row reductions; every column of a row holds its value
//   P_kb  = exp(S_kb - m_new)  (0 where masked)    per-element function
//   l     = l * exp(m - m_new) + rowsum(P_kb)
//   O     = O * exp(m - m_new) + sum_kb f16(P_kb) V_kb
//
// m and l are 16 x 16 accumulators whose rows are constant, so the rescale of O is an element-wise product:
// the exact online softmax, no lazy threshold, no shared-memory scratch in the loop and no subgroup barriers.

#include "codegen/kernels/attention_coop_emitter.hpp"

namespace helios::codegen::detail {

using namespace helios::spv;

namespace {

class RowOpsForwardEmitter : ForwardEmitterBase {
public:
  explicit RowOpsForwardEmitter(const AttentionCoopParams& p) : ForwardEmitterBase(p) {}

  std::vector<uint32_t> build(uint32_t& pushBytes) {
    declareForward(pushBytes);
    shOut_ = m_.workgroupArray(f32_, p_.subgroups * 256); // the finish's trips of l, m and O
    declareFunctions();
    setup();
    keyLoop();
    finish();
    f().ret();
    return m_.build();
  }

private:
  void declareFunctions() {
    mask_ = scoreMaskFunction();
    maxOf_ = combineFunction("max_of", [](FunctionBuilder& g, Value a, Value b) { return g.fmax(a, b); });
    sumOf_ = combineFunction("sum_of", [](FunctionBuilder& g, Value a, Value b) { return g.fadd(a, b); });
    max2_ = elementFunction("max2", [](FunctionBuilder& g, Value a, Value b) { return g.fmax(a, b); });
    // exp(s - m), 0 for a masked score (also when the whole row is masked so far and m is kMasked too).
    expShift_ = elementFunction("exp_shift", [](FunctionBuilder& g, Value s, Value m) {
      return g.select(g.gt(s, g.f32(0.5f * kMasked)), g.exp(g.fsub(s, m)), g.f32(0.0f));
    });
    expDiff_ =
        elementFunction("exp_diff", [](FunctionBuilder& g, Value a, Value b) { return g.exp(g.fsub(a, b)); });
  }

  void setup() {
    ownQueryRows();
    sgRow0_ = f().iadd(blockRow_, f().imul(sg_, c(16)));
    sBase_ = f().imul(sg_, c(256));
    qa_ = ownedRowsAsA(shQ_, q_, qBase_, Tq_);
    mVar_ = f().variable(tc_);
    f().store(mVar_, f().coopFill(tc_, f().f32(kMasked)));
    lVar_ = f().variable(tc_);
    f().store(lVar_, zeroAcc_);
    for (uint32_t d = 0; d < blocks_; ++d) {
      oAcc_.push_back(f().variable(tc_));
      f().store(oAcc_.back(), zeroAcc_);
    }
  }

  void keyLoop() {
    walkKeyTiles(shK_, shV_, [&](Value t0) {
      f().workgroupBarrier();
      const uint32_t kbs = p_.tile / 16;
      std::vector<Value> raw;
      for (uint32_t kb = 0; kb < kbs; ++kb)
        raw.push_back(productBlock(qa_, shK_, kb)); // S = Q K^T
      // Scaled scores; the mask only on tiles where some row of this subgroup misses some key.
      const std::vector<Value> s = unlessMasked(
          fullyVisible(sgRow0_, 16, t0, p_.tile), raw,
          [&](Value x, uint32_t) { return f().coopScale(x, scale_); },
          [&](Value x, uint32_t kb) {
            return f().coopPerElement(x, mask_, {sgRow0_, f().iadd(t0, c(16 * kb))});
          });
      Value rowMax;
      for (uint32_t kb = 0; kb < kbs; ++kb) {
        const Value mx = f().coopReduce(tc_, s[kb], CoopReduce::Row, maxOf_);
        rowMax = kb ? f().coopPerElement(rowMax, max2_, {mx}) : mx;
      }
      const Value mOld = f().load(mVar_);
      const Value mNew = f().coopPerElement(mOld, max2_, {rowMax});
      const Value corr = f().coopPerElement(mOld, expDiff_, {mNew});
      std::vector<Value> pa(kbs);
      Value rowSum;
      for (uint32_t kb = 0; kb < kbs; ++kb) {
        const Value pr = f().coopPerElement(s[kb], expShift_, {mNew});
        pa[kb] = f().coopConvert(pr, ta_);
        const Value sum = f().coopReduce(tc_, pr, CoopReduce::Row, sumOf_);
        rowSum = kb ? f().fadd(rowSum, sum) : sum;
      }
      f().store(lVar_, f().fadd(f().fmul(f().load(lVar_), corr), rowSum));
      f().store(mVar_, mNew);
      for (uint32_t d = 0; d < blocks_; ++d) // O = O corr + P V
        f().store(oAcc_[d], addTileProduct(f().fmul(f().load(oAcc_[d]), corr), pa, shV_, d));
      f().workgroupBarrier();
    });
  }

  void finish() {
    const Value l = rowValue(shOut_, f().load(lVar_)), m = rowValue(shOut_, f().load(mVar_));
    const Value inv = f().select(f().gt(l, f().f32(0.0f)), f().fdiv(f().f32(1.0f), l), f().f32(0.0f));
    writeRows(oAcc_, inv, shOut_, sBase_, o_, qBase_, row_, Tq_);
    writeLse(l, m);
  }

  Value shOut_;
  Value sgRow0_, mVar_, lVar_;
  FunctionId mask_, maxOf_, sumOf_, max2_, expShift_, expDiff_;
  std::vector<Value> qa_, oAcc_;
};

} // namespace

std::vector<uint32_t> emitAttentionCoopForwardRowOps(const AttentionCoopParams& p, uint32_t& pushBytes) {
  return RowOpsForwardEmitter(p).build(pushBytes);
}

} // namespace helios::codegen::detail
