#include "codegen/kernels/gemm_tiled.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/kernels/elem_io.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

// ============================================================================ parameters

namespace {

// Width of the vectors an invocation reads from a shared row: its TM (or TN) values are split into groups of
// this many contiguous columns, groups strided by BM*width/TM, so that neighbouring invocations read
// neighbouring vectors (no bank conflicts, one wide load per group).
uint32_t readWidth(uint32_t t) {
  return t % 4 == 0 ? 4u : t % 2 == 0 ? 2u : 1u;
}

bool isPow2(uint32_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

uint32_t log2u(uint32_t v) {
  uint32_t r = 0;
  while (v > 1) {
    v >>= 1;
    ++r;
  }
  return r;
}

uint32_t parseUint(const std::string& text, size_t& pos) {
  size_t start = pos;
  uint32_t v = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    if (v > 100000000u) break;
    v = v * 10 + static_cast<uint32_t>(text[pos] - '0');
    ++pos;
  }
  if (pos == start)
    throw std::invalid_argument("GemmTile::parse: expected a number at position " + std::to_string(start) +
                                " of '" + text + "'");
  return v;
}

void expectChar(const std::string& text, size_t& pos, char c) {
  if (pos >= text.size() || text[pos] != c)
    throw std::invalid_argument(std::string("GemmTile::parse: expected '") + c + "' at position " +
                                std::to_string(pos) + " of '" + text + "' (form: 128x128x8_8x8_p4_s2)");
  ++pos;
}

} // namespace

uint32_t GemmTile::sharedBytes() const {
  return stages * BK * ((BM + pad) + (BN + pad)) * 4u;
}

std::string GemmTile::str() const {
  return std::to_string(BM) + "x" + std::to_string(BN) + "x" + std::to_string(BK) + "_" + std::to_string(TM) +
         "x" + std::to_string(TN) + "_p" + std::to_string(pad) + "_s" + std::to_string(stages);
}

GemmTile GemmTile::parse(const std::string& text) {
  GemmTile t;
  size_t pos = 0;
  t.BM = parseUint(text, pos);
  expectChar(text, pos, 'x');
  t.BN = parseUint(text, pos);
  expectChar(text, pos, 'x');
  t.BK = parseUint(text, pos);
  expectChar(text, pos, '_');
  t.TM = parseUint(text, pos);
  expectChar(text, pos, 'x');
  t.TN = parseUint(text, pos);
  while (pos < text.size()) {
    expectChar(text, pos, '_');
    if (pos < text.size() && text[pos] == 'p') {
      ++pos;
      t.pad = parseUint(text, pos);
    } else if (pos < text.size() && text[pos] == 's') {
      ++pos;
      t.stages = parseUint(text, pos);
    } else {
      throw std::invalid_argument("GemmTile::parse: unknown suffix at position " + std::to_string(pos) +
                                  " of '" + text + "' (expected _pN or _sN)");
    }
  }
  return t;
}

std::string GemmTiledParams::cacheKey() const {
  return std::string("gemm_tiled:in=") + elemName(inType) + ";out=" + elemName(outType) +
         ";tA=" + (transA ? "1" : "0") + ";tB=" + (transB ? "1" : "0") + ";batched=" + (batched ? "1" : "0") +
         ";bias=" + (bias ? "1" : "0") + ";gelu=" + (gelu ? "1" : "0") + ";v4=" + (vec4Aligned ? "1" : "0") +
         ";tile=" + tile.str();
}

std::string GemmTiledParams::name() const {
  std::string n = std::string("gemm_tiled_") + elemName(inType) + elemName(outType) + "_" +
                  (transA ? "t" : "n") + (transB ? "t" : "n");
  if (batched) n += "_b";
  if (bias) n += "_bias";
  if (gelu) n += "_gelu";
  if (vec4Aligned) n += "_v4";
  return n + "_" + tile.str();
}

