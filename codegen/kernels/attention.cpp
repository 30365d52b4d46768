// Fused attention fallback generator (see attention.hpp). Each pass, in the order it is emitted:
//   setup:  which (batch, head) and row block the workgroup owns; this invocation's row (clamped to the last
//           real row, so loads stay in bounds; only the final writes are guarded) held in registers as D/4
//           vectors
//   loop:   for each tile of the other side: stage it in shared memory (zero past the end), barrier, the
//   row's
//           update over the tile's visible rows, barrier
//   finish: write the row's results
#include "codegen/kernels/attention.hpp"

#include <cmath>
#include <functional>
#include <optional>
#include <stdexcept>
#include <utility>

#include "codegen/kernels/row_reduce.hpp"
#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

using namespace helios::spv;

const char* toString(AttentionPass p) {
  switch (p) {
  case AttentionPass::Forward:
    return "fwd";
  case AttentionPass::QueryGrad:
    return "dq";
  case AttentionPass::KeyValueGrad:
    return "dkv";
  }
  return "?";
}

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

using Row = std::vector<Value>; // D/4 vec4 values

class AttentionBuilder {
public:
  explicit AttentionBuilder(const AttentionParams& p)
      : p_(p), f32_(m_.f32()), u32_(m_.u32()), v4_(m_.vectorType(f32_, 4)), d4_(p.headDim / 4),
        dl_(d4_ / p.lanes), pc_(declarePush<AttentionPush>(m_)) {}

  Kernel build() {
    switch (p_.pass) {
    case AttentionPass::Forward:
      forward();
      break;
    case AttentionPass::QueryGrad:
      queryGrad();
      break;
    case AttentionPass::KeyValueGrad:
      keyValueGrad();
      break;
    }
    return linearKernel(p_.name(), p_.cacheKey(), m_.build(), numBuffers_, pc_.size, p_.rows);
  }

private:
  Buffer rowBuffer(Access access) { return m_.storageBuffer(numBuffers_++, v4_, access); }
  Buffer scalarBuffer(Access access) { return m_.storageBuffer(numBuffers_++, f32_, access); }
  bool documents() const { return p_.documents == DocumentMask::Packed; }
  // The positions binding, after the pass's others (documents only).
  void declarePositions() {
    if (documents()) positions_ = m_.storageBuffer(numBuffers_++, u32_, Access::ReadOnly);
  }
  // The first key query i (< Tq) of batch b sees: i - positions[b, i] (0 for a position past i).
  Value docStart(Value b, Value i) {
    return satSub(i, f().loadAt(positions_, f().iadd(f().imul(b, Tq_), i)));
  }
  Value c(uint32_t v) { return f().u32(v); }
  FunctionBuilder& f() { return *f_; }

  void begin() {
    f_ = &m_.entryPoint("main", {p_.rows, 1, 1});
    Tq_ = f().loadPush(pc_, 0);
    Tk_ = f().loadPush(pc_, 1);
    H_ = f().loadPush(pc_, 2);
    Hkv_ = f().loadPush(pc_, 3);
    scale_ = f().loadPush(pc_, 4);
    group_ = f().udiv(H_, Hkv_);
    lid_ = f().localId(0);
    block_ = f().workgroupId(0);
    // This invocation's row within the block and its share of the row (vectors [part*dl, part*dl + dl)).
    rowInBlock_ = f().udiv(lid_, c(p_.lanes));
    part_ = f().imul(f().rem(lid_, c(p_.lanes)), c(dl_));
    firstLane_ = f().eq(f().rem(lid_, c(p_.lanes)), c(0));
  }
  // First owned row of this workgroup, and the owned row of this invocation.
  Value blockRow() { return f().imul(block_, c(p_.rowsPerGroup())); }
  Value ownRow() { return f().iadd(blockRow(), rowInBlock_); }

