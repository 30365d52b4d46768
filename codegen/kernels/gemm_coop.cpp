// Cooperative-matrix GEMM generator. The kernel, in the order the generator emits it:
//
//   setup:     tile origin (swizzled workgroup id), batch offsets, this invocation's copy slots, this
//              subgroup's place in the tile, accumulators = 0
//   main loop: for kt in K / BK: loadTileToShared (global -> registers -> shared, 16-byte vectors, all
//              invocations), barrier, computeStage (coop loads from shared, MulAdd into the accumulators);
//              with 2 stages the next slice's global loads are issued before computing the current one and
//              land in the other buffer afterwards (one barrier per step); with copy subgroups
//              (`producers`) only those load and store the next slice while the others compute
//   epilogue:  alpha, beta * C (only when beta != 0), + bias[n] (a stride-0 coop load of C's type), GELU over
//              the accumulator's components, convert, coop store to C (or, with stagedStore, through shared
//              memory as 16-byte rows)
// Bounded (any shape): the copies read f16 scalars with bounds checks (16-byte vectors, each wholly inside or
// zeroed, when every size is a multiple of 8: boundedVectors), and C goes through shared memory as scalars
// (4-element vectors with stagedStore), the epilogue applied per element and only inside M x N. The edge
// tiles may instead move back inside M x N and the K steps start at K - steps * BK, so that only the first
// step's copies are checked (edgeShift). Scalar copies may read an operand crosswise (down
// its columns, staged in the other layout: crosswiseA/B) so that a subgroup's loads are contiguous.
// The tiling menu and the registry's sweep live in gemm_coop_registry.cpp.
#include "codegen/kernels/gemm_coop.hpp"

#include <functional>

#include "codegen/kernels/elem_io.hpp"
#include "codegen/kernels/gemm_coop_copies.hpp"
#include "codegen/kernels/gemm_coop_nv2.hpp"
#include "codegen/kernels/gemm_coop_parts.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

using namespace helios::spv;

namespace {

using coop::CopySlot;
using coop::Edge;
using coop::sharedAVecs;
using coop::stagedRowVecs;
using coop::tileA;
using coop::tileB;
using coop::TileCopy;

// Everything the pieces of the kernel share.
class GemmCoopBuilder {
public:
  explicit GemmCoopBuilder(const GemmCoopParams& p)
      : p_(p), m_(ModuleOptions{.coopLowerSubgroup = p.lowered ? p.subgroupSize : 0}), f_(declare()),
        copyA_(tileA(p)), copyB_(tileB(p)) {}

  std::vector<uint32_t> build() {
    setup();
    mainLoop();
    epilogue();
    f_.ret();
    return m_.build();
  }
  uint32_t pushBytes() const { return pc_.size; }

private:
  // Types, bindings, push constants, shared memory, entry point.
  FunctionBuilder& declare() {
    u32_ = m_.u32();
    half_ = elemStorageType(m_, p_.operands); // f16, or uint16 bits of bf16
    f32_ = m_.f32();
    uvec4_ = m_.vectorType(u32_, 4);
    ta_ = halfCoopType(m_, p_.operands, p_.coopM, p_.coopK, CoopUse::MatrixAKHR);
    tb_ = halfCoopType(m_, p_.operands, p_.coopK, p_.coopN, CoopUse::MatrixBKHR);
    tc_ = m_.coopMatrixType(f32_, p_.coopM, p_.coopN, CoopUse::MatrixAccumulatorKHR);
    tcOut_ =
        p_.halfC() ? halfCoopType(m_, p_.storedC, p_.coopM, p_.coopN, CoopUse::MatrixAccumulatorKHR) : tc_;
    // An f32 operand is read as pairs of vec4 per 8-element vector and rounded to the operands' type as it is
    // staged.
    const TypeId vec4 = m_.vectorType(f32_, 4);
    const bool scalars = p_.bounded && !p_.boundedVectors;
    a_ = m_.storageBuffer(0, scalars ? half_ : p_.storedA == Elem::F32 ? vec4 : uvec4_, Access::ReadOnly);
    b_ = m_.storageBuffer(1, scalars ? half_ : p_.storedB == Elem::F32 ? vec4 : uvec4_, Access::ReadOnly);
    // A staged store writes C as row vectors (4 floats, or 4 halves).
    const TypeId cElement = p_.stagedStore ? (p_.halfC() ? m_.vectorType(half_, 4) : vec4)
                            : p_.halfC()   ? half_
                                           : f32_;
    c_ = m_.storageBuffer(2, cElement, p_.alphaBeta ? Access::ReadWrite : Access::WriteOnly);
    if (p_.bias) bias_ = m_.storageBuffer(3, p_.halfC() ? half_ : f32_, Access::ReadOnly);
    if (p_.kSlices > 1) {
      // The last workgroup of a tile reads partials other workgroups wrote during this dispatch: Coherent
      // (lowered, GLSL450), else non-private accesses (Vulkan memory model).
      partials_ = m_.storageBuffer(p_.bias ? 4 : 3, f32_, Access::ReadWrite);
      if (!m_.vulkanMemoryModel()) m_.decorate(partials_.var.id, Decoration::Coherent);
      counters_ = m_.storageBuffer(p_.bias ? 5 : 4, u32_, Access::ReadWrite);
      arrival_ = m_.workgroupArray(u32_, 1);
    }
    pc_ = declarePush<GemmCoopPush>(m_);
    shA_ = m_.workgroupArray(uvec4_, sharedAVecs(p_));
    shB_ = m_.workgroupArray(uvec4_, p_.stages * tileB(p_).stageVecs());
    m_.setName(shA_.id, "shA");
    m_.setName(shB_.id, "shB");
    return m_.entryPoint("main", {p_.invocations(), 1, 1});
  }

