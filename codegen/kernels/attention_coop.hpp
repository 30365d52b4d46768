#pragma once
// Fused attention on cooperative matrices (VK_KHR_cooperative_matrix, f16 x f16 -> f32 at the device's
// M x N x K shape: 16x16x16, 16x8x16, 16x8x8, 8x8x16, 8x16x16, ...): the coop path of the flash-attention
// family. Same maths, masks, layouts, bindings and push constants as the fallback's
// passes (attention.hpp): every tensor is f32 in memory; q, k, v and dO are rounded to f16 as they are
// staged into shared memory (16-byte vectors, zero past the end), and everything accumulates in f32.
//
// Each subgroup owns coopM rows (query rows; key rows for KeyValueGrad) and walks tiles of `tile` rows of the
// other side, staged per step; products are blocked by coopN (their columns) and coopK (their sums). Per step
// and subgroup, the coopM x tile products that need per-row maths (S, and dP = dO V^T in the backward) go
// through shared memory, where the lanes apply the mask and the softmax and write P (or dS) back as f16 for
// the next coop MulAdd: subgroupSize / coopM lanes per row when the subgroup has more lanes than rows (two on
// the H100's 16 rows and 32 lanes), else coopM / subgroupSize rows per lane. With rowOps
// (VK_NV_cooperative_matrix2 reductions, per-element operations and conversions) that per-row maths runs on
// the accumulators instead, and in the loop nothing but the staged tiles goes through shared memory. Staged
// rows are padded (pad) so the 16-row coop loads do not conflict on shared-memory banks.
//   Forward:      online softmax (running max m and sum l per row, O rescaled in the lanes' registers),
//                 O = P V / l, lse = m + log l (a row that sees no key: 0 and -inf).
//   QueryGrad:    delta = dO . O (written out), dQ = scale * dS K with P = exp(scale S - lse) recomputed and
//                 dS = P (dP - delta); dQ stays in accumulator matrices for the whole key walk.
//   KeyValueGrad: dV = P^T dO, dK = scale * dS^T Q over every query head of the group, from S^T = K Q^T
//                 and dP^T = V dO^T (after QueryGrad, which writes delta; or beside it, recomputing delta
//                 from staged dO and O tiles: DkvDelta).
// Grid: {ceil(owned rows / rows()), B * H (B * Hkv for KeyValueGrad), 1}; local size {subgroups * keySplits *
// subgroupSize}; required subgroup size subgroupSize (8, 16, 32 or 64). Causal forward and QueryGrad hand the
// last (longest) row blocks out first.
//
// Layouts: unlike the fallback, the coop passes take AttentionCoopPush, whose strides place every head's rows
// anywhere: row t of head h of batch b starts at element b * batch + h * head + t * row of its tensor. The
// [B, H, T, D] layout is {D, T D, H T D}; rows of a packed [B T, W] projection (the model's QKV, and O
// written where the output projection reads it) are {W, D, T W}. q and dQ share one layout, k, v, dK and dV
// another, o and dO a third; lse and delta stay [B, H, Tq].
//
// Documents (DocumentMask::Packed, causal, Tq == Tk): a binding after the pass's others holds the tokens'
// positions inside their documents ([B, Tq] int32, attention.hpp), and query i sees keys i - pos[i] .. i. The
// forward and dQ start their key walks at the tile holding the block's first row's start; the dK/dV pass
// stops at the first query tile that starts after its last key. Each pass stages the starts of the rows the
// masks need (the owned query rows, or the query tile) in shared memory.
#include <cstdint>
#include <string>

#include "codegen/elem.hpp"
#include "codegen/kernel.hpp"
#include "codegen/kernels/attention.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

// The cooperative-matrix shape (f16 A M x K, B K x N, f32 C M x N) and the subgroup size the kernels run at.
struct CoopShape {
  uint32_t M = 16, N = 16, K = 16, subgroupSize = 32;
  bool lowered = false; // AttentionCoopParams::lowered
};

// Where the KeyValueGrad pass gets delta = dO . O of its query tiles: read from what QueryGrad wrote (so it
// runs after QueryGrad), or recomputed from dO and O tiles it stages itself (binding 5 holds o instead of
// delta; nothing ties it to QueryGrad, and the two passes can run at once).
enum class DkvDelta : uint8_t { Read, Recompute };

