#pragma once
// The KHR coop GEMM's operand copies, global -> registers -> shared memory: each invocation's slots in a
// slice, the 16-byte vector loads (optionally bounds-checked, or f32 rounded to f16) and the bounded kernel's
// scalar loads (along rows or crosswise). Internal to codegen/kernels (gemm_coop.cpp).
#include <vector>

#include "codegen/kernels/gemm_coop.hpp"
#include "codegen/spirv/builder.hpp"

namespace helios::codegen::coop {

// One operand's slice as staged: `rows` x `vecsPerRow` 16-byte vectors, shared rows `sharedRowVecs` apart.
struct TileCopy {
  uint32_t rows = 0, vecsPerRow = 0, sharedRowVecs = 0;
  uint32_t stageVecs() const { return rows * sharedRowVecs; }
};
// A's slice: BM x BK (stored M x K), or BK x BM straight from a K x M matrix (transA), as staged.
TileCopy tileA(const GemmCoopParams& p);
// B's slice: BK x BN (stored K x N), or BN x BK straight from an N x K matrix (transB), as staged.
TileCopy tileB(const GemmCoopParams& p);

// Vectors per staged C row of a subgroup's tile (staged and bounded stores): the f32 row plus one of padding.
uint32_t stagedRowVecs(const GemmCoopParams& p);
// Vectors of the A staging: its stages, or (staged or bounded store) every subgroup's C region if more.
uint32_t sharedAVecs(const GemmCoopParams& p);

// One vector an invocation copies: its global offset (vectors, relative to the slice origin; vector loads
// only), its shared offset, and its place in the staged slice (row, column in 8-element vectors).
struct CopySlot {
  spv::Value global, shared;
  spv::Value row, col;
};
// The slots of invocation `tid` among `copiers`, global rows `globalRowVecs` vectors apart. Crosswise,
// consecutive invocations take consecutive staged rows (the stored operand's consecutive columns).
std::vector<CopySlot> copySlots(spv::FunctionBuilder& f, const TileCopy& t, uint32_t copiers,
                                spv::Value globalRowVecs, spv::Value tid, bool crosswise);

// Bounded: one operand's stored matrix (rows x cols, row stride ld, from element `base`) and where the
// slice starts in it; the K side (rows when kInRows) moves by BK per step. `last`: the binding's last
// element (vector, with boundedVectors), where reads are clamped. Crosswise: each slot's halves run down a
// column of the stored matrix.
struct Edge {
  spv::Value base, rowOrigin, rows, colOrigin, cols, ld;
  bool kInRows;
  spv::Value last{};
  bool crosswise = false;
};

// Global -> registers, 16-byte vectors: the slice of step kt starts at vector origin + kt * step. Stored as
// f32: two vec4 per vector, rounded to `operands`. With `edge` (boundedVectors) each vector is read clamped
// to the binding and zeroed unless it lies inside the matrix (rows are multiples of 8 halves: wholly inside
// or outside).
std::vector<spv::Value> loadVectors(spv::FunctionBuilder& f, const spv::Buffer& buf,
                                    const std::vector<CopySlot>& slots, spv::Value origin, spv::Value step,
                                    spv::Value kt, uint32_t BK, Elem stored, Elem operands, const Edge* edge);

// How the bounded kernel's scalar copies are checked: every half against the far edges (Edges), also
// against a start below 0 (FromBelow: an edge-shifted kernel's first step, whose K origin is negative and
// not always a multiple of 8), or not at all (None: every half known inside, edge-shifted later steps).
enum class ScalarCheck { Edges, FromBelow, None };

// Global -> registers, bounded: each vector of 8 halves (of 16-bit `kind`) read as scalars, zero outside
// the matrix.
std::vector<spv::Value> loadScalars(spv::FunctionBuilder& f, const spv::Buffer& buf,
                                    const std::vector<CopySlot>& slots, const Edge& e, spv::Value kt,
                                    uint32_t BK, ScalarCheck check, Elem kind);

// Registers -> shared memory at vector offset `stageOffset`.
void storeSlots(spv::FunctionBuilder& f, spv::Value shared, const std::vector<CopySlot>& slots,
                const std::vector<spv::Value>& regs, spv::Value stageOffset);

} // namespace helios::codegen::coop