  Value c(uint32_t v) { return f_.u32(v); }

  // Which C tile this workgroup owns (optionally swizzled in bands of groupM tile rows), batch offsets, the
  // invocation's copy slots and the subgroup's position; zeroed accumulators.
  void setup() {
    M_ = f_.loadPush(pc_, 0);
    N_ = f_.loadPush(pc_, 1);
    K_ = f_.loadPush(pc_, 2);
    const coop::TileIndex tile = coop::tileIndex(f_, p_.groupM);
    m0_ = f_.imul(tile.m, c(p_.BM));
    n0_ = f_.imul(tile.n, c(p_.BN));
    ownM0_ = m0_, ownN0_ = n0_;
    if (p_.edgeShift) {
      // The tile computed moves back inside M x N; the epilogue stores only the part from ownM0/ownN0 on.
      m0_ = f_.umin(m0_, f_.isub(M_, c(p_.BM)));
      n0_ = f_.umin(n0_, f_.isub(N_, c(p_.BN)));
    }
    const auto stepCount = [&] {
      return p_.bounded ? f_.udiv(f_.iadd(K_, c(p_.BK - 1)), c(p_.BK)) : f_.udiv(K_, c(p_.BK));
    };
    // edgeShift: step kt covers k in [kt * BK - shiftK, ...), so the first step starts at k = -shiftK
    // (u32 arithmetic wraps: such reads are clamped to the binding and zeroed by the check).
    Value shiftK = c(0), kOrigin = c(0);
    if (p_.edgeShift) {
      steps_ = stepCount();
      shiftK = f_.isub(f_.imul(steps_, c(p_.BK)), K_);
      kOrigin = f_.isub(c(0), shiftK);
    }
    const coop::BatchOffsets batch = coop::batchOffsets(f_, pc_, p_.batched);
    const Value batchA = p_.batched ? f_.shr(batch.a, c(3)) : c(0); // in vectors
    const Value batchB = p_.batched ? f_.shr(batch.b, c(3)) : c(0);
    cBase_ = batch.c;
    if (p_.bounded) {
      // Rows and columns of each operand's stored matrix, and where the tile starts in them (the K side
      // advances by BK per step). Offsets in elements.
      edgeA_ = p_.transA ? Edge{batch.a, kOrigin, K_, m0_, M_, M_, true}
                         : Edge{batch.a, m0_, M_, kOrigin, K_, K_, false};
      edgeB_ = p_.transB ? Edge{batch.b, n0_, N_, kOrigin, K_, K_, false}
                         : Edge{batch.b, kOrigin, K_, n0_, N_, N_, true};
      edgeA_.last = f_.isub(f_.arrayLength(a_), c(1));
      edgeB_.last = f_.isub(f_.arrayLength(b_), c(1));
      edgeA_.crosswise = p_.crosswiseA;
      edgeB_.crosswise = p_.crosswiseB;
    }
    // This workgroup's K steps: all of them, or its slice's (the last slice may be shorter or empty).
    if (!p_.edgeShift) steps_ = stepCount();
    kBegin_ = c(0), kEnd_ = steps_;
    if (p_.kSlices > 1) {
      const Value per = f_.udiv(f_.iadd(steps_, c(p_.kSlices - 1)), c(p_.kSlices));
      kBegin_ = f_.umin(f_.imul(f_.workgroupId(2), per), steps_);
      kEnd_ = f_.umin(f_.iadd(kBegin_, per), steps_);
    }
    const Value mVecs = f_.shr(M_, c(3)), nVecs = f_.shr(N_, c(3)), kVecs = f_.shr(K_, c(3));
    // Slice origins (vectors) and per-step advance; shifted back by shiftK along K (edgeShift).
    const auto kBack = [&](Value rowVecs, bool kInRows) {
      return kInRows ? f_.imul(shiftK, rowVecs) : f_.shr(shiftK, c(3));
    };
    if (p_.transA) {
      originA_ = f_.iadd(batchA, f_.shr(m0_, c(3)));
      stepA_ = f_.imul(c(p_.BK), mVecs);
      rowVecsA_ = mVecs;
    } else {
      originA_ = f_.iadd(batchA, f_.imul(m0_, kVecs));
      stepA_ = c(p_.BK / 8);
      rowVecsA_ = kVecs;
    }
    if (p_.transB) {
      originB_ = f_.iadd(batchB, f_.imul(n0_, kVecs));
      stepB_ = c(p_.BK / 8);
      rowVecsB_ = kVecs;
    } else {
      originB_ = f_.iadd(batchB, f_.shr(n0_, c(3)));
      stepB_ = f_.imul(c(p_.BK), nVecs);
      rowVecsB_ = nVecs;
    }
    if (p_.edgeShift) {
      originA_ = f_.isub(originA_, kBack(rowVecsA_, p_.transA));
      originB_ = f_.isub(originB_, kBack(rowVecsB_, !p_.transB));
    }
    const Value sg = f_.builtin(BuiltIn::SubgroupId);
    // Copy slots: every invocation's, or the copy subgroups' (rank among them; meaningless elsewhere).
    Value tid = f_.localId(0);
    if (p_.producers) {
      isCopier_ = f_.ge(sg, c(p_.subgroups()));
      tid = f_.iadd(f_.imul(f_.isub(sg, c(p_.subgroups())), c(p_.subgroupSize)),
                    f_.builtin(BuiltIn::SubgroupLocalInvocationId));
    }
    slotsA_ = coop::copySlots(f_, copyA_, p_.copiers(), rowVecsA_, tid, p_.crosswiseA);
    slotsB_ = coop::copySlots(f_, copyB_, p_.copiers(), rowVecsB_, tid, p_.crosswiseB);

    sgRow_ = f_.udiv(sg, c(p_.sgCols));
    sgCol_ = f_.rem(sg, c(p_.sgCols));
    // Shared-memory vector offset of this subgroup's first A / B fragment within a stage.
    const Value rowA = f_.imul(sgRow_, c(p_.warpM())), colB = f_.imul(sgCol_, c(p_.warpN()));
    warpA_ = p_.stagedTransA() ? f_.shr(rowA, c(3)) : f_.imul(rowA, c(copyA_.sharedRowVecs));
    warpB_ = p_.stagedTransB() ? f_.imul(colB, c(copyB_.sharedRowVecs)) : f_.shr(colB, c(3));

    const Value zero = f_.coopFill(tc_, f_.f32(0.0f));
    for (uint32_t i = 0; i < p_.accM() * p_.accN(); ++i) {
      acc_.push_back(f_.variable(tc_));
      f_.store(acc_.back(), zero);
    }
  }

