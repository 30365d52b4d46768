#pragma once
// What the three passes of the coop attention family share (internal to codegen/kernels): the module's head
// (types, push constants, bindings, entry point, staging: declarePass), f32 rows staged into shared memory as
// f16, the causal bounds, the products blocked by the coop shape, the lanes' split of a subgroup's rows, and
// the write of its accumulator blocks to an output. Each pass is a class deriving from AttentionCoopEmitter
// (attention_coop_bwd.cpp; the two forwards through ForwardEmitterBase, attention_coop_fwd_common.cpp:
// attention_coop_fwd.cpp and attention_coop_fwd_rowops.cpp); the key splits' merge is in
// attention_coop_splits.cpp.
#include <cstdint>
#include <functional>
#include <vector>

#include "codegen/kernels/attention_coop.hpp"
#include "codegen/kernels/elem_io.hpp"
#include "codegen/spirv/builder.hpp"

namespace helios::codegen::detail {

// A region of staged f16 rows: a Workgroup array of 16-byte vectors and the vector the region starts at
// (plus `base`, a run-time vector offset where set: this key-split group's tile within the staged tiles).
struct Staging {
  spv::Value array;
  uint32_t offset = 0;
  spv::Value base{};
};

// Where one head's rows of a tensor are: row t starts at 16-byte vector base + t * stride (units of 8
// elements, as AttentionCoopPush's strides).
struct HeadRows {
  spv::Value base, stride;
};

// The factors a key-split merge scales each group's partial output by (AttentionCoopEmitter::
// writeSplitRows): one for every row of this lane, which each subgroup publishes, or `all` for every row.
struct RowScales {
  std::vector<spv::Value> perRow;
  spv::Value all{};
};

class AttentionCoopEmitter {
protected:
  explicit AttentionCoopEmitter(const AttentionCoopParams& p);

  spv::FunctionBuilder& f() { return *f_; }
  spv::Value c(uint32_t v) { return f_->u32(v); }

  // Types and push constants; call before declaring the pass's buffers.
  void declareTypes();
  // The entry point, then the push constants and builtins every pass reads.
  void beginMain();

  void declareQkv(); // q_, k_, v_ at bindings 0, 1, 2 (every pass)
  // Documents (p.documents): the positions binding (after the pass's others) and the shared array of
  // `count` staged starts (the owned query rows, or the dK/dV pass's query tile); no-ops without.
  bool documents() const { return p_.documents == DocumentMask::Packed; }
  void declareDocuments(uint32_t binding, uint32_t count);
  // The first key query i (< Tq) of batch b sees: i - positions[b, i] (0 for a position past i).
  spv::Value docStart(spv::Value b, spv::Value i);
  // starts_[r] = the start of query first + r (clamped to the last query), r < count: every invocation
  // takes its share; a workgroup barrier must follow before they are read.
  void stageStarts(spv::Value b, spv::Value first, uint32_t count);
  spv::Value stagedStart(spv::Value r) { return f().load(f().accessChain(starts_, {r})); }
  spv::Buffer inputRows(uint32_t binding);  // f32 rows read as vec4 (q, k, v, dO)
  spv::Buffer outputRows(uint32_t binding); // o, dQ, dK, dV: vec4 rows, or uvec4 of 8 halves (16-bit out)
  // The head's rows in a layout of the push constants (0: q, 1: kv, 2: o), for batch b and head h.
  HeadRows headRows(uint32_t layout, spv::Value b, spv::Value h);
  // Every pass stages its owned rows once (setup) and then streams two tiles: both live in one array, the
  // tiles over the bytes the owned rows used (ownedRowsAsA() returns only when every subgroup has read them).
  // With key splits each stream holds keySplits tiles, group s's at rows s * tile.., and `first` and `second`
  // read this group's (Staging::base).
  struct StagingAreas {
    Staging rows, first, second, third;
  };
  StagingAreas declareStaging(); // `third` is for a third stream (DkvDelta::Recompute's O tile)
  // A pass's module head, in the order every pass emits it: types, q/k/v, the pass's own buffers
  // (`buffers`), the documents' binding `docBinding` with `docCount` staged starts, the push constants' size
  // into pushBytes, the entry point, and the staging areas.
  StagingAreas declarePass(uint32_t& pushBytes, uint32_t docBinding, uint32_t docCount,
                           const std::function<void()>& buffers);
  // Passes that own query rows (forward, dQ): declarePass with p.rows() staged starts, the areas' owned rows
  // and first two streams kept as shRows_, shK_ and shV_.
  void declareQueryPass(uint32_t& pushBytes, uint32_t docBinding, const std::function<void()>& buffers);