void GemmTiledParams::validate(const GemmDeviceLimits& limits) const {
  const auto fail = [&](const std::string& why) {
    throw std::invalid_argument("gemm_tiled " + tile.str() + ": " + why);
  };
  const GemmTile& t = tile;
  if (t.BM == 0 || t.BN == 0 || t.BK == 0 || t.TM == 0 || t.TN == 0) fail("tile sizes must be positive");
  if (t.BM % t.TM != 0)
    fail("BM (" + std::to_string(t.BM) + ") must be a multiple of TM (" + std::to_string(t.TM) + ")");
  if (t.BN % t.TN != 0)
    fail("BN (" + std::to_string(t.BN) + ") must be a multiple of TN (" + std::to_string(t.TN) + ")");
  if (t.TM * t.TN > 256)
    fail("TM*TN = " + std::to_string(t.TM * t.TN) + " accumulators exceed 256 registers");
  if (t.BK > 64) fail("BK (" + std::to_string(t.BK) + ") above 64 (the K step is fully unrolled)");
  if (t.stages != 1 && t.stages != 2) fail("stages must be 1 or 2, got " + std::to_string(t.stages));
  if (t.pad % readWidth(t.TM) != 0 || t.pad % readWidth(t.TN) != 0)
    fail("pad (" + std::to_string(t.pad) + ") must be a multiple of the shared read widths " +
         std::to_string(readWidth(t.TM)) + " and " + std::to_string(readWidth(t.TN)));
  const uint32_t threads = t.threads();
  if (threads > limits.maxInvocations)
    fail(std::to_string(threads) + " invocations exceed the device limit " +
         std::to_string(limits.maxInvocations));
  if ((t.BM * t.BK) % threads != 0 || (t.BN * t.BK) % threads != 0)
    fail("BM*BK (" + std::to_string(t.BM * t.BK) + ") and BN*BK (" + std::to_string(t.BN * t.BK) +
         ") must be multiples of the " + std::to_string(threads) + " invocations");
  if (t.sharedBytes() > limits.maxSharedBytes)
    fail(std::to_string(t.sharedBytes()) + " bytes of shared memory exceed the device limit " +
         std::to_string(limits.maxSharedBytes));
}

// ============================================================================ generator

namespace {

using spv::Buffer;
using spv::FunctionBuilder;
using spv::Module;
using spv::TypeId;
using spv::Value;

// One input operand (A or B) as the kernel sees it: a BK x extent tile per K step, staged in shared memory
// as Xs[stage][k][mn] (rows of `rowLen` floats, read as vectors of `readW`), loaded from global memory by
// `loads` slots per invocation, each slot `width` (1 or 4) contiguous elements.
struct Operand {
  bool kMajor = false;     // global layout contiguous along K (A NN, B NT) rather than along M/N
  uint32_t extent = 0;     // BM or BN
  uint32_t width = 1;      // global load width
  uint32_t readW = 1;      // shared vector width
  uint32_t rowLen = 0;     // floats per shared row
  uint32_t loads = 0;      // load slots per invocation per K step
  uint32_t stageElems = 0; // shared vectors per stage
  Buffer buf;
  Value shared; // Workgroup vec<readW>[stages * BK * rowLen / readW]
  Value dim;    // M or N
  Value kStep;  // global index advance (in `width` units) per K step
  // Loop invariants per load slot.
  std::vector<Value> globalBase, mnOk, kLocal, sharedBase, sharedComp;
};

class GemmTiledGen {
public:
  explicit GemmTiledGen(const GemmTiledParams& p) : p_(p), t_(p.tile) {}

