// What both forwards of the coop attention family share (ForwardEmitterBase, attention_coop_emitter.hpp): the
// module's order, the start of the owned query rows, and the finish (O / l and lse, or the key splits' merge
// of each group's m and l).
#include "codegen/kernels/attention_coop_emitter.hpp"

#include <cmath>

namespace helios::codegen::detail {

using namespace helios::spv;

std::vector<uint32_t> ForwardEmitterBase::build(uint32_t& pushBytes) {
  declareQueryPass(pushBytes, 5, [&] {
    o_ = outputRows(3);
    lse_ = m_.storageBuffer(4, f32_, Access::WriteOnly);
  });
  declareScratch();
  setup();
  keyLoop();
  finish();
  f().ret();
  return m_.build();
}

void ForwardEmitterBase::beginQueries() {
  walk_ = startKeyWalk(shK_, shV_);
  if (documents()) stageStarts(batch_, blockRow_, p_.rows()); // published by ownedRowsAsA's barrier
  qa_ = ownedRowsAsA(shRows_, q_, qAt_, Tq_);
}

void ForwardEmitterBase::finishRows(const std::vector<Value>& ls, const std::vector<Value>& ms, Value scratch,
                                    uint32_t scratchCols) {
  std::vector<Value> invs;
  for (const Value& l : ls)
    invs.push_back(inverse(l));
  writeRows(oAcc_, invs, scratch, sBase_, scratchCols, o_, oAt_, Tq_);
  writeLse(ls, ms);
}

ForwardEmitterBase::SplitMerge
ForwardEmitterBase::mergeSplits(const std::vector<Value>& ms, const std::vector<Value>& ls,
                                const std::function<Value(Value, Value)>& factor) {
  const auto groups = tradeRowPairs(ms, ls); // its barrier also ends every group's walk
  SplitMerge out;
  for (size_t i = 0; i < ms.size(); ++i) {
    Value m = groups[0][i].first;
    for (size_t s = 1; s < groups.size(); ++s)
      m = f().fmax(m, groups[s][i].first);
    Value l = f().fmul(groups[0][i].second, factor(groups[0][i].first, m));
    for (size_t s = 1; s < groups.size(); ++s)
      l = f().fma(groups[s][i].second, factor(groups[s][i].first, m), l);
    out.own.push_back(f().fmul(factor(ms[i], m), inverse(l)));
    out.m.push_back(m);
    out.l.push_back(l);
  }
  return out;
}

Value ForwardEmitterBase::inverse(Value l) {
  return f().select(f().gt(l, f().f32(0.0f)), f().fdiv(f().f32(1.0f), l), f().f32(0.0f));
}

void ForwardEmitterBase::writeLse(const std::vector<Value>& ls, const std::vector<Value>& ms) {
  for (uint32_t i = 0; i < rowsPerLane_; ++i) {
    const Value l = ls[i], m = ms[i], row = rows_[i];
    const Value seen = f().gt(l, f().f32(0.0f));
    Value writes = lanes_ == 1 ? f().lt(row, Tq_) : f().logicalAnd(f().lt(row, Tq_), f().eq(part_, c(0)));
    if (p_.keySplits > 1) writes = f().logicalAnd(writes, f().eq(split_, c(0)));
    f().ifThen(writes, [&] {
      const Value logL = f().log(f().select(seen, l, f().f32(1.0f)));
      f().storeAt(lse_, f().iadd(lseBase_, row), f().select(seen, f().fadd(m, logL), f().f32(-INFINITY)));
    });
  }
}

} // namespace helios::codegen::detail