  // max(a - b, 0) in unsigned arithmetic.
  Value satSub(Value a, Value b) { return f().select(f().ge(a, b), f().isub(a, b), c(0)); }
  // Keys visible to query i: min(Tk, i + 1 + Tk - Tq) with the causal mask, else Tk.
  Value keyLimit(Value i) {
    return p_.causal ? f().umin(Tk_, satSub(f().iadd(f().iadd(i, c(1)), Tk_), Tq_)) : Tk_;
  }
  // First query that sees key j: j + Tq - Tk (at least 0) with the causal mask, else 0.
  Value firstQuery(Value j) { return p_.causal ? satSub(f().iadd(j, Tq_), Tk_) : c(0); }

  // Rows below are this invocation's share of a row: dl = D/4/lanes vectors.
  Row loadRow(const Buffer& b, Value row) {
    const Value base = f().iadd(f().imul(row, c(d4_)), part_);
    Row r;
    for (uint32_t i = 0; i < dl_; ++i)
      r.push_back(f().loadAt(b, f().iadd(base, c(i))));
    return r;
  }
  void storeRow(const Buffer& b, Value row, const Row& r) {
    const Value base = f().iadd(f().imul(row, c(d4_)), part_);
    for (uint32_t i = 0; i < dl_; ++i)
      f().storeAt(b, f().iadd(base, c(i)), r[i]);
  }
  Row sharedRow(Value shared, Value r) {
    const Value base = f().iadd(f().imul(r, c(d4_)), part_);
    Row out;
    for (uint32_t i = 0; i < dl_; ++i)
      out.push_back(f().load(f().accessChain(shared, {f().iadd(base, c(i))})));
    return out;
  }
  // The full dot product: this share's, then a butterfly over the row's lanes (every lane gets the same sum).
  Value dotRow(const Row& a, const Row& b) {
    Value s = f().dot(a[0], b[0]);
    for (uint32_t i = 1; i < dl_; ++i)
      s = f().fadd(s, f().dot(a[i], b[i]));
    for (uint32_t m = 1; m < p_.lanes; m <<= 1)
      s = f().fadd(s, f().subgroupShuffleXor(s, c(m)));
    return s;
  }
  std::vector<Value> rowVariables() {
    std::vector<Value> vars;
    const Value z = f().f32(0.0f), zero = m_.constComposite(v4_, {z, z, z, z});
    for (uint32_t i = 0; i < dl_; ++i)
      vars.push_back(f().variable(v4_, zero));
    return vars;
  }
  // vars[i] = vars[i] * keep + r[i] * w   (keep = 1: plain accumulation)
  void accumulate(const std::vector<Value>& vars, const Row& r, Value w, std::optional<Value> keep = {}) {
    for (uint32_t i = 0; i < dl_; ++i) {
      Value old = f().load(vars[i]);
      if (keep) old = f().vectorTimesScalar(old, *keep);
      f().store(vars[i], f().fadd(old, f().vectorTimesScalar(r[i], w)));
    }
  }
  Row loadVariables(const std::vector<Value>& vars, std::optional<Value> times = {}) {
    Row r;
    for (const Value& v : vars)
      r.push_back(times ? f().vectorTimesScalar(f().load(v), *times) : f().load(v));
    return r;
  }

  // Rows [first, first + tile) of a side with `count` rows starting at row `base` of `b`, into `shared`
  // (zero past count). Every invocation copies tile*D/4 / rows vectors.
  void stageRows(Value shared, const Buffer& b, Value base, Value first, Value count) {
    const Value zero = f().splat(v4_, f().f32(0.0f));
    const Value last = f().isub(count, c(1));
    for (uint32_t e = 0; e < p_.tile * d4_ / p_.rows; ++e) {
      const Value idx = f().iadd(lid_, c(e * p_.rows));
      const Value row = f().iadd(first, f().udiv(idx, c(d4_)));
      const Value col = f().rem(idx, c(d4_));
      const Value g = f().iadd(f().imul(f().iadd(base, f().umin(row, last)), c(d4_)), col);
      f().store(f().accessChain(shared, {idx}), f().select(f().lt(row, count), f().loadAt(b, g), zero));
    }
  }
  // The document starts of queries [first, first + tile) of batch b (the last query's past Tq).
  void stageStarts(Value shared, Value b, Value first) {
    f().ifThen(f().lt(lid_, c(p_.tile)), [&] {
      const Value row = f().umin(f().iadd(first, lid_), f().isub(Tq_, c(1)));
      f().store(f().accessChain(shared, {lid_}), docStart(b, row));
    });
  }
  void stageScalars(Value shared, const Buffer& b, Value base, Value first, Value count) {
    f().ifThen(f().lt(lid_, c(p_.tile)), [&] {
      const Value row = f().iadd(first, lid_);
      const Value v = f().loadAt(b, f().iadd(base, f().umin(row, f().isub(count, c(1)))));
      f().store(f().accessChain(shared, {lid_}), f().select(f().lt(row, count), v, f().f32(0.0f)));
    });
  }