  Kernel build() {
    declareInterface();
    f_ = &m_.entryPoint("main", {t_.threads(), 1, 1});
    computeIds();
    planOperand(a_);
    planOperand(b_);
    declareAccumulators();
    mainLoop();
    epilogue();
    f_->ret();
    return Kernel{p_.name(), p_.cacheKey(), m_.build(), p_.bias ? 4u : 3u, pc_.size, {t_.threads(), 1, 1}, 0};
  }

private:
  // ---------------------------------------------------------------- small arithmetic helpers
  FunctionBuilder& f() { return *f_; }
  Value u(uint32_t v) { return f().u32(v); }
  Value udivConst(Value v, uint32_t c) {
    if (c == 1) return v;
    if (const auto k = constOf(v)) return u(*k / c);
    return isPow2(c) ? f().shr(v, u(log2u(c))) : f().udiv(v, u(c));
  }
  Value umodConst(Value v, uint32_t c) {
    if (c == 1) return u(0);
    if (const auto k = constOf(v)) return u(*k % c);
    return isPow2(c) ? f().bitAnd(v, u(c - 1)) : f().rem(v, u(c));
  }
  // Folding versions of the integer helpers, so that constant parts (batch offset 0 when not batched, stage
  // 0, K step 0) leave no instructions behind.
  std::optional<uint32_t> constOf(Value v) const {
    const auto bits = m_.constantBits(v);
    return bits ? std::optional<uint32_t>(static_cast<uint32_t>(*bits)) : std::nullopt;
  }
  Value mulConst(Value v, uint32_t c) {
    if (c == 0) return u(0);
    if (c == 1) return v;
    if (const auto k = constOf(v)) return u(*k * c);
    return isPow2(c) ? f().shl(v, u(log2u(c))) : f().imul(v, u(c));
  }
  Value add(Value a, Value b) {
    const auto ka = constOf(a), kb = constOf(b);
    if (ka && kb) return u(*ka + *kb);
    if (ka == 0u) return b;
    if (kb == 0u) return a;
    return f().iadd(a, b);
  }
  Value addConst(Value v, uint32_t c) { return add(v, u(c)); }
  Value mul(Value a, Value b) {
    const auto ka = constOf(a), kb = constOf(b);
    if (ka) return mulConst(b, *ka);
    if (kb) return mulConst(a, *kb);
    return f().imul(a, b);
  }
  TypeId f32Vec(uint32_t n) { return n == 1 ? m_.f32() : m_.vectorType(m_.f32(), n); }
  TypeId storageType(Elem t) { return elemStorageType(m_, t); }
  TypeId storageVec(Elem t, uint32_t n) { return elemStorageType(m_, t, n); }

  // ---------------------------------------------------------------- interface
  void declareInterface() {
    const uint32_t threads = t_.threads();
    a_.kMajor = !p_.transA;
    a_.extent = t_.BM;
    a_.readW = readWidth(t_.TM);
    b_.kMajor = p_.transB;
    b_.extent = t_.BN;
    b_.readW = readWidth(t_.TN);
    uint32_t binding = 0;
    for (Operand* op : {&a_, &b_}) {
      const uint32_t contiguous = op->kMajor ? t_.BK : op->extent;
      const bool vec = p_.vec4Aligned && contiguous % 4 == 0 && (op->extent * t_.BK / 4) % threads == 0;
      op->width = vec ? 4 : 1;
      op->loads = op->extent * t_.BK / op->width / threads;
      op->rowLen = op->extent + t_.pad;
      op->stageElems = t_.BK * op->rowLen / op->readW;
      op->buf = m_.storageBuffer(binding++, storageVec(p_.inType, op->width), spv::Access::ReadOnly);
      op->shared = m_.workgroupArray(f32Vec(op->readW), t_.stages * op->stageElems);
    }
    cWidth_ = (p_.vec4Aligned && b_.readW == 4) ? 4u : 1u;
    c_ = m_.storageBuffer(2, storageVec(p_.outType, cWidth_), spv::Access::ReadWrite);
    if (p_.bias) bias_ = m_.storageBuffer(3, storageType(p_.outType), spv::Access::ReadOnly);
    // GemmTiledPush, without the strides when unbatched (the GLSL oracle's block).
    static constexpr auto push = pushScalars<GemmTiledPush>();
    const size_t unbatched = offsetof(GemmTiledPush, strideA) / 4;
    pc_ = declarePush(m_, std::span<const PushScalar>(push).first(p_.batched ? push.size() : unbatched));
  }

  // Invocation, workgroup and batch coordinates; problem sizes.
  void computeIds() {
    M_ = f().loadPush(pc_, 0);
    N_ = f().loadPush(pc_, 1);
    K_ = f().loadPush(pc_, 2);
    alpha_ = f().loadPush(pc_, 3);
    beta_ = f().loadPush(pc_, 4);
    tid_ = f().localId(0);
    const uint32_t tnCount = t_.BN / t_.TN;
    tx_ = umodConst(tid_, tnCount);
    ty_ = udivConst(tid_, tnCount);
    n0_ = mulConst(f().workgroupId(0), t_.BN);
    m0_ = mulConst(f().workgroupId(1), t_.BM);
    if (p_.batched) {
      const Value z = f().workgroupId(2);
      offA_ = mul(z, f().loadPush(pc_, 5));
      offB_ = mul(z, f().loadPush(pc_, 6));
      offC_ = mul(z, f().loadPush(pc_, 7));
    } else {
      offA_ = offB_ = offC_ = u(0);
    }
    a_.dim = M_;
    b_.dim = N_;
  }

