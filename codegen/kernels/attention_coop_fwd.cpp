// The forward pass of the coop attention family (see attention_coop.hpp). Emitted in order: setup (this
// workgroup's head and rows, Q staged and loaded as coop A matrices), the key loop (stage K/V, S = Q K^T,
// softmax by lanes, O += P V), and the finish (O / l, lse).
#include <cmath>

#include "codegen/kernels/attention_coop_emitter.hpp"
#include "codegen/kernels/row_reduce.hpp"

namespace helios::codegen::detail {

using namespace helios::spv;

namespace {

class ForwardEmitter : AttentionCoopEmitter {
public:
  explicit ForwardEmitter(const AttentionCoopParams& p) : AttentionCoopEmitter(p) {}

  std::vector<uint32_t> build(uint32_t& pushBytes) {
    declareTypes();
    q_ = inputRows(0);
    k_ = inputRows(1);
    v_ = inputRows(2);
    o_ = m_.storageBuffer(3, f32_, Access::WriteOnly);
    lse_ = m_.storageBuffer(4, f32_, Access::WriteOnly);
    pushBytes = pc_.size;
    beginMain();
    shQ_ = stagingArray(p_.rows());
    shK_ = stagingArray(p_.tile);
    shV_ = stagingArray(p_.tile);
    shS_ = m_.workgroupArray(f32_, p_.subgroups * 16 * p_.tile); // S, then each 16x16 block of P V
    shP_ = m_.workgroupArray(f16_, p_.subgroups * 16 * p_.tile);
    setup();
    keyLoop();
    finish();
    f().ret();
    return m_.build();
  }

private:
  void setup() {
    const Value bh = f().workgroupId(1), b = f().udiv(bh, H_), h = f().rem(bh, H_);
    qBase_ = f().imul(bh, Tq_);
    kvBase_ = f().imul(f().iadd(f().imul(b, Hkv_), f().udiv(h, f().udiv(H_, Hkv_))), Tk_);
    blockRow_ = f().imul(rowBlock(), c(p_.rows()));
    row_ = f().iadd(blockRow_, f().iadd(f().imul(sg_, c(16)), rowInSg_));
    limit_ = keyLimit(f().umin(row_, f().isub(Tq_, c(1))));
    sBase_ = f().imul(sg_, c(16 * p_.tile)); // this subgroup's S / P scratch

    stage(shQ_, q_, qBase_, blockRow_, p_.rows(), Tq_);
    f().workgroupBarrier();
    qa_ = loadA(shQ_, f().imul(sg_, c(16)));

    mVar_ = f().variable(f32_, f().f32(kMinFloat));
    lVar_ = f().variable(f32_, f().f32(0.0f));
    const Value z = f().f32(0.0f);
    const Value zero4 = m_.constComposite(vec4_, {z, z, z, z});
    for (uint32_t i = 0; i < 2 * blocks_; ++i)
      oVars_.push_back(f().variable(vec4_, zero4));
  }

  // Causal: the last row blocks see the most keys, so they are handed out first (shorter tail).
  Value rowBlock() {
    if (!p_.causal) return f().workgroupId(0);
    const Value count = f().udiv(f().iadd(Tq_, c(p_.rows() - 1)), c(p_.rows()));
    return f().isub(f().isub(count, c(1)), f().workgroupId(0));
  }

  // The workgroup walks key tiles up to the last key its last real row sees.
  Value tiles() {
    const Value lastRow = f().umin(f().iadd(blockRow_, c(p_.rows() - 1)), f().isub(Tq_, c(1)));
    return f().udiv(f().iadd(keyLimit(lastRow), c(p_.tile - 1)), c(p_.tile));
  }

  void keyLoop() {
    f().forRange(c(0), tiles(), [&](Value t) {
      const Value t0 = f().imul(t, c(p_.tile));
      stage(shK_, k_, kvBase_, t0, p_.tile, Tk_);
      stage(shV_, v_, kvBase_, t0, p_.tile, Tk_);
      f().workgroupBarrier();
      scores();
      subgroupBarrier();
      softmax(t0);
      subgroupBarrier();
      accumulatePV();
      f().workgroupBarrier();
    });
  }

  // S (16 x tile) = Q K^T: K^T's 16x16 blocks are K's rows read column-major.
  void scores() {
    for (uint32_t kb = 0; kb < p_.tile / 16; ++kb) {
      Value acc = f().coopFill(tc_, f().f32(0.0f));
      for (uint32_t d = 0; d < blocks_; ++d) {
        const Value kbd = f().coopLoad(tb_, f().accessChain(shK_, {c(kb * 16 * d8_ + 2 * d)}), c(d8_),
                                       CoopLayout::ColumnMajorKHR);
        acc = f().coopMulAdd(qa_[d], kbd, acc);
      }
      f().coopStore(f().accessChain(shS_, {f().iadd(sBase_, c(kb * 16))}), acc, c(p_.tile),
                    CoopLayout::RowMajorKHR);
    }
  }