  // Query-row passes: (batch, head) = WorkgroupId.y, query row = block * rows + lid. Returns the row bases
  // of this head's queries and of its key/value head, the clamped row and whether it is real.
  struct QuerySide {
    Value qBase, kvBase, i, ic, active;
    Value b, start; // batch, and (documents) the row's first visible key
  };
  QuerySide querySide() {
    const Value bh = f().workgroupId(1);
    const Value b = f().udiv(bh, H_), h = f().rem(bh, H_);
    QuerySide s;
    s.qBase = f().imul(bh, Tq_);
    s.kvBase = f().imul(f().iadd(f().imul(b, Hkv_), f().udiv(h, group_)), Tk_);
    s.i = ownRow();
    s.active = f().lt(s.i, Tq_);
    s.ic = f().umin(s.i, f().isub(Tq_, c(1)));
    s.b = b;
    if (documents()) s.start = docStart(b, s.ic);
    return s;
  }

  // Key tiles the workgroup walks (up to the last visible key of its last real row), and per tile the
  // number of keys this row sees in it.
  Value keyTiles() {
    const Value lastRow = f().umin(f().iadd(blockRow(), c(p_.rowsPerGroup() - 1)), f().isub(Tq_, c(1)));
    return f().udiv(f().iadd(keyLimit(lastRow), c(p_.tile - 1)), c(p_.tile));
  }
  Value keysInTile(Value limit, Value t0) { return f().umin(c(p_.tile), satSub(limit, t0)); }

  // The query passes' walk over the key side: per tile, K and V rows staged in shared memory (declared on
  // first use), then body(shK, shV, jj) for each key jj of the tile this row sees (keys below `limit`; with
  // documents from the row's start on, and from the tile holding the block's first row's start).
  void walkKeys(const Buffer& k, const Buffer& v, const QuerySide& s, Value limit,
                const std::function<void(Value, Value, Value)>& body) {
    const Value shK = m_.workgroupArray(v4_, p_.tile * d4_), shV = m_.workgroupArray(v4_, p_.tile * d4_);
    const Value firstTile = documents() ? f().udiv(docStart(s.b, blockRow()), c(p_.tile)) : c(0);
    f().forRange(firstTile, keyTiles(), [&](Value t) {
      const Value t0 = f().imul(t, c(p_.tile));
      stageRows(shK, k, s.kvBase, t0, Tk_);
      stageRows(shV, v, s.kvBase, t0, Tk_);
      f().workgroupBarrier();
      const Value from = documents() ? satSub(s.start, t0) : c(0);
      f().forRange(from, keysInTile(limit, t0), [&](Value jj) { body(shK, shV, jj); });
      f().workgroupBarrier();
    });
  }