  coop::ScalarCheck scalarCheck() const {
    return unchecked_     ? coop::ScalarCheck::None
           : p_.edgeShift ? coop::ScalarCheck::FromBelow
                          : coop::ScalarCheck::Edges;
  }

  // Global -> registers: slice kt of A, of B (bounded or not).
  std::vector<Value> loadSliceA(Value kt) {
    if (p_.bounded && !p_.boundedVectors)
      return coop::loadScalars(f_, a_, slotsA_, edgeA_, kt, p_.BK, scalarCheck(), p_.operands);
    return coop::loadVectors(f_, a_, slotsA_, originA_, stepA_, kt, p_.BK, p_.storedA, p_.operands,
                             p_.bounded && !unchecked_ ? &edgeA_ : nullptr);
  }
  std::vector<Value> loadSliceB(Value kt) {
    if (p_.bounded && !p_.boundedVectors)
      return coop::loadScalars(f_, b_, slotsB_, edgeB_, kt, p_.BK, scalarCheck(), p_.operands);
    return coop::loadVectors(f_, b_, slotsB_, originB_, stepB_, kt, p_.BK, p_.storedB, p_.operands,
                             p_.bounded && !unchecked_ ? &edgeB_ : nullptr);
  }

  void loadTileToShared(Value kt, Value offA, Value offB) {
    const auto ra = loadSliceA(kt);
    const auto rb = loadSliceB(kt);
    coop::storeSlots(f_, shA_, slotsA_, ra, offA);
    coop::storeSlots(f_, shB_, slotsB_, rb, offB);
  }

