// The forward pass of the coop attention family with the softmax on the accumulators (p.rowOps, needs the
// reductions, per-element operations and use conversions of VK_NV_cooperative_matrix2). Same interface and
// results as attention_coop_fwd.cpp, but S and P never leave registers: per key tile and subgroup, with
// scores kept unscaled (scale > 0, so the row max commutes with it) and c = scale * log2(e),
//
//   S_kb  = mask(Q K_kb^T)                         per-element function, only on tiles that need it
//   m_new = max(m, rowmax(max_kb S_kb))            element-wise max over the blocks, then one row reduction
//   P_kb  = exp2(c S_kb - c m_new)                 one fma and one exp2 per score (0 where masked)
//   L     = L * exp2(c (m - m_new)) + sum_kb P_kb  element-wise: the row sums wait for the finish
//   O     = O * exp2(c (m - m_new)) + sum_kb f16(P_kb) V_kb
//
// m is a 16 x 16 accumulator whose rows are constant, so the rescales are element-wise products: the exact
// online softmax, no shared-memory scratch in the loop and no subgroup barriers. At D = 128 the MulAdds
// leave little issue time, so the per-score work is kept to the fma and the exp2 and the loop holds two
// row reductions fewer per block.

#include "codegen/kernels/attention_coop_emitter.hpp"

namespace helios::codegen::detail {

using namespace helios::spv;

namespace {

class RowOpsForwardEmitter : ForwardEmitterBase {
public:
  explicit RowOpsForwardEmitter(const AttentionCoopParams& p) : ForwardEmitterBase(p) {}
  using ForwardEmitterBase::build;

private:
  void declareScratch() override {
    shOut_ = m_.workgroupArray(f32_, p_.allSubgroups() * 256); // the finish's trips of l, m and O
    mask_ = scoreMaskFunction();
    maxOf_ = combineFunction("max_of", [](FunctionBuilder& g, Value a, Value b) { return g.fmax(a, b); });
    sumOf_ = combineFunction("sum_of", [](FunctionBuilder& g, Value a, Value b) { return g.fadd(a, b); });
    max2_ = elementFunction("max2", [](FunctionBuilder& g, Value a, Value b) { return g.fmax(a, b); });
    // exp2(c s - cm) with cm = c m: the backward's probability, with c m in place of its lse.
    expScaled_ = unmaskedProbabilityFunction();
    // The same, 0 for a masked score (also when the whole row is masked so far and m is kMasked too).
    expScaledMasked_ = expScaledMaskedFunction();
  }

  // (row, col, f32 s, f32 cm, f32 c) -> exp2(c s - cm), 0 where s is masked.
  FunctionId expScaledMaskedFunction() {
    FunctionBuilder& fn = m_.function("exp_scaled_masked", f32_, {u32_, u32_, f32_, f32_, f32_});
    const Value s = fn.param(2), e = fn.exp2(fn.fma(s, fn.param(4), fn.fneg(fn.param(3))));
    fn.ret(fn.select(fn.gt(s, fn.f32(0.5f * kMasked)), e, fn.f32(0.0f)));
    return fn.id();
  }

  void setup() override {
    ownQueryRows();
    sgRow0_ = f().iadd(blockRow_, f().imul(sg_, c(16)));
    sBase_ = f().imul(sgId_, c(256));
    beginQueries();
    mVar_ = f().variable(tc_);
    f().store(mVar_, f().coopFill(tc_, f().f32(kMasked)));
    lVar_ = f().variable(tc_);
    f().store(lVar_, zeroAcc_);
    oAcc_ = zeroAccs(blocks_);
  }

