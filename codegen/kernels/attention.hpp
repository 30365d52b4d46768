#pragma once
// Fused attention without cooperative matrices (the fallback of the flash-attention family): the T x T score
// matrix is never written to memory. f32, row-major, heads of D = headDim floats:
//   Q, O, dO, dQ: [B, H, Tq, D]    K, V, dK, dV: [B, Hkv, Tk, D]    lse, delta: [B, H, Tq]
// Query head h reads key/value head h / (H / Hkv) (grouped-query attention). With `causal`, query i sees keys
// j <= i + Tk - Tq (the mask aligned to the bottom right, as the softmax op's); a query that sees no key gets
// O = 0 and lse = -inf.
//
// `lanes` invocations own one row (a query row, or a key row for KeyValueGrad), each a contiguous share of
// its D/4 vectors, so per-invocation state stays small at D = 128; the workgroup's rows walk the other side
// in tiles of `tile` rows staged in shared memory (16-byte vectors, zero-filled past the end).
//   Forward:      online softmax (running max m and sum l), O = sum p V / l, lse = m + log l.
//   QueryGrad:    delta_i = dO_i . O_i (written out), dQ_i = scale * sum_j p_ij (dO_i . V_j - delta_i) K_j,
//                 with p_ij = exp(scale Q_i . K_j - lse_i) recomputed from the saved lse.
//   KeyValueGrad: dV_j = sum_i p_ij dO_i, dK_j = scale * sum_i p_ij (dO_i . V_j - delta_i) Q_i, over every
//                 query head of the group (runs after QueryGrad, which writes delta).
// Bindings (in order): Forward q, k, v, o, lse; QueryGrad q, k, v, o, dO, lse, dQ, delta;
//   KeyValueGrad q, k, v, dO, lse, delta, dK, dV; with DocumentMask::Packed one more after them: positions.
//
// Sequence packing (DocumentMask::Packed, causal, Tq == Tk): positions [B, Tq] (int32) holds each token's
// position inside its document (0 at the document's first token, counting up by one), so query i sees keys
// start(i) = i - positions[i] .. i. Starts never decrease along a sequence: key tiles before the first row's
// start are skipped whole (forward, QueryGrad), and KeyValueGrad stops at the first query tile that starts
// after its last key.
// Push: AttentionPush. Grid: {ceil(rows of the owned side / rowsPerGroup()), B * H (B * Hkv for
// KeyValueGrad), 1}.
#include <cstdint>
#include <string>

#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

enum class AttentionPass : uint8_t { Forward, QueryGrad, KeyValueGrad };
const char* toString(AttentionPass p); // "fwd", "dq", "dkv"

// Which keys besides the causal bound a query sees: every one (None), or only its own document's, from
// per-token positions in a packed sequence (Packed; see above). Shared by the coop passes.
enum class DocumentMask : uint8_t { None, Packed };

struct AttentionParams {
  AttentionPass pass = AttentionPass::Forward;
  uint32_t headDim = 64; // D, a multiple of 4 (16-byte vectors), at most 256
  bool causal = false;
  DocumentMask documents = DocumentMask::None; // Packed needs causal
  uint32_t rows = 64;                          // invocations per workgroup
  uint32_t lanes = 1; // invocations per row (1, 2, 4, 8): each holds D/lanes of the row; dot products are
                      // finished with subgroup shuffles, so a row's lanes sit in one subgroup
  uint32_t tile = 32; // rows of the other side staged per step
  // The device's maxComputeSharedMemorySize: validate()'s bound, not part of the kernel (nor of its key).
  uint32_t maxSharedBytes = 49152;
  uint32_t rowsPerGroup() const { return rows / lanes; } // owned rows per workgroup
  std::string cacheKey() const; // "attention:fwd:d64:causal:r64:l2:t32" (":docs" with documents)
  std::string name() const;     // "attention_fwd_causal_d64_r64_l2_t32" ("_docs")
  uint32_t bindings() const;    // 5 (forward) or 8, + 1 with documents
  uint32_t sharedBytes() const;
  void validate() const; // throws std::invalid_argument naming the broken constraint
};

struct AttentionPush {
  uint32_t Tq = 0, Tk = 0, heads = 0, kvHeads = 0;
  float scale = 1.0f;
};
static_assert(isPushBlock<AttentionPush> && sizeof(AttentionPush) == 20);

// The pass for this head dim: 64 invocations, lanes so that each holds at most `rowVectors` vectors of a row
// (8: D = 64 on 2 lanes, D = 128 on 4; 4: twice the lanes), and the first tile of 32, 16, 64, 8 rows that
// fits in `maxSharedBytes` of shared memory.
AttentionParams attentionParams(AttentionPass pass, uint32_t headDim, bool causal,
                                uint32_t maxSharedBytes = 49152, uint32_t rowVectors = 8,
                                DocumentMask documents = DocumentMask::None);
Kernel generateAttention(const AttentionParams& p);
void registerAttention(KernelRegistry& registry);

} // namespace helios::codegen