  // The subgroup's share of one staged slice: for each coopK step, its A and B fragments, then every
  // accumulator's MulAdd.
  void computeStage(Value offA, Value offB) {
    const uint32_t am = p_.accM(), an = p_.accN();
    std::vector<Value> acc;
    for (const Value& v : acc_)
      acc.push_back(f_.load(v));
    const Value baseA = f_.iadd(offA, warpA_), baseB = f_.iadd(offB, warpB_);
    const Value strideA = c(copyA_.sharedRowVecs), strideB = c(copyB_.sharedRowVecs);
    for (uint32_t kk = 0; kk < p_.BK / p_.coopK; ++kk) {
      const uint32_t k = kk * p_.coopK;
      // All A fragments of this step, then one B fragment at a time with its column of MulAdds (fewer live
      // fragment registers than loading every B fragment first).
      std::vector<Value> fa;
      for (uint32_t i = 0; i < am; ++i) {
        const uint32_t r = i * p_.coopM;
        const uint32_t off =
            p_.stagedTransA() ? k * copyA_.sharedRowVecs + r / 8 : r * copyA_.sharedRowVecs + k / 8;
        fa.push_back(f_.coopLoad(ta_, f_.accessChain(shA_, {f_.iadd(baseA, c(off))}), strideA,
                                 p_.stagedTransA() ? CoopLayout::ColumnMajorKHR : CoopLayout::RowMajorKHR));
      }
      for (uint32_t j = 0; j < an; ++j) {
        const uint32_t n = j * p_.coopN;
        const uint32_t off =
            p_.stagedTransB() ? n * copyB_.sharedRowVecs + k / 8 : k * copyB_.sharedRowVecs + n / 8;
        const Value fb =
            f_.coopLoad(tb_, f_.accessChain(shB_, {f_.iadd(baseB, c(off))}), strideB,
                        p_.stagedTransB() ? CoopLayout::ColumnMajorKHR : CoopLayout::RowMajorKHR);
        for (uint32_t i = 0; i < am; ++i)
          acc[i * an + j] = f_.coopMulAdd(fa[i], fb, acc[i * an + j]);
      }
    }
    for (size_t i = 0; i < acc_.size(); ++i)
      f_.store(acc_[i], acc[i]);
  }

  void mainLoop() {
    // Bounded: the last step may be partial (its missing K columns are staged as zeros).
    const uint32_t stageA = copyA_.stageVecs(), stageB = copyB_.stageVecs();
    if (p_.producers) return specialisedLoop(steps_, stageA, stageB);
    if (p_.stages == 1 && p_.edgeShift) {
      // The first step's copies checked, the others not, behind a branch uniform over the workgroup (peeling
      // the first step off the loop instead ran NN 3-10% slower on the H100, TN within 5% either way).
      f_.forRange(kBegin_, kEnd_, [&](Value kt) {
        f_.ifThenElse(
            f_.eq(kt, kBegin_), [&] { loadTileToShared(kt, c(0), c(0)); },
            [&] {
              unchecked_ = true;
              loadTileToShared(kt, c(0), c(0));
              unchecked_ = false;
            });
        f_.workgroupBarrier();
        computeStage(c(0), c(0));
        f_.workgroupBarrier();
      });
      return;
    }
    if (p_.stages == 1) {
      f_.forRange(kBegin_, kEnd_, [&](Value kt) {
        loadTileToShared(kt, c(0), c(0));
        f_.workgroupBarrier();
        computeStage(c(0), c(0));
        f_.workgroupBarrier();
      });
      return;
    }
    // Double-buffered: slice kt lives in buffer kt & 1. The next slice's global loads are issued before the
    // MulAdds of this one (clamped to the last slice, so the loop body is straight-line) and are written to
    // the other buffer, which nobody reads until after the barrier that ends this step.
    // (An empty K slice still stages a real step, the last one, and never computes on it.)
    loadTileToShared(p_.kSlices > 1 ? f_.umin(kBegin_, f_.isub(steps_, c(1))) : c(0), c(0), c(0));
    f_.workgroupBarrier();
    const Value last = f_.isub(kEnd_, c(1));
    unchecked_ = p_.edgeShift; // (next >= 1: edgeShift runs at least two steps)
    f_.forRange(kBegin_, kEnd_, [&](Value kt) {
      const Value stage = f_.bitAnd(f_.isub(kt, kBegin_), c(1)), other = f_.bitXor(stage, c(1));
      const Value next = f_.umin(f_.iadd(kt, c(1)), last);
      const auto ra = loadSliceA(next);
      const auto rb = loadSliceB(next);
      computeStage(f_.imul(stage, c(stageA)), f_.imul(stage, c(stageB)));
      coop::storeSlots(f_, shA_, slotsA_, ra, f_.imul(other, c(stageA)));
      coop::storeSlots(f_, shB_, slotsB_, rb, f_.imul(other, c(stageB)));
      f_.workgroupBarrier();
    });
    unchecked_ = false;
  }

