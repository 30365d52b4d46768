// Fused attention forward on cooperative matrices (see attention_coop.hpp). Emitted in order: setup (this
// workgroup's head and rows, Q staged and loaded as coop A matrices), the key loop (stage K/V, S = Q K^T,
// softmax by lanes, O += P V), and the finish (O / l, lse).
#include "codegen/kernels/attention_coop.hpp"

#include <cmath>
#include <stdexcept>

#include "codegen/kernels/row_reduce.hpp"
#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

using namespace helios::spv;

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

class AttentionCoopBuilder {
public:
  explicit AttentionCoopBuilder(const AttentionCoopParams& p)
      : p_(p), d8_(p.headDim / 8), blocks_(p.headDim / 16) {}

  std::vector<uint32_t> build(uint32_t& pushBytes) {
    declare();
    pushBytes = pc_.size;
    setup();
    keyLoop();
    finish();
    f().ret();
    return m_.build();
  }

private:
  FunctionBuilder& f() { return *f_; }
  Value c(uint32_t v) { return f().u32(v); }

  void declare() {
    f32_ = m_.f32();
    f16_ = m_.f16();
    u32_ = m_.u32();
    uvec4_ = m_.vectorType(u32_, 4);
    ta_ = m_.coopMatrixType(f16_, 16, 16, CoopUse::MatrixAKHR);
    tb_ = m_.coopMatrixType(f16_, 16, 16, CoopUse::MatrixBKHR);
    tc_ = m_.coopMatrixType(f32_, 16, 16, CoopUse::MatrixAccumulatorKHR);
    q_ = m_.storageBuffer(0, uvec4_, Access::ReadOnly);
    k_ = m_.storageBuffer(1, uvec4_, Access::ReadOnly);
    v_ = m_.storageBuffer(2, uvec4_, Access::ReadOnly);
    o_ = m_.storageBuffer(3, f32_, Access::WriteOnly);
    lse_ = m_.storageBuffer(4, f32_, Access::WriteOnly);
    pc_ = m_.pushConstants({u32_, u32_, u32_, u32_, f32_});
    shQ_ = m_.workgroupArray(uvec4_, p_.rows() * d8_);
    shK_ = m_.workgroupArray(uvec4_, p_.tile * d8_);
    shV_ = m_.workgroupArray(uvec4_, p_.tile * d8_);
    shS_ = m_.workgroupArray(f32_, p_.subgroups * 16 * p_.tile); // S, then each 16x16 block of P V
    shP_ = m_.workgroupArray(f16_, p_.subgroups * 16 * p_.tile);
    f_ = &m_.entryPoint("main", {p_.invocations(), 1, 1});
  }

  // A subgroup-wide barrier that also orders this subgroup's shared-memory writes before its reads.
  void subgroupBarrier() {
    f().controlBarrier(Scope::Subgroup, Scope::Workgroup,
                       static_cast<uint32_t>(MemorySemanticsMask::AcquireRelease) |
                           static_cast<uint32_t>(MemorySemanticsMask::WorkgroupMemory));
  }
  Value satSub(Value a, Value b) { return f().select(f().ge(a, b), f().isub(a, b), c(0)); }
  Value keyLimit(Value i) {
    return p_.causal ? f().umin(Tk_, satSub(f().iadd(f().iadd(i, c(1)), Tk_), Tq_)) : Tk_;
  }

  // Rows [first, first + count) of a side with `total` rows starting at row `base`, as 16-byte vectors
  // into `shared` (zero past total). Every invocation copies its share.
  void stage(Value shared, const Buffer& b, Value base, Value first, uint32_t count, Value total) {
    const uint32_t vecs = count * d8_;
    const Value zero = m_.constComposite(uvec4_, {c(0), c(0), c(0), c(0)});
    const Value last = f().isub(total, c(1));
    for (uint32_t e = 0; e < (vecs + p_.invocations() - 1) / p_.invocations(); ++e) {
      const Value idx = f().iadd(lid_, c(e * p_.invocations()));
      const auto body = [&] {
        const Value row = f().iadd(first, f().udiv(idx, c(d8_)));
        const Value g = f().iadd(f().imul(f().iadd(base, f().umin(row, last)), c(d8_)), f().rem(idx, c(d8_)));
        f().store(f().accessChain(shared, {idx}), f().select(f().lt(row, total), f().loadAt(b, g), zero));
      };
      if ((e + 1) * p_.invocations() <= vecs)
        body();
      else
        f().ifThen(f().lt(idx, c(vecs)), body);
    }
  }