  void keyLoop() override {
    const uint32_t kbs = p_.tile / 16;
    std::vector<Value> paVars;
    for (uint32_t kb = 0; kb < kbs; ++kb)
      paVars.push_back(f().variable(ta_));
    const Value corrVar = f().variable(tc_);
    walkKeyTiles(walk_, [&](Value t0) {
      f().workgroupBarrier();
      std::vector<Value> raw;
      for (uint32_t kb = 0; kb < kbs; ++kb)
        raw.push_back(productBlock(qa_, shK_, kb)); // S = Q K^T
      // The softmax is emitted twice, one branch per tile: with the mask and its compare where some row of
      // this subgroup misses some key, without them elsewhere.
      const auto softmax = [&](bool masked) {
        return [&, masked] {
          std::vector<Value> s = raw;
          if (masked)
            for (uint32_t kb = 0; kb < kbs; ++kb)
              s[kb] = f().coopPerElement(raw[kb], mask_, maskArgs(f().iadd(t0, c(16 * kb))));
          Value blockMax = s[0];
          for (uint32_t kb = 1; kb < kbs; ++kb)
            blockMax = f().coopPerElement(blockMax, max2_, {s[kb]});
          const Value mOld = f().load(mVar_);
          const Value mNew =
              f().coopPerElement(mOld, max2_, {f().coopReduce(tc_, blockMax, CoopReduce::Row, maxOf_)});
          const Value cm = f().coopScale(mNew, scaleLog2e_);
          // exp2(c (m_old - m_new)) from the difference: written as c m_old - c m_new, the fma the compiler
          // contracts it into leaves a rounding residual of c kMasked (~1e22) on rows that have seen no key.
          const Value corr = f().coopPerElement(f().fsub(mOld, mNew), expScaled_, {zeroAcc_, scaleLog2e_});
          Value sum = f().fmul(f().load(lVar_), corr);
          for (uint32_t kb = 0; kb < kbs; ++kb) {
            const Value pr =
                f().coopPerElement(s[kb], masked ? expScaledMasked_ : expScaled_, {cm, scaleLog2e_});
            f().store(paVars[kb], f().coopConvert(pr, ta_));
            sum = f().fadd(sum, pr);
          }
          f().store(lVar_, sum);
          f().store(mVar_, mNew);
          f().store(corrVar, corr);
        };
      };
      const Value lastStart = documents() ? stagedStart(f().iadd(f().imul(sg_, c(16)), c(15))) : Value{};
      f().ifThenElse(fullyVisible(sgRow0_, 16, t0, p_.tile, lastStart), softmax(false), softmax(true));
      std::vector<Value> pa;
      for (const Value& v : paVars)
        pa.push_back(f().load(v));
      const Value corr = f().load(corrVar);
      for (uint32_t d = 0; d < blocks_; ++d) // O = O corr + P V
        f().store(oAcc_[d], addTileProduct(f().fmul(f().load(oAcc_[d]), corr), pa, shV_, d));
      f().workgroupBarrier();
    });
  }

  // The mask's operands for the block of keys from k0: the subgroup's first row (and its staged start).
  std::vector<Value> maskArgs(Value k0) {
    std::vector<Value> args{sgRow0_, k0};
    if (documents()) args.push_back(f().imul(sg_, c(16)));
    return args;
  }

  void finish() override {
    // L holds partial sums: reduce its rows once; m is in unscaled score units.
    const Value l = rowValue(shOut_, f().coopReduce(tc_, f().load(lVar_), CoopReduce::Row, sumOf_));
    const Value mRaw = rowValue(shOut_, f().load(mVar_));
    if (p_.keySplits == 1) return finishRows({l}, {f().fmul(mRaw, scale_)}, shOut_, 16);
    // Key splits: m unscaled, so O = sum O 2^(c (m - m*)) / l* and lse = scale m* + log l*.
    const SplitMerge merged = mergeSplits(
        {mRaw}, {l}, [&](Value mi, Value m) { return f().exp2(f().fmul(scaleLog2e_, f().fsub(mi, m))); });
    writeSplitRows(oAcc_, {merged.own}, o_, oAt_, Tq_);
    writeLse(merged.l, {f().fmul(merged.m[0], scale_)});
  }

  Value shOut_;
  Value sgRow0_, mVar_, lVar_;
  FunctionId mask_, maxOf_, sumOf_, max2_, expScaled_, expScaledMasked_;
};

} // namespace

std::vector<uint32_t> emitAttentionCoopForwardRowOps(const AttentionCoopParams& p, uint32_t& pushBytes) {
  return RowOpsForwardEmitter(p).build(pushBytes);
}

} // namespace helios::codegen::detail