  // Warp-specialised double buffering: in step kt the copy subgroups move slice kt + 1 (clamped to the last,
  // so the body is straight-line) into the buffer nobody reads, the others compute on slice kt; one barrier
  // ends the step. Branches are per subgroup, so the coop operations stay in subgroup-uniform control flow.
  void specialisedLoop(Value steps, uint32_t stageA, uint32_t stageB) {
    f_.ifThen(isCopier_, [&] { loadTileToShared(c(0), c(0), c(0)); });
    f_.workgroupBarrier();
    const Value last = f_.isub(steps, c(1));
    f_.forRange(c(0), steps, [&](Value kt) {
      const Value stage = f_.bitAnd(kt, c(1));
      f_.ifThenElse(
          isCopier_,
          [&] {
            const Value other = f_.bitXor(stage, c(1));
            loadTileToShared(f_.umin(f_.iadd(kt, c(1)), last), f_.imul(other, c(stageA)),
                             f_.imul(other, c(stageB)));
          },
          [&] { computeStage(f_.imul(stage, c(stageA)), f_.imul(stage, c(stageB))); });
      f_.workgroupBarrier();
    });
  }

  void epilogue() {
    if (p_.producers) return f_.ifThen(f_.logicalNot(isCopier_), [&] { storeResult(); });
    if (p_.kSlices > 1) return f_.ifThen(gatherSlices(), [&] { storeResult(); });
    storeResult();
  }