  // Rows [first, first + count) of one head's rows `at` (`total` rows of D elements, f32 or f16) into
  // `shared` as f16, 8 per 16-byte vector, zero past `total`. Every invocation copies its share.
  void stage(const Staging& shared, const spv::Buffer& rows, const HeadRows& at, spv::Value first,
             uint32_t count, spv::Value total);
  // stage() in two halves, so a loop can issue the global loads of its next tile before computing on the
  // current one: fetch() returns this invocation's packed vectors, put() stores them.
  // With splitStride set, staged row r is row first + (r / tile) * splitStride + r % tile (the groups'
  // tiles).
  std::vector<spv::Value> fetch(const spv::Buffer& rows, const HeadRows& at, spv::Value first, uint32_t count,
                                spv::Value total, spv::Value splitStride = {});
  void put(const Staging& shared, const std::vector<spv::Value>& regs, uint32_t count);

  // A tile of `tile` rows walked by a loop, prefetched one step ahead through Function variables (when
  // p.prefetch): begin(first) before the loop; in the loop, next() stores the held tile to shared memory and
  // issues the loads of the tile at `nextFirst`.
  struct TileStream {
    Staging shared;
    const spv::Buffer* rows = nullptr;
    HeadRows at;
    spv::Value total;
    std::vector<spv::Value> held; // Function variables
    uint32_t count = 0;           // rows per step: tile * keySplits
    spv::Value splitStride{};     // keys between the groups' tiles (key splits)
  };
  TileStream tileStream(const Staging& shared, const spv::Buffer& rows, const HeadRows& at, spv::Value total);
  void begin(TileStream& s, spv::Value first);
  void next(TileStream& s, spv::Value first, spv::Value nextFirst);
  // A coopM x D block of f16 rows in `shared` (starting at `row`) as A matrices, one per coopK columns.
  std::vector<spv::Value> loadA(const Staging& shared, spv::Value row);
  // The workgroup's rows [blockRow_, blockRow_ + rows()) of a tensor side staged into `shared`, then this
  // subgroup's coopM of them as A matrices; a barrier after, so `shared` (and what aliases it) can be
  // restaged.
  std::vector<spv::Value> ownedRowsAsA(const Staging& shared, const spv::Buffer& rows, const HeadRows& at,
                                       spv::Value total);
  // Block (kb, d) of a staged tile as a coopK x coopN B matrix: RowMajor reads tile rows kb * coopK.. as B's
  // rows and their columns d * coopN.. (P V), ColumnMajor tile rows kb * coopN.. as B's columns and their
  // columns d * coopK.. as its rows (Q K^T).
  spv::Value tileB(const Staging& tile, uint32_t kb, uint32_t d, spv::CoopLayout layout);