  // Per load slot: which element of the tile it fetches, its global index at K step 0, its bounds check in
  // M/N (loop-invariant), and where it lands in shared memory. All divisions happen here, outside the loop.
  void planOperand(Operand& op) {
    const uint32_t threads = t_.threads();
    const uint32_t w = op.width;
    const Value mn0 = (&op == &a_) ? m0_ : n0_;
    const Value batchOff = udivConst((&op == &a_) ? offA_ : offB_, w);
    const Value ld = op.kMajor ? K_ : op.dim;
    const Value ldW = udivConst(ld, w);
    const uint32_t contiguousUnits = (op.kMajor ? t_.BK : op.extent) / w;
    op.kStep = op.kMajor ? u(t_.BK / w) : mulConst(ldW, t_.BK);
    const uint32_t rowElems = op.rowLen / op.readW;
    for (uint32_t i = 0; i < op.loads; ++i) {
      const Value e = addConst(tid_, i * threads);
      const Value c = umodConst(e, contiguousUnits);
      const Value o = udivConst(e, contiguousUnits);
      const Value mnLocal = op.kMajor ? o : mulConst(c, w);
      const Value kLocal = op.kMajor ? mulConst(c, w) : o;
      const Value mn = add(mn0, mnLocal);
      op.mnOk.push_back(f().lt(mn, op.dim));
      op.kLocal.push_back(kLocal);
      Value base;
      if (op.kMajor)
        base = add(mul(mn, ldW), c); // (mn*ld + k) / w
      else
        base = add(mul(kLocal, ldW), udivConst(mn, w)); // (k*ld + mn) / w
      op.globalBase.push_back(add(batchOff, base));
      op.sharedBase.push_back(add(mulConst(kLocal, rowElems), udivConst(mnLocal, op.readW)));
      op.sharedComp.push_back(umodConst(mnLocal, op.readW));
    }
  }

  void declareAccumulators() {
    acc_.resize(static_cast<size_t>(t_.TM) * t_.TN);
    for (auto& v : acc_)
      v = f().variable(m_.f32(), m_.constF32(0.0f));
  }

  // ---------------------------------------------------------------- the K loop
  // Global -> registers for K step `kt`: one value (f32 or f32x4) per slot, zero outside the matrix.
  // Out-of-range slots read element 0 (always valid) and are replaced by zero, so the loop has no branches.
  std::vector<Value> loadTile(const Operand& op, Value kt) {
    const Value k0 = mulConst(kt, t_.BK);
    const Value step = mul(kt, op.kStep);
    const TypeId valueT = f32Vec(op.width);
    const Value zero = m_.constant(valueT, 0.0);
    std::vector<Value> regs;
    for (uint32_t i = 0; i < op.loads; ++i) {
      const Value ok = f().logicalAnd(op.mnOk[i], f().lt(add(op.kLocal[i], k0), K_));
      const Value index = f().select(ok, add(op.globalBase[i], step), u(0));
      const Value raw = elemToF32(f(), p_.inType, f().loadAt(op.buf, index));
      regs.push_back(f().select(ok, raw, zero));
    }
    return regs;
  }

  Value sharedPtr(const Operand& op, Value element, Value component) {
    if (op.readW == 1) return f().accessChain(op.shared, {element});
    return f().accessChain(op.shared, {element, component});
  }