  // K slices: store this slice's partial tile, count the arrival, and in the workgroup that arrives last
  // (the returned condition, uniform over the workgroup) load the tile's partials back in slice order into
  // the accumulators and reset the counter. As in a last-block reduction: a workgroup barrier with device
  // memory scope makes every invocation's partials visible before one invocation counts, and another after
  // the count makes the other slices' partials visible to every invocation of the last one.
  Value gatherSlices() {
    const uint32_t tileElems = p_.BM * p_.BN;
    const Value tilesX = f_.udiv(f_.iadd(N_, c(p_.BN - 1)), c(p_.BN));
    const Value tile = f_.iadd(f_.imul(f_.workgroupId(1), tilesX), f_.workgroupId(0));
    const Value tileBase = f_.imul(tile, c(p_.kSlices * tileElems));
    const Value warpOffset = f_.iadd(f_.imul(sgRow_, c(p_.warpM() * p_.BN)), f_.imul(sgCol_, c(p_.warpN())));
    const auto fragment = [&](Value slice, uint32_t i, uint32_t j) {
      const Value at = f_.iadd(f_.iadd(tileBase, f_.imul(slice, c(tileElems))),
                               f_.iadd(warpOffset, c(i * p_.coopM * p_.BN + j * p_.coopN)));
      return f_.accessChain(partials_.var, {c(0), at});
    };
    for (uint32_t i = 0; i < p_.accM(); ++i)
      for (uint32_t j = 0; j < p_.accN(); ++j)
        f_.coopStore(fragment(f_.workgroupId(2), i, j), f_.load(acc_[i * p_.accN() + j]), c(p_.BN),
                     CoopLayout::RowMajorKHR, MemoryAccess::nonPrivate());
    const uint32_t deviceAcqRel = static_cast<uint32_t>(MemorySemanticsMask::AcquireRelease) |
                                  static_cast<uint32_t>(MemorySemanticsMask::UniformMemory);
    const uint32_t both = deviceAcqRel | static_cast<uint32_t>(MemorySemanticsMask::WorkgroupMemory);
    f_.controlBarrier(Scope::Workgroup, Scope::Device, both);
    const Value counter = f_.accessChain(counters_.var, {c(0), tile});
    const Value arrival = f_.accessChain(arrival_, {c(0)});
    f_.ifThen(f_.eq(f_.localId(0), c(0)),
              [&] { f_.store(arrival, f_.atomicIAdd(counter, c(1), Scope::Device, deviceAcqRel)); });
    f_.controlBarrier(Scope::Workgroup, Scope::Device, both);
    const Value isLast = f_.eq(f_.load(arrival), c(p_.kSlices - 1));
    f_.ifThen(isLast, [&] {
      // Unrolled: the driver issues every slice's loads at once (255 registers with 8 slices, no spills).
      // Summed in a loop over the slices instead it kept 150-159 registers and ran 3-5% slower.
      for (uint32_t i = 0; i < p_.accM(); ++i)
        for (uint32_t j = 0; j < p_.accN(); ++j) {
          const auto partial = [&](uint32_t s) {
            return f_.coopLoad(tc_, fragment(c(s), i, j), c(p_.BN), CoopLayout::RowMajorKHR,
                               MemoryAccess::nonPrivate());
          };
          Value sum = partial(0);
          for (uint32_t s = 1; s < p_.kSlices; ++s)
            sum = f_.fadd(sum, partial(s));
          f_.store(acc_[i * p_.accN() + j], sum);
        }
      // Zero again for the next dispatch (which a pipeline barrier separates from this one).
      f_.ifThen(f_.eq(f_.localId(0), c(0)), [&] { f_.store(counter, c(0)); });
    });
    return isLast;
  }

  void storeResult() {
    const coop::Epilogue e{
        p_, m_, f_, tc_, tcOut_, c_, bias_, N_, f_.loadPush(pc_, 3), f_.loadPush(pc_, 4), f_.variable(tc_)};
    const Value warpRow = f_.iadd(m0_, f_.imul(sgRow_, c(p_.warpM())));
    const Value warpCol = f_.iadd(n0_, f_.imul(sgCol_, c(p_.warpN())));
    if (p_.bounded) return boundedEpilogue(warpRow, warpCol);
    if (p_.stagedStore) return stagedEpilogue(e, warpRow, warpCol);
    const Value warpC = f_.iadd(cBase_, f_.iadd(f_.imul(warpRow, N_), warpCol));
    const Value rowStep = f_.imul(N_, c(p_.coopM));
    for (uint32_t i = 0; i < p_.accM(); ++i)
      for (uint32_t j = 0; j < p_.accN(); ++j) {
        const Value col = c(j * p_.coopN);
        coop::storeC(e, f_.load(acc_[i * p_.accN() + j]),
                     f_.iadd(f_.iadd(warpC, f_.imul(c(i), rowStep)), col), f_.iadd(warpCol, col));
      }
  }

  // C through shared memory (after the main loop's last barrier the A staging is free): per row i of coop
  // blocks, the subgroup stores value(i, j, row0) of each block into its own padded region (stagedRowVecs
  // vectors per row), then copyOut(row0, region) reads the coopM rows back out; subgroup barriers around it.
  void throughShared(Value warpRow, const std::function<Value(uint32_t, uint32_t, Value)>& value,
                     const std::function<void(Value, Value)>& copyOut) {
    const uint32_t rowVecs = stagedRowVecs(p_);
    const Value region = f_.imul(f_.builtin(BuiltIn::SubgroupId), c(p_.coopM * rowVecs));
    for (uint32_t i = 0; i < p_.accM(); ++i) {
      const Value row0 = f_.iadd(warpRow, c(i * p_.coopM));
      for (uint32_t j = 0; j < p_.accN(); ++j)
        f_.coopStore(f_.accessChain(shA_, {f_.iadd(region, c(j * p_.coopN / 4))}), value(i, j, row0),
                     c(rowVecs), CoopLayout::RowMajorKHR);
      subgroupBarrier();
      copyOut(row0, region);
      subgroupBarrier();
    }
  }