  // Two lanes per row, 16 columns each: masked scaled scores, the running max and sum, P (f16) and the
  // rescale of this lane's O.
  void softmax(Value t0) {
    const Value rowS = f().iadd(sBase_, f().iadd(f().imul(rowInSg_, c(p_.tile)), f().imul(half_, c(16))));
    const Value col0 = f().iadd(t0, f().imul(half_, c(16)));
    std::vector<Value> s(16), seen(16);
    Value mx = f().f32(kMinFloat);
    for (uint32_t e = 0; e < 16; ++e) {
      seen[e] = f().lt(f().iadd(col0, c(e)), limit_);
      s[e] = f().fmul(scale_, f().load(f().accessChain(shS_, {f().iadd(rowS, c(e))})));
      mx = f().select(seen[e], f().fmax(mx, s[e]), mx);
    }
    mx = f().fmax(mx, f().subgroupShuffleXor(mx, c(1)));
    const Value mOld = f().load(mVar_), mNew = f().fmax(mOld, mx);
    const Value corr = f().exp(f().fsub(mOld, mNew));
    Value sum = f().f32(0.0f);
    for (uint32_t e = 0; e < 16; ++e) {
      const Value pr = f().select(seen[e], f().exp(f().fsub(s[e], mNew)), f().f32(0.0f));
      sum = f().fadd(sum, pr);
      f().store(f().accessChain(shP_, {f().iadd(rowS, c(e))}), f().convert(pr, f16_));
    }
    sum = f().fadd(sum, f().subgroupShuffleXor(sum, c(1)));
    f().store(lVar_, f().fma(f().load(lVar_), corr, sum));
    f().store(mVar_, mNew);
    for (const Value& o : oVars_)
      f().store(o, f().vectorTimesScalar(f().load(o), corr));
  }

  // O += P V, one 16-column block of D at a time through the subgroup's scratch: the lane adds its row's 8
  // columns of the block.
  void accumulatePV() {
    std::vector<Value> pa;
    for (uint32_t kb = 0; kb < p_.tile / 16; ++kb)
      pa.push_back(f().coopLoad(ta_, f().accessChain(shP_, {f().iadd(sBase_, c(kb * 16))}), c(p_.tile),
                                CoopLayout::RowMajorKHR));
    const Value mine = f().iadd(sBase_, f().iadd(f().imul(rowInSg_, c(16)), f().imul(half_, c(8))));
    for (uint32_t d = 0; d < blocks_; ++d) {
      Value acc = f().coopFill(tc_, f().f32(0.0f));
      for (uint32_t kb = 0; kb < p_.tile / 16; ++kb) {
        const Value vb = f().coopLoad(tb_, f().accessChain(shV_, {c(kb * 16 * d8_ + 2 * d)}), c(d8_),
                                      CoopLayout::RowMajorKHR);
        acc = f().coopMulAdd(pa[kb], vb, acc);
      }
      f().coopStore(f().accessChain(shS_, {sBase_}), acc, c(16), CoopLayout::RowMajorKHR);
      subgroupBarrier();
      for (uint32_t h = 0; h < 2; ++h) {
        std::vector<Value> x;
        for (uint32_t e = 0; e < 4; ++e)
          x.push_back(f().load(f().accessChain(shS_, {f().iadd(mine, c(4 * h + e))})));
        const Value o = oVars_[2 * d + h];
        f().store(o, f().fadd(f().load(o), f().construct(vec4_, x)));
      }
      subgroupBarrier();
    }
  }

  void finish() {
    f().ifThen(f().lt(row_, Tq_), [&] {
      const Value l = f().load(lVar_), seen = f().gt(l, f().f32(0.0f));
      const Value inv = f().select(seen, f().fdiv(f().f32(1.0f), l), f().f32(0.0f));
      const Value out = f().iadd(f().imul(f().iadd(qBase_, row_), c(p_.headDim)), f().imul(half_, c(8)));
      for (uint32_t d = 0; d < blocks_; ++d)
        for (uint32_t h = 0; h < 2; ++h) {
          const Value o = f().vectorTimesScalar(f().load(oVars_[2 * d + h]), inv);
          for (uint32_t e = 0; e < 4; ++e)
            f().storeAt(o_, f().iadd(out, c(16 * d + 4 * h + e)), f().extract(o, {e}));
        }
      f().ifThen(f().eq(half_, c(0)), [&] {
        const Value logL = f().log(f().select(seen, l, f().f32(1.0f)));
        f().storeAt(lse_, f().iadd(qBase_, row_),
                    f().select(seen, f().fadd(f().load(mVar_), logL), f().f32(-INFINITY)));
      });
    });
  }

  Buffer q_, k_, v_, o_, lse_;
  Value shQ_, shK_, shV_, shS_, shP_;
  Value qBase_, kvBase_, blockRow_, row_, limit_, sBase_;
  Value mVar_, lVar_;
  std::vector<Value> qa_, oVars_;
};

} // namespace

std::vector<uint32_t> emitAttentionCoopForward(const AttentionCoopParams& p, uint32_t& pushBytes) {
  return ForwardEmitter(p).build(pushBytes);
}

} // namespace helios::codegen::detail