  // Registers -> shared stage starting at vector `stageOff`: rows of the tile are K, columns M/N.
  void storeTile(const Operand& op, const std::vector<Value>& regs, Value stageOff) {
    const uint32_t rowElems = op.rowLen / op.readW;
    for (uint32_t i = 0; i < op.loads; ++i) {
      const Value base = add(op.sharedBase[i], stageOff);
      if (!op.kMajor && op.width >= op.readW) {
        // Contiguous along M/N in both places: whole vectors.
        for (uint32_t s = 0; s < op.width / op.readW; ++s) {
          Value chunk = regs[i];
          if (op.readW == 1 && op.width > 1)
            chunk = f().extract(regs[i], {s});
          else if (op.readW < op.width)
            chunk = f().shuffle(regs[i], regs[i], {s * op.readW, s * op.readW + 1});
          f().store(f().accessChain(op.shared, {addConst(base, s)}), chunk);
        }
      } else {
        // Transposing store (K-contiguous in global memory): one scalar per K row.
        for (uint32_t s = 0; s < op.width; ++s) {
          const Value v = op.width == 1 ? regs[i] : f().extract(regs[i], {s});
          f().store(sharedPtr(op, addConst(base, s * rowElems), op.sharedComp[i]), v);
        }
      }
    }
  }

  // The unrolled K step: for each k, this invocation's TM values of A and TN values of B from shared memory,
  // then TM*TN multiply-adds into SSA accumulators (loaded from / stored to Function variables once per
  // step).
  void computeTile(Value offA, Value offB) {
    std::vector<Value> acc(acc_.size());
    for (size_t i = 0; i < acc_.size(); ++i)
      acc[i] = f().load(acc_[i]);
    const Value baseA = add(offA, ty_);
    const Value baseB = add(offB, tx_);
    for (uint32_t k = 0; k < t_.BK; ++k) {
      const std::vector<Value> av = readShared(a_, baseA, k, t_.TM, t_.BM / t_.TM);
      const std::vector<Value> bv = readShared(b_, baseB, k, t_.TN, t_.BN / t_.TN);
      for (uint32_t i = 0; i < t_.TM; ++i)
        for (uint32_t j = 0; j < t_.TN; ++j) {
          Value& c = acc[i * t_.TN + j];
          c = f().fadd(f().fmul(av[i], bv[j]), c);
        }
    }
    for (size_t i = 0; i < acc_.size(); ++i)
      f().store(acc_[i], acc[i]);
  }

  // `count` scalars of row k: groups of readW contiguous values, group g at vector g*groupStride from base.
  std::vector<Value> readShared(const Operand& op, Value base, uint32_t k, uint32_t count,
                                uint32_t groupStride) {
    std::vector<Value> out;
    const uint32_t rowElems = op.rowLen / op.readW;
    for (uint32_t g = 0; g < count / op.readW; ++g) {
      const Value v = f().load(f().accessChain(op.shared, {addConst(base, k * rowElems + g * groupStride)}));
      if (op.readW == 1)
        out.push_back(v);
      else
        for (uint32_t c = 0; c < op.readW; ++c)
          out.push_back(f().extract(v, {c}));
    }
    return out;
  }

  void mainLoop() {
    const Value numSteps = udivConst(addConst(K_, t_.BK - 1), t_.BK);
    if (t_.stages == 1) {
      // load -> shared, barrier, compute, barrier.
      f().forRange(u(0), numSteps, [&](Value kt) {
        const std::vector<Value> ra = loadTile(a_, kt);
        const std::vector<Value> rb = loadTile(b_, kt);
        storeTile(a_, ra, u(0));
        storeTile(b_, rb, u(0));
        f().workgroupBarrier();
        computeTile(u(0), u(0));
        f().workgroupBarrier();
      });
      return;
    }
    // Double-buffered: step 0 staged up front; each step prefetches step kt+1 into registers, computes on
    // stage kt&1, writes the prefetch into the other stage, then one barrier.
    storeTile(a_, loadTile(a_, u(0)), u(0));
    storeTile(b_, loadTile(b_, u(0)), u(0));
    f().workgroupBarrier();
    f().forRange(u(0), numSteps, [&](Value kt) {
      const Value cur = f().bitAnd(kt, u(1));
      const Value next = f().bitXor(cur, u(1));
      const Value ktNext = add(kt, u(1));
      const std::vector<Value> ra = loadTile(a_, ktNext);
      const std::vector<Value> rb = loadTile(b_, ktNext);
      computeTile(mulConst(cur, a_.stageElems), mulConst(cur, b_.stageElems));
      storeTile(a_, ra, mulConst(next, a_.stageElems));
      storeTile(b_, rb, mulConst(next, b_.stageElems));
      f().workgroupBarrier();
    });
  }