  void forward() {
    const Buffer q = rowBuffer(Access::ReadOnly), k = rowBuffer(Access::ReadOnly),
                 v = rowBuffer(Access::ReadOnly), o = rowBuffer(Access::WriteOnly);
    const Buffer lse = scalarBuffer(Access::WriteOnly);
    declarePositions();
    begin();
    const QuerySide s = querySide();
    const Row qi = loadRow(q, f().iadd(s.qBase, s.ic));
    const Value limit = keyLimit(s.ic);
    const Value mVar = f().variable(f32_, f().f32(kMinFloat)), lVar = f().variable(f32_, f().f32(0.0f));
    const auto acc = rowVariables();
    walkKeys(k, v, s, limit, [&](Value shK, Value shV, Value jj) {
      const Value sc = f().fmul(scale_, dotRow(qi, sharedRow(shK, jj)));
      const Value mOld = f().load(mVar), mNew = f().fmax(mOld, sc);
      const Value corr = f().exp(f().fsub(mOld, mNew)), pr = f().exp(f().fsub(sc, mNew));
      f().store(lVar, f().fma(f().load(lVar), corr, pr));
      f().store(mVar, mNew);
      accumulate(acc, sharedRow(shV, jj), pr, corr);
    });
    f().ifThen(s.active, [&] {
      const Value l = f().load(lVar), seen = f().gt(l, f().f32(0.0f));
      const Value inv = f().select(seen, f().fdiv(f().f32(1.0f), l), f().f32(0.0f));
      const Value row = f().iadd(s.qBase, s.i);
      storeRow(o, row, loadVariables(acc, inv));
      const Value logL = f().log(f().select(seen, l, f().f32(1.0f)));
      f().ifThen(firstLane_, [&] {
        f().storeAt(lse, row, f().select(seen, f().fadd(f().load(mVar), logL), f().f32(-INFINITY)));
      });
    });
    f().ret();
  }

  void queryGrad() {
    const Buffer q = rowBuffer(Access::ReadOnly), k = rowBuffer(Access::ReadOnly),
                 v = rowBuffer(Access::ReadOnly), o = rowBuffer(Access::ReadOnly),
                 dO = rowBuffer(Access::ReadOnly);
    const Buffer lse = scalarBuffer(Access::ReadOnly);
    const Buffer dQ = rowBuffer(Access::WriteOnly);
    const Buffer delta = scalarBuffer(Access::WriteOnly);
    declarePositions();
    begin();
    const QuerySide s = querySide();
    const Value row = f().iadd(s.qBase, s.ic);
    const Row qi = loadRow(q, row), dOi = loadRow(dO, row);
    const Value di = dotRow(dOi, loadRow(o, row));
    const Value lseI = f().loadAt(lse, row);
    const Value limit = keyLimit(s.ic);
    const auto dq = rowVariables();
    walkKeys(k, v, s, limit, [&](Value shK, Value shV, Value jj) {
      const Row kj = sharedRow(shK, jj);
      const Value pr = f().exp(f().fsub(f().fmul(scale_, dotRow(qi, kj)), lseI));
      const Value ds = f().fmul(pr, f().fsub(dotRow(dOi, sharedRow(shV, jj)), di));
      accumulate(dq, kj, ds);
    });
    f().ifThen(s.active, [&] {
      const Value out = f().iadd(s.qBase, s.i);
      storeRow(dQ, out, loadVariables(dq, scale_));
      f().ifThen(firstLane_, [&] { f().storeAt(delta, out, di); });
    });
    f().ret();
  }

