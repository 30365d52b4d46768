// The forward pass of the coop attention family (see attention_coop.hpp). Emitted in order: setup (this
// workgroup's head and rows, Q staged and loaded as coop A matrices), the key loop (stage K/V, S = Q K^T,
// softmax by lanes, O += P V), and the finish (O / l, lse).
//
// O stays in accumulator matrices. KHR matrices give no access to an accumulator's rows, so the classic
// online-softmax rescale of O (by exp(m_old - m_new) per row) needs a trip through shared memory; it is made
// lazily: a row keeps its reference max m until a tile's max exceeds it by more than kSlack, so P = exp(S -
// m) stays below e^kSlack (well inside f16), and the subgroup rescales O only on a step where one of its rows
// that already holds a sum moves its m. With scores of ordinary size that is the first step or two.

#include "codegen/kernels/attention_coop_emitter.hpp"
#include "codegen/kernels/row_reduce.hpp"

namespace helios::codegen::detail {

using namespace helios::spv;

namespace {

constexpr float kSlack = 8.0f; // natural-log units: P <= e^8 ~ 2981

class ForwardEmitter : ForwardEmitterBase {
public:
  explicit ForwardEmitter(const AttentionCoopParams& p) : ForwardEmitterBase(p) {}
  using ForwardEmitterBase::build;

private:
  void declareScratch() override {
    shS_ = m_.workgroupArray(f32_, p_.allSubgroups() * p_.coopM * p_.tile); // S, and O on its trips
    shP_ = m_.workgroupArray(half_, p_.allSubgroups() * p_.coopM * p_.tile);
  }

  void setup() override {
    ownQueryRows();
    for (const Value& row : rows_)
      limit_.push_back(keyLimit(f().umin(row, f().isub(Tq_, c(1)))));
    sBase_ = f().imul(sgId_, c(p_.coopM * p_.tile)); // this subgroup's S / P scratch
    beginQueries();
    if (documents())
      for (const Value& row : rows_)
        start_.push_back(stagedStart(f().isub(row, blockRow_)));

    for (uint32_t i = 0; i < rowsPerLane_; ++i) {
      mVar_.push_back(f().variable(f32_, f().f32(kMinFloat)));
      lVar_.push_back(f().variable(f32_, f().f32(0.0f)));
    }
    oAcc_ = zeroAccs(blocks_);
  }

  void keyLoop() override {
    walkKeyTiles(walk_, [&](Value t0) {
      f().workgroupBarrier();
      productT(shS_, qa_, shK_); // S = Q K^T
      subgroupBarrier();
      softmax(t0);
      subgroupBarrier();
      accumulate(oAcc_, shP_, shV_); // O += P V
      f().workgroupBarrier();
    });
  }