  // Helper functions for the NV2 row operations (p.rowOps). combineFunction: (f32, f32) -> f32 for
  // coopReduce; elementFunction: (u32 row, u32 col, f32 x, f32 y) -> f32 for coopPerElement with one extra
  // matrix; scoreMaskFunction: (row, col, f32 s, u32 row0, u32 col0, u32 start0) -> s (unscaled) where query
  // row0 + row sees key col0 + col, else kMasked (with documents the query's start is staged at
  // starts_[start0 + row]).
  using Binary = std::function<spv::Value(spv::FunctionBuilder&, spv::Value, spv::Value)>;
  spv::FunctionId combineFunction(const char* name, const Binary& op);
  spv::FunctionId elementFunction(const char* name, const Binary& op);
  spv::FunctionId scoreMaskFunction();
  // (row, col, f32 s, u32 row0, u32 col0, f32 lse2, f32 c, u32 start0) -> exp2(c s - lse2) where the query
  // sees the key, else 0, with c = scaleLog2e_ and lse2 = lse * log2(e) (one fma and one exp2 per score):
  // query row0 + row and key col0 + col, or (transposed, for the key-row pass) key row0 + row and query
  // col0 + col; with documents the query's start is staged at starts_[start0 + row] (start0 + col
  // transposed).
  spv::FunctionId probabilityFunction(bool transposed);
  // (row, col, f32 s, f32 lse2, f32 c) -> exp2(c s - lse2), for blocks every query of which sees every key.
  spv::FunctionId unmaskedProbabilityFunction();
  // Every query of [q0, q0 + nq) sees every key of [k0, k0 + nk): no mask needed on that block. With
  // documents, lastStart is the start of the block's last query (starts never decrease along a sequence).
  spv::Value fullyVisible(spv::Value q0, uint32_t nq, spv::Value k0, uint32_t nk, spv::Value lastStart = {});
  // Per block of `in`: plain(block) where `visible` (subgroup-uniform), else masked(block), through Function
  // variables (one branch for the whole tile).
  std::vector<spv::Value> unlessMasked(spv::Value visible, const std::vector<spv::Value>& in,
                                       const std::function<spv::Value(spv::Value, uint32_t)>& plain,
                                       const std::function<spv::Value(spv::Value, uint32_t)>& masked);
  // (row, col, f32 x, u32 offset) -> array[offset + col] (a Workgroup f32 array): column-constant matrices.
  spv::FunctionId columnFunction(const char* name, spv::Value array);
  // (Row ops: 16x16x16 on 32 lanes.) A 16 x 16 accumulator whose row r holds the value of the lanes of row r,
  // through this subgroup's 256 f32 entries of `scratch` at sBase_; and back: this lane's row of a
  // row-constant accumulator.
  spv::Value rowMatrix(spv::Value scratch, spv::Value v);
  spv::Value rowValue(spv::Value scratch, spv::Value matrix);
  static constexpr float kMasked = -1.0e30f; // a masked score: finite, so masked rows never make NaN
  static constexpr float kLog2e = 1.4426950408889634f;

  // Block kb (coopM x coopN) of X Y^T: X as A matrices across D, Y the staged tile (rows kb * coopN.. read
  // column-major as B).
  spv::Value productBlock(const std::vector<spv::Value>& xa, const Staging& tile, uint32_t kb);
  // acc + W Y_d: W (coopM x tile) as A matrices, one per coopK columns; Y_d the staged tile's coopN-column
  // block d.
  spv::Value addTileProduct(spv::Value acc, const std::vector<spv::Value>& wa, const Staging& tile,
                            uint32_t d);
  // n accumulator Function variables, each set to zero.
  std::vector<spv::Value> zeroAccs(uint32_t n);
  // dst (coopM x tile f32 at this subgroup's sBase_, row stride tile) = X Y^T, block by block.
  void productT(spv::Value dst, const std::vector<spv::Value>& xa, const Staging& tile);
  // accs[d] += W Y_d: W the coopM x tile f16 block at this subgroup's sBase_ in `w`, Y_d the staged tile's
  // coopN-column block d (accs: Function variables of accumulator matrices).
  void accumulate(const std::vector<spv::Value>& accs, spv::Value w, const Staging& tile);

  // Passes that own query rows (forward, dQ): this workgroup's heads (qAt_, kvAt_, oAt_, lseBase_), block
  // (blockRow_; causal hands the last, longest blocks out first) and this lane's rows_.
  void ownQueryRows();
  // Their walk over the key tiles up to the last key the block's last real row sees: K and V streamed into
  // shK / shV (prefetched a tile ahead), then body(t0) with t0 the tile's first key. With key splits group s
  // walks tiles [s * per, (s + 1) * per) of them, per = ceil(tiles / keySplits) (tiles past the end are
  // masked), every group in the same step. startKeyWalk() (after ownQueryRows) issues the first tiles' loads,
  // so that they are in flight while the pass stages its owned rows; walkKeyTiles() runs the loop.
  struct KeyWalk {
    TileStream ks, vs;
    spv::Value tiles, splitFirst; // tiles per group; this group's first key (key splits)
    spv::Value first;             // the walk's first key: 0, or the first row's start's tile (documents)
  };
  KeyWalk startKeyWalk(const Staging& shK, const Staging& shV);
  void walkKeyTiles(KeyWalk& walk, const std::function<void(spv::Value)>& body);