  void keyValueGrad() {
    const Buffer q = rowBuffer(Access::ReadOnly), k = rowBuffer(Access::ReadOnly),
                 v = rowBuffer(Access::ReadOnly), dO = rowBuffer(Access::ReadOnly);
    const Buffer lse = scalarBuffer(Access::ReadOnly), delta = scalarBuffer(Access::ReadOnly);
    const Buffer dK = rowBuffer(Access::WriteOnly), dV = rowBuffer(Access::WriteOnly);
    declarePositions();
    const Value shQ = m_.workgroupArray(v4_, p_.tile * d4_), shDO = m_.workgroupArray(v4_, p_.tile * d4_);
    const Value shLse = m_.workgroupArray(f32_, p_.tile), shDelta = m_.workgroupArray(f32_, p_.tile);
    const Value shStart = documents() ? m_.workgroupArray(u32_, p_.tile) : Value{};
    begin();
    // (batch, kv head) = WorkgroupId.y; key row = block * rows + lid.
    const Value bhk = f().workgroupId(1);
    const Value b = f().udiv(bhk, Hkv_), hk = f().rem(bhk, Hkv_);
    const Value kvBase = f().imul(bhk, Tk_);
    const Value j = ownRow();
    const Value jc = f().umin(j, f().isub(Tk_, c(1)));
    const Row kj = loadRow(k, f().iadd(kvBase, jc)), vj = loadRow(v, f().iadd(kvBase, jc));
    const Value first = firstQuery(jc);
    // Query tiles from the one holding the block's first visible query to the end.
    const Value tileStart = f().udiv(firstQuery(blockRow()), c(p_.tile));
    const Value tileEnd = f().udiv(f().iadd(Tq_, c(p_.tile - 1)), c(p_.tile));
    // Documents: queries of a tile that starts after the block's last key see none of its keys, nor do
    // those of any later tile.
    const Value lastKey =
        documents() ? f().umin(f().iadd(blockRow(), c(p_.rowsPerGroup() - 1)), f().isub(Tk_, c(1))) : Value{};
    const auto dk = rowVariables(), dv = rowVariables();
    f().forRange(c(0), group_, [&](Value g) {
      const Value qBase = f().imul(f().iadd(f().imul(b, H_), f().iadd(f().imul(hk, group_), g)), Tq_);
      f().forRange(tileStart, tileEnd, [&](Value t) {
        const Value t0 = f().imul(t, c(p_.tile));
        if (documents()) f().ifThen(f().gt(docStart(b, t0), lastKey), [&] { f().breakLoop(); });
        stageRows(shQ, q, qBase, t0, Tq_);
        stageRows(shDO, dO, qBase, t0, Tq_);
        stageScalars(shLse, lse, qBase, t0, Tq_);
        stageScalars(shDelta, delta, qBase, t0, Tq_);
        if (documents()) stageStarts(shStart, b, t0);
        f().workgroupBarrier();
        f().forRange(c(0), c(p_.tile), [&](Value ii) {
          const Value i = f().iadd(t0, ii);
          Value seen = f().logicalAnd(f().lt(i, Tq_), f().ge(i, first));
          if (documents()) seen = f().logicalAnd(seen, f().le(f().load(f().accessChain(shStart, {ii})), jc));
          const Row qi = sharedRow(shQ, ii), dOi = sharedRow(shDO, ii);
          const Value lseI = f().load(f().accessChain(shLse, {ii}));
          // Unseen rows may hold lse = -inf (or zeros past the end): select, never multiply, their p.
          const Value pr =
              f().select(seen, f().exp(f().fsub(f().fmul(scale_, dotRow(qi, kj)), lseI)), f().f32(0.0f));
          accumulate(dv, dOi, pr);
          const Value di = f().load(f().accessChain(shDelta, {ii}));
          accumulate(dk, qi, f().fmul(pr, f().fsub(dotRow(dOi, vj), di)));
        });
        f().workgroupBarrier();
      });
    });
    f().ifThen(f().lt(j, Tk_), [&] {
      const Value out = f().iadd(kvBase, j);
      storeRow(dK, out, loadVariables(dk, scale_));
      storeRow(dV, out, loadVariables(dv));
    });
    f().ret();
  }

  const AttentionParams& p_;
  Module m_;
  TypeId f32_, u32_, v4_;
  uint32_t d4_, dl_;
  PushConstants pc_;
  uint32_t numBuffers_ = 0;
  Buffer positions_;
  FunctionBuilder* f_ = nullptr;
  Value Tq_, Tk_, H_, Hkv_, scale_, group_, lid_, block_, rowInBlock_, part_, firstLane_;
};

} // namespace

std::string AttentionParams::cacheKey() const {
  return std::string("attention:") + toString(pass) + ":d" + std::to_string(headDim) +
         (causal ? ":causal" : ":dense") + ":r" + std::to_string(rows) + ":l" + std::to_string(lanes) + ":t" +
         std::to_string(tile) + (documents == DocumentMask::Packed ? ":docs" : "");
}

std::string AttentionParams::name() const {
  return std::string("attention_") + toString(pass) + (causal ? "_causal" : "") + "_d" +
         std::to_string(headDim) + "_r" + std::to_string(rows) + "_l" + std::to_string(lanes) + "_t" +
         std::to_string(tile) + (documents == DocumentMask::Packed ? "_docs" : "");
}

uint32_t AttentionParams::bindings() const {
  return (pass == AttentionPass::Forward ? 5 : 8) + (documents == DocumentMask::Packed ? 1 : 0);
}