  // ---------------------------------------------------------------- epilogue
  Value gelu(Value x) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); the tanh argument is clamped to +-15 (tanh = +-1 in
    // f32 there) so that no exp-based tanh overflows into inf/inf.
    const Value x3 = f().fmul(f().fmul(x, x), x);
    Value inner = f().fmul(f().f32(0.7978845608028654f), f().fadd(x, f().fmul(f().f32(0.044715f), x3)));
    inner = f().fmin(f().fmax(inner, f().f32(-15.0f)), f().f32(15.0f));
    return f().fmul(f().fmul(f().f32(0.5f), x), f().fadd(f().f32(1.0f), f().tanh(inner)));
  }

  // Row m of the C tile for register row i (and the same mapping for columns).
  Value tileCoord(Value origin, Value lane, uint32_t i, uint32_t block, uint32_t perThread, uint32_t readW) {
    const uint32_t g = i / readW, c = i % readW;
    return addConst(add(origin, mulConst(lane, readW)), g * (block * readW / perThread) + c);
  }

  // C = alpha*acc (+ beta*C) (+ bias) (GELU), stores bounds-checked per row and column group. The old C
  // values are loaded (clamped indices) in one uniform `beta != 0` branch, so beta == 0 never reads C (which
  // may hold NaN poison); phis join them with zeros.
  void epilogue() {
    const TypeId cVecT = f32Vec(cWidth_);
    std::vector<Value> cols(t_.TN), biasV(t_.TN);
    for (uint32_t j = 0; j < t_.TN; ++j) {
      cols[j] = tileCoord(n0_, tx_, j, t_.BN, t_.TN, b_.readW);
      if (p_.bias) {
        const Value safe = f().select(f().lt(cols[j], N_), cols[j], u(0));
        biasV[j] = elemToF32(f(), p_.outType, f().loadAt(bias_, safe));
      }
    }
    const Value offCW = udivConst(offC_, cWidth_);
    const Value nW = udivConst(N_, cWidth_);
    struct Group {
      uint32_t i, j;
      Value ok, index, old;
    };
    std::vector<Group> groups;
    for (uint32_t i = 0; i < t_.TM; ++i) {
      const Value row = tileCoord(m0_, ty_, i, t_.BM, t_.TM, a_.readW);
      const Value rowOk = f().lt(row, M_);
      const Value rowBase = add(offCW, mul(row, nW));
      for (uint32_t j = 0; j < t_.TN; j += cWidth_)
        groups.push_back({i, j, f().logicalAnd(rowOk, f().lt(cols[j], N_)),
                          add(rowBase, udivConst(cols[j], cWidth_)), Value{}});
    }
    const spv::BlockId before = f().currentBlock();
    spv::BlockId loadedIn{};
    std::vector<Value> loaded;
    f().ifThen(f().ne(beta_, f().f32(0.0f)), [&] {
      for (const Group& g : groups)
        loaded.push_back(elemToF32(f(), p_.outType, f().loadAt(c_, f().select(g.ok, g.index, u(0)))));
      loadedIn = f().currentBlock();
    });
    const Value zero = m_.constant(cVecT, 0.0);
    for (size_t k = 0; k < groups.size(); ++k)
      groups[k].old = f().phi(cVecT, {{loaded[k], loadedIn}, {zero, before}});

    for (const Group& g : groups) {
      f().ifThen(g.ok, [&] {
        std::vector<Value> outs;
        for (uint32_t s = 0; s < cWidth_; ++s) {
          Value v = f().fmul(alpha_, f().load(acc_[g.i * t_.TN + g.j + s]));
          v = f().fadd(v, f().fmul(beta_, cWidth_ == 1 ? g.old : f().extract(g.old, {s})));
          if (p_.bias) v = f().fadd(v, biasV[g.j + s]);
          if (p_.gelu) v = gelu(v);
          outs.push_back(v);
        }
        const Value result = cWidth_ == 1 ? outs[0] : f().construct(cVecT, outs);
        f().storeAt(c_, g.index, elemFromF32(f(), p_.outType, result));
      });
    }
  }

  const GemmTiledParams& p_;
  const GemmTile& t_;
  Module m_;
  FunctionBuilder* f_ = nullptr;
  Operand a_, b_;
  Buffer c_, bias_;
  uint32_t cWidth_ = 1;
  spv::PushConstants pc_;
  Value M_, N_, K_, alpha_, beta_, tid_, tx_, ty_, m0_, n0_, offA_, offB_, offC_;
  std::vector<Value> acc_;
};

} // namespace