  void setup() {
    Tq_ = f().loadPush(pc_, 0);
    Tk_ = f().loadPush(pc_, 1);
    const Value H = f().loadPush(pc_, 2), Hkv = f().loadPush(pc_, 3);
    scale_ = f().loadPush(pc_, 4);
    lid_ = f().localId(0);
    const Value bh = f().workgroupId(1), b = f().udiv(bh, H), h = f().rem(bh, H);
    qBase_ = f().imul(bh, Tq_);
    kvBase_ = f().imul(f().iadd(f().imul(b, Hkv), f().udiv(h, f().udiv(H, Hkv))), Tk_);
    blockRow_ = f().imul(f().workgroupId(0), c(p_.rows()));
    sg_ = f().builtin(BuiltIn::SubgroupId);
    const Value lane = f().builtin(BuiltIn::SubgroupLocalInvocationId);
    rowInSg_ = f().shr(lane, c(1));
    half_ = f().bitAnd(lane, c(1));
    row_ = f().iadd(blockRow_, f().iadd(f().imul(sg_, c(16)), rowInSg_));
    limit_ = keyLimit(f().umin(row_, f().isub(Tq_, c(1))));
    sBase_ = f().imul(sg_, c(16 * p_.tile)); // this subgroup's S / P scratch

    stage(shQ_, q_, qBase_, blockRow_, p_.rows(), Tq_);
    f().workgroupBarrier();
    const Value qRows = f().imul(f().imul(sg_, c(16)), c(d8_));
    for (uint32_t d = 0; d < blocks_; ++d)
      qa_.push_back(f().coopLoad(ta_, f().accessChain(shQ_, {f().iadd(qRows, c(2 * d))}), c(d8_),
                                 CoopLayout::RowMajorKHR));

    mVar_ = f().variable(f32_, f().f32(kMinFloat));
    lVar_ = f().variable(f32_, f().f32(0.0f));
    const Value z = f().f32(0.0f);
    const Value zero4 = m_.constComposite(m_.vectorType(f32_, 4), {z, z, z, z});
    for (uint32_t i = 0; i < 2 * blocks_; ++i)
      oVars_.push_back(f().variable(m_.vectorType(f32_, 4), zero4));
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
    const TypeId vec4 = m_.vectorType(f32_, 4);
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
        f().store(o, f().fadd(f().load(o), f().construct(vec4, x)));
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

  const AttentionCoopParams& p_;
  uint32_t d8_, blocks_;
  Module m_;
  FunctionBuilder* f_ = nullptr;
  TypeId f32_, f16_, u32_, uvec4_, ta_, tb_, tc_;
  Buffer q_, k_, v_, o_, lse_;
  PushConstants pc_;
  Value shQ_, shK_, shV_, shS_, shP_;
  Value Tq_, Tk_, scale_, lid_, qBase_, kvBase_, blockRow_, sg_, rowInSg_, half_, row_, limit_, sBase_;
  Value mVar_, lVar_;
  std::vector<Value> qa_, oVars_;
};

} // namespace

uint32_t AttentionCoopParams::sharedBytes() const {
  return 2 * headDim * (rows() + 2 * tile) + subgroups * 16 * tile * (4 + 2);
}

std::string AttentionCoopParams::cacheKey() const {
  return "attention_coop:fwd:d" + std::to_string(headDim) + (causal ? ":causal" : ":dense") + ":sg" +
         std::to_string(subgroups) + ":t" + std::to_string(tile) + ":sgs" + std::to_string(subgroupSize) +
         ":smem" + std::to_string(maxSharedBytes);
}

std::string AttentionCoopParams::name() const {
  return std::string("attention_coop_fwd") + (causal ? "_causal" : "") + "_d" + std::to_string(headDim) +
         "_sg" + std::to_string(subgroups) + "_t" + std::to_string(tile);
}

void AttentionCoopParams::validate() const {
  const std::string me = name() + ": ";
  require(headDim && headDim % 16 == 0 && headDim <= 128,
          me + "headDim must be a multiple of 16, at most 128");
  require(tile == 32, me + "tile must be 32 (two lanes per row, 16 keys each)");
  require(subgroupSize == 32, me + "needs 32-wide subgroups (two lanes for each of 16 rows)");
  require(subgroups >= 1 && subgroups <= 8, me + "subgroups must be in [1, 8]");
  require(sharedBytes() <= maxSharedBytes, me + "needs " + std::to_string(sharedBytes()) +
                                               " bytes of shared memory, device allows " +
                                               std::to_string(maxSharedBytes));
}

AttentionCoopParams attentionCoopParams(uint32_t headDim, bool causal, uint32_t maxSharedBytes) {
  AttentionCoopParams p;
  p.headDim = headDim;
  p.causal = causal;
  p.maxSharedBytes = maxSharedBytes;
  for (uint32_t sg : {4u, 2u, 1u}) {
    p.subgroups = sg;
    if (p.sharedBytes() <= maxSharedBytes) break;
  }
  p.validate();
  return p;
}

Kernel generateAttentionCoop(const AttentionCoopParams& p) {
  p.validate();
  Kernel k;
  k.name = p.name();
  k.cacheKey = p.cacheKey();
  k.spirv = AttentionCoopBuilder(p).build(k.pushConstantBytes);
  k.numBuffers = 5;
  k.localSize = {p.invocations(), 1, 1};
  k.requiredSubgroupSize = p.subgroupSize;
  return k;
}

void registerAttentionCoop(KernelRegistry& registry) {
  registry.add({"attention.coop",
                "fused attention forward on cooperative matrices (KHR 16x16x16 f16 -> f32), causal or dense",
                [] { return generateAttentionCoop(attentionCoopParams(64, true)); },
                [] {
                  std::vector<Kernel> ks;
                  for (uint32_t d : {16u, 64u, 128u})
                    for (bool causal : {false, true}) {
                      ks.push_back(generateAttentionCoop(attentionCoopParams(d, causal)));
                      AttentionCoopParams one = attentionCoopParams(d, causal);
                      one.subgroups = 1;
                      ks.push_back(generateAttentionCoop(one));
                    }
                  return ks;
                }});
}

} // namespace helios::codegen