uint32_t AttentionParams::sharedBytes() const {
  const uint32_t rowsBytes = 2 * tile * headDim * 4;
  const uint32_t scalars = documents == DocumentMask::Packed ? 3 : 2; // lse, delta (+ starts)
  return pass == AttentionPass::KeyValueGrad ? rowsBytes + scalars * tile * 4 : rowsBytes;
}

void AttentionParams::validate() const {
  const std::string me = "attention " + name() + ": ";
  require(headDim && headDim % 4 == 0 && headDim <= 256, me + "headDim must be a multiple of 4, at most 256");
  require(rows >= 1 && rows <= 1024, me + "rows must be in [1, 1024]");
  require(documents == DocumentMask::None || causal, me + "document masks are causal");
  require(lanes == 1 || lanes == 2 || lanes == 4 || lanes == 8, me + "lanes must be 1, 2, 4 or 8");
  require(rows % lanes == 0 && (headDim / 4) % lanes == 0, me + "rows and D/4 must be multiples of lanes");
  require(tile >= 1 && tile <= rows, me + "tile must be in [1, rows]");
  require((tile * headDim / 4) % rows == 0, me + "a tile (" + std::to_string(tile * headDim / 4) +
                                                " vectors) must split evenly over " + std::to_string(rows) +
                                                " invocations");
  require(sharedBytes() <= maxSharedBytes, me + "needs " + std::to_string(sharedBytes()) +
                                               " bytes of shared memory (the device has " +
                                               std::to_string(maxSharedBytes) + "): use a smaller tile");
}

AttentionParams attentionParams(AttentionPass pass, uint32_t headDim, bool causal, uint32_t maxSharedBytes,
                                uint32_t rowVectors, DocumentMask documents) {
  AttentionParams p;
  p.maxSharedBytes = maxSharedBytes;
  p.pass = pass;
  p.headDim = headDim;
  p.causal = causal;
  p.documents = documents;
  // Each invocation keeps at most rowVectors vectors of a row (8: 64 on 2 lanes, 128 on 4; 36: 9 vectors, 1
  // lane), as far as 8 lanes allow.
  const uint32_t d4 = headDim / 4;
  for (uint32_t l : {1u, 2u, 4u, 8u})
    if (d4 % l == 0 && d4 / p.lanes > rowVectors) p.lanes = l;
  for (uint32_t tile : {32u, 16u, 64u, 8u}) {
    p.tile = tile;
    try {
      p.validate();
      return p;
    } catch (const std::invalid_argument&) {
    }
  }
  p.validate(); // throws with the reason for the last candidate
  return p;
}

Kernel generateAttention(const AttentionParams& p) {
  p.validate();
  return AttentionBuilder(p).build();
}

void registerAttention(KernelRegistry& registry) {
  registry.add(
      {"attention.fused",
       "fused attention without cooperative matrices: forward (online softmax, lse), dQ (+delta), "
       "dK/dV; causal or dense, any head dim that is a multiple of 4",
       [] { return generateAttention(attentionParams(AttentionPass::Forward, 64, true)); },
       [] {
         std::vector<Kernel> ks;
         for (auto pass : {AttentionPass::Forward, AttentionPass::QueryGrad, AttentionPass::KeyValueGrad})
           for (uint32_t d : {64u, 128u, 4u, 36u})
             for (bool causal : {false, true}) {
               ks.push_back(generateAttention(attentionParams(pass, d, causal)));
             }
         return ks;
       }});
  registry.add(
      {"attention.fused.documents",
       "the fused attention fallback's passes masked to each query's document (packed sequences)",
       [] {
         return generateAttention(
             attentionParams(AttentionPass::Forward, 64, true, 49152, 8, DocumentMask::Packed));
       },
       [] {
         std::vector<Kernel> ks;
         for (auto pass : {AttentionPass::Forward, AttentionPass::QueryGrad, AttentionPass::KeyValueGrad})
           for (const auto& [d, rowVectors] :
                {std::pair{64u, 8u}, {64u, 4u}, {128u, 8u}, {128u, 4u}, {36u, 8u}})
             ks.push_back(
                 generateAttention(attentionParams(pass, d, true, 49152, rowVectors, DocumentMask::Packed)));
         return ks;
       }});
}

} // namespace helios::codegen
