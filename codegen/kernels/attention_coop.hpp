#pragma once
// Fused attention forward on cooperative matrices (VK_KHR_cooperative_matrix, 16x16x16 f16 -> f32): the coop
// path of the flash-attention family. Same maths, masks, layouts and outputs as the fallback's Forward pass
// (attention.hpp), but q, k, v are f16 ([B, H, Tq, D] and [B, Hkv, Tk, D]); o and lse stay f32.
//
// Each subgroup owns 16 query rows; the workgroup stages its Q rows once and, per step, a tile of 32 keys and
// values in shared memory (16-byte vectors, zero past the end). Per step and subgroup:
//   S = Q K^T       coop MulAdds (K read column-major from the staged tile), stored to shared memory
//   softmax         two lanes per row: masked row max and sum (shuffles), running max m and sum l, P = exp(S
//                   - m) written as f16; the lane's share of O (8 columns of every 16) rescaled
//   O += P V        coop MulAdds per 16 columns of D, each block passed through shared memory into the lanes'
//                   f32 O registers
// finish: O / l and lse = m + log l (a row that sees no key: 0 and -inf).
// Bindings: 0 q, 1 k, 2 v (f16, 16-byte aligned rows: D % 16 == 0), 3 o, 4 lse (f32). Push: AttentionPush.
// Grid: {ceil(Tq / rows()), B * H, 1}; local size {subgroups * 32}; required subgroup size 32.
//
// Status: passes spirv-val; its numerics are checked only on a device with cooperative matrices
// (tests/ops/test_attention.cpp skips it on lavapipe).
#include <cstdint>
#include <string>

#include "codegen/kernel.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

struct AttentionCoopParams {
  uint32_t headDim = 64; // D: a multiple of 16, at most 128
  bool causal = false;
  uint32_t subgroups = 4; // 16 query rows each
  uint32_t tile = 32;     // keys per step (32: two lanes per row cover 16 each)
  uint32_t subgroupSize = 32;
  uint32_t maxSharedBytes = 49152;

  uint32_t rows() const { return 16 * subgroups; }
  uint32_t invocations() const { return subgroups * subgroupSize; }
  uint32_t sharedBytes() const;
  std::string cacheKey() const; // "attention_coop:fwd:d64:causal:sg4:t32:sgs32:smem49152"
  std::string name() const;     // "attention_coop_fwd_causal_d64_sg4_t32"
  void validate() const;        // throws std::invalid_argument naming the broken constraint
};

// The largest subgroup count (4, 2, 1) whose shared memory fits.
AttentionCoopParams attentionCoopParams(uint32_t headDim, bool causal, uint32_t maxSharedBytes = 49152);
Kernel generateAttentionCoop(const AttentionCoopParams& p);
void registerAttentionCoop(KernelRegistry& registry);

} // namespace helios::codegen