  // Bounded: the raw accumulators go through shared memory, then each lane takes elements one by one (or,
  // with stagedStore, 4-element row vectors: N is a multiple of 8 with vector copies, so each lies wholly
  // inside or outside), applies the epilogue and stores those inside M x N (edgeShift: and inside its own
  // tile).
  void boundedEpilogue(Value warpRow, Value warpCol) {
    const uint32_t rowVecs = stagedRowVecs(p_), wn = p_.warpN(), w = p_.stagedStore ? 4 : 1;
    const Value lane = f_.builtin(BuiltIn::SubgroupLocalInvocationId);
    const Value alpha = f_.loadPush(pc_, 3), beta = f_.loadPush(pc_, 4);
    const TypeId vec4 = m_.vectorType(f32_, 4);
    const auto raw = [&](uint32_t i, uint32_t j, Value) { return f_.load(acc_[i * p_.accN() + j]); };
    const auto apply = [&](Value x, Value gc, Value old) { return epilogueElement(x, gc, old, alpha, beta); };
    throughShared(warpRow, raw, [&](Value row0, Value region) {
      for (uint32_t k = 0; k < p_.coopM * wn / w / p_.subgroupSize; ++k) {
        const Value idx = f_.iadd(lane, c(k * p_.subgroupSize));
        const Value r = f_.udiv(idx, c(wn / w));
        const Value col = w == 1 ? f_.rem(idx, c(wn)) : f_.imul(f_.rem(idx, c(wn / w)), c(w));
        const Value slot = f_.iadd(region, f_.iadd(f_.imul(r, c(rowVecs)), f_.shr(col, c(2))));
        const Value word = f_.load(w == 1 ? f_.accessChain(shA_, {slot, f_.bitAnd(col, c(3))})
                                          : f_.accessChain(shA_, {slot}));
        const Value gr = f_.iadd(row0, r), gc = f_.iadd(warpCol, col);
        Value inside = f_.logicalAnd(f_.lt(gr, M_), f_.lt(gc, N_));
        if (p_.edgeShift) inside = f_.logicalAnd(inside, f_.logicalAnd(f_.ge(gr, ownM0_), f_.ge(gc, ownN0_)));
        f_.ifThen(inside, [&] {
          const Value at = f_.iadd(cBase_, f_.iadd(f_.imul(gr, N_), gc)); // element
          // C's old value is read only when beta != 0 (else clamped to C[0] and its product selected away).
          const auto old = [&](Value i) {
            return p_.alphaBeta ? f_.loadAt(c_, f_.select(f_.ne(beta, f_.f32(0.0f)), i, c(0))) : Value{};
          };
          if (w == 1) {
            const Value x = f_.bitcast(word, f32_);
            const Value v = apply(x, gc, old(at));
            f_.storeAt(c_, at, p_.halfC() ? elemFromF32(f_, p_.storedC, v) : v);
            return;
          }
          const Value x = f_.bitcast(word, vec4), vat = f_.shr(at, c(2));
          const Value v = epilogueVector(x, gc, vat, alpha, beta);
          f_.storeAt(c_, vat, p_.halfC() ? elemFromF32(f_, p_.storedC, v) : v);
        });
      }
    });
  }

  // One element of the epilogue: x at column gc, `old` C's value there (read only when beta != 0).
  Value epilogueElement(Value x, Value gc, Value old, Value alpha, Value beta) {
    if (p_.alphaBeta) {
      const Value scaled = f_.fmul(beta, p_.halfC() ? elemToF32(f_, p_.storedC, old) : old);
      x = f_.fadd(f_.fmul(alpha, x), f_.select(f_.ne(beta, f_.f32(0.0f)), scaled, f_.f32(0.0f)));
    }
    if (p_.bias) {
      const Value b = f_.loadAt(bias_, gc);
      x = f_.fadd(x, p_.halfC() ? elemToF32(f_, p_.storedC, b) : b);
    }
    return p_.gelu ? coop::gelu(f_, x) : x;
  }

  // The same epilogue on a 4-element row vector x of C at vector index vat, column gc.
  Value epilogueVector(Value x, Value gc, Value vat, Value alpha, Value beta) {
    const Value was = p_.alphaBeta ? f_.loadAt(c_, f_.select(f_.ne(beta, f_.f32(0.0f)), vat, c(0))) : Value{};
    std::vector<Value> parts;
    for (uint32_t e = 0; e < 4; ++e)
      parts.push_back(epilogueElement(f_.extract(x, {e}), f_.iadd(gc, c(e)),
                                      p_.alphaBeta ? f_.extract(was, {e}) : Value{}, alpha, beta));
    return f_.construct(m_.vectorType(f32_, 4), parts);
  }