  // The lanes of each row take tile / lanes columns each: masked scaled scores, the row's reference max and
  // sum, P (f16), and the rescale of O when a row with a sum moved its max.
  void softmax(Value t0) {
    const uint32_t cols = p_.tile / lanes_; // this lane's columns of the row
    std::vector<Value> corrs;
    Value rescale{};
    for (uint32_t i = 0; i < rowsPerLane_; ++i) {
      const Value rowS = f().iadd(sBase_, laneOffset(i, p_.tile, cols));
      const Value col0 = lanes_ == 1 ? t0 : f().iadd(t0, f().imul(part_, c(cols)));
      std::vector<Value> s(cols), seen(cols);
      Value mx = f().f32(kMinFloat);
      for (uint32_t e = 0; e < cols; ++e) {
        seen[e] = f().lt(f().iadd(col0, c(e)), limit_[i]);
        if (documents()) seen[e] = f().logicalAnd(seen[e], f().ge(f().iadd(col0, c(e)), start_[i]));
        s[e] = f().fmul(scale_, f().load(f().accessChain(shS_, {f().iadd(rowS, c(e))})));
        mx = f().select(seen[e], f().fmax(mx, s[e]), mx);
      }
      mx = rowMax(mx);
      const Value mOld = f().load(mVar_[i]), lOld = f().load(lVar_[i]);
      const Value bump = f().gt(mx, f().fadd(mOld, f().f32(kSlack)));
      const Value mNew = f().select(bump, mx, mOld);
      const Value corr = f().exp(f().fsub(mOld, mNew));
      Value sum = f().f32(0.0f);
      for (uint32_t e = 0; e < cols; ++e) {
        const Value pr = f().select(seen[e], f().exp(f().fsub(s[e], mNew)), f().f32(0.0f));
        sum = f().fadd(sum, pr);
        f().store(f().accessChain(shP_, {f().iadd(rowS, c(e))}), elemFromF32(f(), p_.operands, pr));
      }
      sum = rowSum(sum);
      f().store(lVar_[i], f().fma(lOld, corr, sum));
      f().store(mVar_[i], mNew);
      const Value moved = f().logicalAnd(bump, f().gt(lOld, f().f32(0.0f)));
      rescale = i ? f().logicalOr(rescale, moved) : moved;
      corrs.push_back(corr);
    }
    // Lowered, O is rescaled on every step (by exactly 1 where no max moved): llvmpipe treats each barrier as
    // the workgroup's, so rescaleO's subgroup barriers in a branch one subgroup skips would strand the other.
    if (p_.lowered) return rescaleO(corrs);
    const Value any = f().subgroupMax(f().select(rescale, c(1), c(0)));
    f().ifThen(f().ne(any, c(0)), [&] { rescaleO(corrs); });
  }

  // O *= corr per row, through this subgroup's scratch (S is already in the lanes' registers): each lane of a
  // row scales coopN / lanes columns of every block.
  void rescaleO(const std::vector<Value>& corrs) {
    const uint32_t n = p_.coopN, cols = n / lanes_;
    std::vector<Value> mine;
    for (uint32_t i = 0; i < rowsPerLane_; ++i)
      mine.push_back(f().iadd(sBase_, laneOffset(i, n, cols)));
    subgroupBarrier();
    for (uint32_t d = 0; d < blocks_; ++d) {
      const Value at = f().accessChain(shS_, {sBase_});
      f().coopStore(at, f().load(oAcc_[d]), c(n), CoopLayout::RowMajorKHR);
      subgroupBarrier();
      for (uint32_t i = 0; i < rowsPerLane_; ++i)
        for (uint32_t e = 0; e < cols; ++e) {
          const Value ptr = f().accessChain(shS_, {f().iadd(mine[i], c(e))});
          f().store(ptr, f().fmul(f().load(ptr), corrs[i]));
        }
      subgroupBarrier();
      f().store(oAcc_[d], f().coopLoad(tc_, at, c(n), CoopLayout::RowMajorKHR));
      subgroupBarrier();
    }
  }

  void finish() override {
    std::vector<Value> ls, ms;
    for (uint32_t i = 0; i < rowsPerLane_; ++i) {
      ls.push_back(f().load(lVar_[i]));
      ms.push_back(f().load(mVar_[i]));
    }
    if (p_.keySplits == 1) return finishRows(ls, ms, shS_, p_.tile);
    // Key splits: O = sum O e^(m - m*) / l*, lse = m* + log l*.
    const SplitMerge merged =
        mergeSplits(ms, ls, [&](Value mi, Value m) { return f().exp(f().fsub(mi, m)); });
    writeSplitRows(oAcc_, {merged.own}, o_, oAt_, Tq_);
    writeLse(merged.l, merged.m);
  }

  Value shS_, shP_;
  std::vector<Value> limit_, start_; // per row of this lane: its key limit and (documents) first key
  std::vector<Value> mVar_, lVar_;
};

} // namespace

std::vector<uint32_t> emitAttentionCoopForward(const AttentionCoopParams& p, uint32_t& pushBytes) {
  return ForwardEmitter(p).build(pushBytes);
}

} // namespace helios::codegen::detail