struct AttentionCoopParams {
  AttentionPass pass = AttentionPass::Forward;
  uint32_t headDim = 64; // D: a multiple of 16, at most 128
  bool causal = false;
  DocumentMask documents = DocumentMask::None; // Packed needs causal
  uint32_t subgroups = 4;                      // coopM owned rows each
  uint32_t tile = 32; // rows of the other side per step (32, or 64 for the forward; 16 lowered)
  uint32_t coopM = 16, coopN = 16, coopK = 16; // 8 or 16 each
  bool prefetch = true; // issue the global loads of the next tile before computing on the current one
  // The per-row maths on the accumulators through VK_NV_cooperative_matrix2 reductions, per-element
  // operations and use conversions (attention_coop_fwd_rowops.cpp; the backward's stepInRegisters): no
  // S/P/dS scratch, no subgroup barriers in the loop; tiles of 32, 64 or 128.
  bool rowOps = false;
  // 16-byte vectors appended to every staged 16-bit row: rows of D = 64 or 128 halves would otherwise start
  // on the same shared-memory banks, and the coop loads that read 16 of them at once would conflict.
  uint32_t pad = 1;
  // Element types (bf16 in memory as uint16 bits: elem_io.hpp). operands: what the coop matrices hold, F16,
  // or BF16 where the device lists bf16 x bf16 -> f32; the softmax and every sum stay f32. qkv: q, k and v
  // in memory, F32 (rounded to `operands` as they are staged) or `operands` (bindings 0-2 hold halves,
  // staged as they are); dO and lse stay f32. out: o, dQ, dK and dV in memory (o read back by QueryGrad),
  // F32 or `operands` (what a 16-bit GEMM reads next).
  Elem operands = Elem::F16;
  Elem qkv = Elem::F32;
  Elem out = Elem::F32;
  uint32_t subgroupSize = 32;
  uint32_t maxSharedBytes = 49152;
  // The coop instructions lowered to ordinary SPIR-V for subgroupSize (spv::ModuleOptions::
  // coopLowerSubgroup; no rowOps).
  bool lowered = false;
  // The key walk (forward, QueryGrad) split across keySplits groups of `subgroups` subgroups (1, 2 or 4):
  // group s walks its share of the key tiles for the same rows, and the groups' partial results merge
  // through shared memory at the end (the forward's row max, sum and O; dQ's sums). A block then takes
  // 1 / keySplits of the key tiles' latency, for grids too small to fill the device (attention.keySplits).
  uint32_t keySplits = 1;
  DkvDelta delta = DkvDelta::Read; // KeyValueGrad only

  uint32_t rows() const { return coopM * subgroups; }
  uint32_t allSubgroups() const { return subgroups * keySplits; }
  // The per-row maths' split: lanes sharing a row (1 when rows outnumber lanes), rows each lane takes.
  uint32_t lanesPerRow() const { return subgroupSize > coopM ? subgroupSize / coopM : 1; }
  uint32_t rowsPerLane() const { return coopM > subgroupSize ? coopM / subgroupSize : 1; }
  uint32_t invocations() const { return allSubgroups() * subgroupSize; }
  // 16-byte vectors of the staging array: the owned rows, the streamed tiles over the same bytes, and with
  // key splits at least one coopN-column block of every subgroup's rows, which the groups' partial outputs
  // pass through as they merge once the walk is done.
  uint32_t stagedVectors() const;
  uint32_t sharedBytes() const;
  // "attention_coop:fwd:d64:causal:sg4:t32:pf1:sgs32:smem49152" (":rowops"; ":c8x8x16" off 16x16x16;
  // ":docs" with documents)
  std::string cacheKey() const;
  // "attention_coop_fwd_causal_d64_sg4_t32" ("_nopf" without prefetch, "_rowops", "_h16" 16-bit q/k/v,
  // "_o16" 16-bit outputs; "_ks2" with key splits, "_rd" recomputing delta; "_c8x8x16" and "_w16" off the
  // 16x16x16 shape and 32-wide subgroups; "_bf16" on bf16 operands; "_docs" with
  // documents)
  std::string name() const;
  uint32_t bindings() const; // 5 (forward) or 8, + 1 with documents
  void validate() const;     // throws std::invalid_argument naming the broken constraint
};

// Push constants of every coop pass: the fallback's AttentionPush, then the row, head and batch strides of
// the q, kv and o layouts, each in units of 8 elements (every row starts on a 16-byte f16 vector).
struct AttentionCoopLayout {
  uint32_t row = 0, head = 0, batch = 0;
};
struct AttentionCoopPush {
  AttentionPush shape;
  AttentionCoopLayout q, kv, o;
};
static_assert(isPushBlock<AttentionCoopPush> && sizeof(AttentionCoopPush) == 56);

// The pass's tiling for a coop shape: the forward takes 64-key tiles with 4 subgroups where they fit;
// otherwise 32-key tiles with the largest subgroup count (4, 2, 1) whose shared memory fits. rowOps: the
// NV2 variant (16x16x16 on 32-wide subgroups only; 64-key tiles with 4 subgroups for every pass where they
// fit; at D > 64 with 8 subgroups, and the forward without prefetch).
AttentionCoopParams attentionCoopParams(AttentionPass pass, uint32_t headDim, bool causal,
                                        uint32_t maxSharedBytes = 49152, bool rowOps = false,
                                        const CoopShape& shape = {});
// The tiling of a lowered pass (p.lowered, the rest of p as chosen): 16-row tiles on 2 subgroups (1 where 2
// do not fit), which lavapipe compiles several times faster than the GPU tilings (32- and 64-row tiles).
AttentionCoopParams loweredAttentionTiling(AttentionCoopParams p);
// Whether the KHR coop passes support a shape and subgroup size (f16 x f16 -> f32 sides of 8 or 16;
// subgroups of 4 to 64 lanes, a power of two).
bool attentionCoopSupports(const CoopShape& shape);
Kernel generateAttentionCoop(const AttentionCoopParams& p);
void registerAttentionCoop(KernelRegistry& registry);

} // namespace helios::codegen