  // A subgroup-wide barrier that also orders this subgroup's shared-memory writes before its reads.
  void subgroupBarrier();
  spv::Value satSub(spv::Value a, spv::Value b);
  // How many keys query i sees (causal: keys j <= i + Tk - Tq).
  spv::Value keyLimit(spv::Value i);
  // Query i sees key j.
  spv::Value sees(spv::Value i, spv::Value j);
  // The offset of this lane's share of row i of its rows in a scratch of `rowStride` entries per row, where
  // each lane of the row takes `partStride` of them.
  spv::Value laneOffset(uint32_t i, uint32_t rowStride, uint32_t partStride);
  // v combined over the lanes that share this lane's rows (max, or sum).
  spv::Value rowMax(spv::Value v);
  spv::Value rowSum(spv::Value v);

  // `accs` (coopM x coopN f32 accumulators across D, this subgroup's rows) times `scales` (one for every row
  // of this lane, or one for all) into the head's rows of `out` (f32, or 16-bit with a 16-bit out; rows_,
  // written only below `total`), through `scratch` (f32, coopM rows of scratchCols entries from scratchBase).
  // A few blocks at a time, so that each lane of a row writes whole 8-column units.
  void writeRows(const std::vector<spv::Value>& accs, const std::vector<spv::Value>& scales,
                 spv::Value scratch, spv::Value scratchBase, uint32_t scratchCols, const spv::Buffer& out,
                 const HeadRows& at, spv::Value total);
  // Key splits: the block rows of `out` as the sum, in group order, of every group's accumulators `accs`
  // times its factors. Every subgroup stores its blocks into the staging array (free once every subgroup
  // has passed a workgroup barrier after the walk: the caller's), as many coopN-column blocks at a time as
  // fit (mergeChunk; all of D on the GPU tilings); after one barrier every invocation of the workgroup
  // sums and writes a share of the rows' 8-column units.
  void writeSplitRows(const std::vector<spv::Value>& accs, const RowScales& scales, const spv::Buffer& out,
                      const HeadRows& at, spv::Value total);
  // The merge's staged chunk: `blocks` coopN-column blocks of every subgroup's rows, `stride` vectors per
  // row, `region` per subgroup, `units` 8-column units per row.
  struct MergeChunk {
    uint32_t blocks, stride, region, units;
  };
  MergeChunk mergeChunk() const;
  // Each subgroup's per-row factors into a shared array (none where scales.all holds for every row).
  spv::Value publishRowScales(const RowScales& scales);
  // One invocation's 8-column unit u of chunk `chunk`: the groups' staged values summed and written.
  struct SplitUnits {
    MergeChunk chunk;
    spv::Value published, all;
    const spv::Buffer* out;
    HeadRows at;
    spv::Value total;
  };
  void writeSplitUnit(const SplitUnits& w, spv::Value u, uint32_t chunk);
  // Key splits: every subgroup publishes (a, b) for each row of this lane; returns, for every group s in
  // order (its own included), the pair the subgroup of group s that holds the same rows published (per row
  // of this lane), so that every group merges them in the same order and gets the same bits.
  std::vector<std::vector<std::pair<spv::Value, spv::Value>>> tradeRowPairs(const std::vector<spv::Value>& a,
                                                                            const std::vector<spv::Value>& b);