Kernel generateGemmTiled(const GemmTiledParams& params, const GemmDeviceLimits& limits) {
  params.validate(limits);
  return GemmTiledGen(params).build();
}

// ============================================================================ registration

std::vector<GemmTile> gemmTiledSweepTiles() {
  return {
      {128, 128, 8, 8, 8, 4, 2},  // the planner's menu (engine/ops/gemm_plan_menu.hpp) ...
      {64, 64, 16, 4, 4, 4, 2},   //
      {32, 32, 8, 2, 2, 4, 2},    // ... and the tilings worth timing:
      {128, 128, 16, 8, 8, 4, 2}, // fewer barriers per FMA
      {128, 128, 8, 8, 8, 4, 1},  // single-buffered
      {128, 128, 8, 8, 8, 0, 2},  // unpadded (bank-conflict check)
      {128, 64, 8, 8, 4, 4, 2},   {64, 128, 8, 4, 8, 4, 2},
      {64, 64, 8, 4, 4, 4, 2},    {256, 128, 8, 8, 8, 4, 2}, // 512 invocations
      {64, 64, 16, 2, 8, 4, 2},                              // 2-wide shared reads along M
      {64, 16, 16, 1, 4, 4, 2}, // scalar shared reads along M with vec4 loads (tall, skinny)
      {24, 40, 8, 3, 5, 0, 2},  // odd, non-power-of-two geometry (64 invocations)
      {16, 16, 8, 2, 2, 2, 1},  // the minimal fallback
  };
}

void registerGemmTiled(KernelRegistry& registry) {
  const auto sweep = [] {
    std::vector<Kernel> out;
    // Every variant combination on the default tiling and on the odd one.
    for (const GemmTile& tile : {GemmTile{}, GemmTile{24, 40, 8, 3, 5, 0, 2}})
      for (uint32_t bits = 0; bits < 256; ++bits) {
        GemmTiledParams p;
        p.tile = tile;
        p.inType = (bits & 1) ? Elem::F16 : Elem::F32;
        p.outType = (bits & 2) ? Elem::F16 : Elem::F32;
        p.transA = (bits & 4) != 0;
        p.transB = (bits & 8) != 0;
        p.batched = (bits & 16) != 0;
        p.bias = (bits & 32) != 0;
        p.gelu = (bits & 64) != 0;
        p.vec4Aligned = (bits & 128) != 0;
        out.push_back(generateGemmTiled(p));
      }
    // Every other sweep tiling on representative variants.
    for (const GemmTile& tile : gemmTiledSweepTiles()) {
      if (tile == GemmTile{} || tile == GemmTile{24, 40, 8, 3, 5, 0, 2}) continue;
      for (int variant = 0; variant < 4; ++variant) {
        GemmTiledParams p;
        p.tile = tile;
        p.vec4Aligned = variant % 2 == 0;
        p.transA = variant == 1;
        p.transB = variant == 2;
        p.inType = variant == 3 ? Elem::F16 : Elem::F32;
        p.batched = p.bias = p.gelu = variant == 3;
        out.push_back(generateGemmTiled(p));
      }
    }
    // bf16 storage (widened exactly, C rounded to nearest even): every variant of layouts, C type, bias and
    // vectors on the default tiling.
    for (uint32_t bits = 0; bits < 32; ++bits) {
      GemmTiledParams p;
      p.inType = Elem::BF16;
      p.outType = (bits & 1) ? Elem::BF16 : Elem::F32;
      p.transA = (bits & 2) != 0;
      p.transB = (bits & 4) != 0;
      p.bias = p.gelu = (bits & 8) != 0;
      p.vec4Aligned = (bits & 16) != 0;
      out.push_back(generateGemmTiled(p));
    }
    return out;
  };
  registry.add({"gemm.tiled",
                "register-tiled GEMM (f32/f16/bf16 storage, NN/NT/TN/TT, batched, bias/GELU epilogue)",
                [] { return generateGemmTiled(GemmTiledParams{}); }, sweep});
}

} // namespace helios::codegen