  void subgroupBarrier() {
    f_.controlBarrier(Scope::Subgroup, Scope::Workgroup,
                      static_cast<uint32_t>(MemorySemanticsMask::AcquireRelease) |
                          static_cast<uint32_t>(MemorySemanticsMask::WorkgroupMemory));
  }

  // Staged store: the accumulators (epilogue applied, f32) go through shared memory, then the coopM rows
  // leave as 16-byte vectors, each row's vectors by consecutive lanes. With biasOnVectors (an f16 C and
  // bias) the epilogue runs on those vectors instead: the same f32 arithmetic, no f16 -> f32 coop conversion.
  void stagedEpilogue(const coop::Epilogue& e, Value warpRow, Value warpCol) {
    const uint32_t rowVecs = stagedRowVecs(p_), rowOut = p_.warpN() / 4; // vectors per staged / output row
    const Value lane = f_.builtin(BuiltIn::SubgroupLocalInvocationId);
    const TypeId vec4 = m_.vectorType(f32_, 4);
    const Value nVecs = f_.shr(N_, c(2)), colVec = f_.shr(warpCol, c(2)), baseC = f_.shr(cBase_, c(2));
    const bool perVector = p_.biasOnVectors && p_.halfC() && p_.bias;
    const auto withEpilogue = [&](uint32_t i, uint32_t j, Value row0) {
      if (perVector) return f_.load(acc_[i * p_.accN() + j]);
      const Value col = f_.iadd(warpCol, c(j * p_.coopN));
      return coop::epilogueValue(e, f_.load(acc_[i * p_.accN() + j]), f_.iadd(f_.imul(row0, N_), col), col);
    };
    throughShared(warpRow, withEpilogue, [&](Value row0, Value region) {
      for (uint32_t k = 0; k < p_.coopM * rowOut / p_.subgroupSize; ++k) {
        const Value idx = f_.iadd(lane, c(k * p_.subgroupSize));
        const Value r = f_.udiv(idx, c(rowOut)), cv = f_.rem(idx, c(rowOut));
        Value x = f_.bitcast(
            f_.load(f_.accessChain(shA_, {f_.iadd(region, f_.iadd(f_.imul(r, c(rowVecs)), cv))})), vec4);
        const Value at = f_.iadd(baseC, f_.iadd(f_.imul(f_.iadd(row0, r), nVecs), f_.iadd(colVec, cv)));
        if (perVector) x = epilogueVector(x, f_.shl(f_.iadd(colVec, cv), c(2)), at, e.alpha, e.beta);
        f_.storeAt(c_, at, p_.halfC() ? elemFromF32(f_, p_.storedC, x) : x);
      }
    });
  }

  const GemmCoopParams& p_;
  Module m_;
  TypeId u32_, half_, f32_, uvec4_, ta_, tb_, tc_, tcOut_;
  Buffer a_, b_, c_, bias_, partials_, counters_;
  PushConstants pc_;
  Value shA_, shB_, arrival_;
  FunctionBuilder& f_;
  TileCopy copyA_, copyB_;
  Value M_, N_, K_, m0_, n0_, ownM0_, ownN0_, cBase_, steps_, kBegin_, kEnd_;
  Value originA_, originB_, stepA_, stepB_, rowVecsA_, rowVecsB_;
  std::vector<CopySlot> slotsA_, slotsB_;
  Edge edgeA_, edgeB_;
  Value sgRow_, sgCol_, warpA_, warpB_, isCopier_;
  bool unchecked_ = false; // edgeShift: the copies being emitted skip the bounds checks
  std::vector<Value> acc_;
};

} // namespace

codegen::Kernel generateGemmCoop(const GemmCoopParams& params) {
  params.validate();
  Kernel k;
  k.name = params.name();
  k.cacheKey = params.cacheKey();
  if (params.workgroupScope) {
    k.spirv = buildGemmCoopWorkgroup(params, k.pushConstantBytes);
  } else {
    GemmCoopBuilder b(params);
    k.spirv = b.build();
    k.pushConstantBytes = b.pushBytes();
  }
  k.numBuffers = (params.bias ? 4 : 3) + (params.kSlices > 1 ? 2 : 0);
  k.localSize = {params.invocations(), 1, 1};
  k.requiredSubgroupSize = params.subgroupSize;
  return k;
}

} // namespace helios::codegen