  const AttentionCoopParams& p_;
  // 16-byte vectors (8 halves) per f16 row, per staged row; coopN-column blocks (accumulators) and
  // coopK-column ones (A matrices) across D
  uint32_t d8_, rowVecs_, blocks_, aBlocks_;
  uint32_t lanes_, rowsPerLane_; // p_.lanesPerRow(), p_.rowsPerLane()
  spv::Module m_;
  spv::FunctionBuilder* f_ = nullptr;
  spv::TypeId f32_, half_, u32_, uvec4_, vec4_, ta_, tb_, tc_; // half_: the operands' 16-bit storage
  spv::PushConstants pc_;
  spv::Value Tq_, Tk_, H_, Hkv_, scale_, lid_;
  // This subgroup's index in the workgroup, its row group (the subgroup index without key splits) and its
  // key-split group (constant 0 without).
  spv::Value sgId_, sg_, split_;
  // This lane's rows within its subgroup's coopM (rowsPerLane_ of them) and its part of each (0 .. lanes_-1).
  std::vector<spv::Value> rowInSg_;
  spv::Value part_;
  spv::Value layout_[3][3]; // push constants: {row, head, batch} of the q, kv and o layouts
  spv::Value scaleLog2e_;   // scale * log2(e): scores go through exp2
  spv::Value zeroAcc_;      // a zero coopM x coopN accumulator, made once at the top of main
  spv::Value sBase_;  // this subgroup's first entry in the per-subgroup scratch arrays (set by the pass)
  spv::Value staged_; // the staging array (declareStaging)
  spv::Buffer q_, k_, v_;
  HeadRows qAt_, kvAt_, oAt_;
  spv::Value lseBase_; // the q head's first entry of lse and delta
  spv::Value blockRow_;
  spv::Value batch_;             // this workgroup's batch
  spv::Buffer positions_;        // documents
  spv::Value starts_;            // documents: the staged starts (declareDocuments)
  std::vector<spv::Value> rows_; // this lane's rows of the tensor side it owns
  KeyWalk walk_;                 // passes that own query rows (startKeyWalk)
  // Every pass's owned rows (staged once in setup); passes that own query rows: the K and V tiles of their
  // walk.
  Staging shRows_, shK_, shV_;
};

// What both forwards share (attention_coop_fwd.cpp: the softmax by lanes through shared memory;
// attention_coop_fwd_rowops.cpp: on the accumulators): the module's order (bindings q, k, v, o, lse, the
// entry point, the staging arrays of Q and the K / V tiles, then the pass's scratch, setup, key loop and
// finish), the O accumulators, the final write of O / l and lse, and the key splits' merge of (m, l).
class ForwardEmitterBase : protected AttentionCoopEmitter {
public:
  std::vector<uint32_t> build(uint32_t& pushBytes);

protected:
  using AttentionCoopEmitter::AttentionCoopEmitter;
  virtual ~ForwardEmitterBase() = default;
  virtual void declareScratch() = 0; // the pass's shared arrays and helper functions
  virtual void setup() = 0;          // after ownQueryRows(): rows, walk, Q as A matrices, m and l, O
  virtual void keyLoop() = 0;
  virtual void finish() = 0;

  // The walk's first loads, the staged starts (documents) and this subgroup's Q rows as A matrices (qa_).
  void beginQueries();
  // O / l (oAcc_ times the rows' inverses) through `scratch` (scratchCols entries per row), then lse.
  void finishRows(const std::vector<spv::Value>& ls, const std::vector<spv::Value>& ms, spv::Value scratch,
                  uint32_t scratchCols);
  // Key splits: each group's (m, l) per row of this lane merges into m* = max m and l* = sum l factor(m, m*);
  // own = factor(m of this group, m*) / l* scales this group's O (each group its own).
  struct SplitMerge {
    std::vector<spv::Value> m, l, own;
  };
  SplitMerge mergeSplits(const std::vector<spv::Value>& ms, const std::vector<spv::Value>& ls,
                         const std::function<spv::Value(spv::Value mi, spv::Value m)>& factor);
  // lse = m + log l for each row of this lane (the first lane of a row of the first key-split group writes);
  // -inf for a row that saw no key (l = 0).
  void writeLse(const std::vector<spv::Value>& l, const std::vector<spv::Value>& m);
  // 1 / l, or 0 for a row that saw no key (l = 0).
  spv::Value inverse(spv::Value l);

  spv::Buffer o_, lse_;
  std::vector<spv::Value> qa_, oAcc_;
};

// The passes, each a complete module (AttentionCoopParams::pass picks one in generateAttentionCoop).
std::vector<uint32_t> emitAttentionCoopForward(const AttentionCoopParams& p, uint32_t& pushBytes);
std::vector<uint32_t> emitAttentionCoopForwardRowOps(const AttentionCoopParams& p, uint32_t& pushBytes);
std::vector<uint32_t> emitAttentionCoopQueryGrad(const AttentionCoopParams& p, uint32_t& pushBytes);
std::vector<uint32_t> emitAttentionCoopKeyValueGrad(const AttentionCoopParams& p, uint32_t& pushBytes);

} // namespace helios::codegen::detail
