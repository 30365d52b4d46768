#pragma once
// Fused attention (codegen/kernels/attention.hpp): the score matrix never reaches memory. f32, row-major,
// by default (AttentionShape's layouts place the heads elsewhere, and halfQkv / halfOut store f16):
//   q, o, dO, dQ [batch, heads, Tq, headDim]; k, v, dK, dV [batch, kvHeads, Tk, headDim];
//   lse, delta [batch, heads, Tq].
// heads must be a multiple of kvHeads (query head h reads kv head h / (heads / kvHeads)). With `causal`,
// query i sees keys j <= i + Tk - Tq; a query that sees none gets o = 0 and lse = -inf.
#include <cstdint>
#include <optional>
#include <vector>

#include "codegen/kernels/attention_coop.hpp"
#include "engine/ops/executor.hpp"
#include "engine/tuning/tuning.hpp"

namespace helios::ops {

// Which kernels run: the f32 fallback, or the cooperative-matrix passes (codegen/kernels/attention_coop.hpp),
// which round q, k, v and dO to f16 (f32 accumulation; outputs stay f32). Auto takes coop where
// attentionCoopAvailable() and every range starts 16-byte aligned; Coop throws where it cannot run.
enum class AttentionKernel : uint8_t { Fallback, Auto, Coop };

// Where a tensor's heads are (elements): row t of head h of batch b starts at b * batch + h * head + t * row.
// All zero (the default) is [B, heads, T, D] contiguous. Other layouts, such as the rows of a packed [B T, W]
// projection ({W, D, T W}), are read and written by the coop passes only; every stride a multiple of 8.
struct AttentionLayout {
  uint32_t row = 0, head = 0, batch = 0;
  bool contiguous() const { return !row && !head && !batch; }
};

struct AttentionShape {
  uint32_t batch = 1, heads = 1, kvHeads = 1, Tq = 0, Tk = 0, headDim = 64;
  bool causal = false;
  float scale = 1.0f; // scores = scale * q . k (usually 1 / sqrt(headDim))
  AttentionKernel kernel = AttentionKernel::Fallback;
  // q, k and v hold f16 (what the coop passes read anyway: half the bytes, no rounding in the kernel). Coop
  // passes only: anything that would take the fallback is an error. o, lse, dO and the gradients stay f32.
  bool halfQkv = false;
  // o, dQ, dK and dV stored as f16 (coop passes only; o is read back as f16 by the backward).
  bool halfOut = false;
  // The coop passes' 16-bit kind: what halfQkv and halfOut store, and what f32 q, k, v and dO are rounded
  // to. BF16 takes bf16 cooperative matrices (coopDeviceInfo's bf16); the fallback stays f32.
  codegen::Elem half = codegen::Elem::F16;
  // q and dQ; k, v, dK and dV; o and dO (coop passes only where not contiguous).
  AttentionLayout qLayout, kvLayout, oLayout;
  // Fallback only: vectors of a row per invocation (codegen::attentionParams); 0: the device's
  // (attentionRowVectors).
  uint32_t rowVectors = 0;
};

// o = softmax(scale q k^T [mask]) v per (batch, head); lse = the log-sum-exp of each score row.
void attentionForward(Executor& exec, vk::BufferRange q, vk::BufferRange k, vk::BufferRange v,
                      vk::BufferRange o, vk::BufferRange lse, const AttentionShape& shape);

// The device's coop shape and subgroup size (coopDeviceInfo) are ones the coop passes support
// (codegen::attentionCoopSupports), and headDim is a multiple of 16 up to 128.
// With half = BF16 the device's coop matrices also take bf16 (CoopDeviceInfo::bf16).
bool attentionCoopAvailable(const vk::Device& device, uint32_t headDim,
                            codegen::Elem half = codegen::Elem::F16);

// The Tuning record's name of a pass.
tuning::AttentionPassId passId(codegen::AttentionPass pass);
// The coop pass the op runs on this device, at its coop shape and subgroup size: the NV2 row-ops variant
// where the device has its operations (16x16x16 on 32 lanes), with the device's Tuning record applied (the
// pass's tuned entry, then attention.rowOps / tile / subgroups / prefetch / pad; docs/TUNING.md).
codegen::AttentionCoopParams attentionCoopPass(const vk::Device& device, codegen::AttentionPass pass,
                                               uint32_t headDim, bool causal);
// The coop pass the ops run for `shape`: attentionCoopPass with the shape's f16 storage and, on the passes
// that walk keys (forward, dQ), its key splits.
codegen::AttentionCoopParams attentionCoopFor(const vk::Device& device, codegen::AttentionPass pass,
                                              const AttentionShape& shape);
// How many ways the coop forward and dQ pass split each block's key walk (AttentionCoopParams::keySplits):
// `forced` (attention.keySplits) where set; else 2 when the grid's `workgroups` leave part of one wave
// (`fill`) idle and each block walks at least two key tiles of `tile` over `keys`, otherwise 1. A split block
// takes half the key tiles' latency for twice the subgroups, which an idle device has to spare.
uint32_t attentionKeySplits(std::optional<uint32_t> forced, uint64_t workgroups, uint64_t fill, uint32_t keys,
                            uint32_t tile);
// The layouts a pass's key splits try, preferred first (the first that fits 16 subgroups and the shared
// memory is taken): `splits` ways at the pass's subgroups and tile, then at 32-key tiles; a forward the
// policy splits (not `forced`) first takes half the rows per block (twice the blocks) split 4 ways over
// 32-key tiles (or its own smaller ones), the fastest small-grid forward on the H100
// (2026-11-26-h100-attention-key-splits.json).
struct KeySplitLayout {
  uint32_t splits, subgroups, tile;
  bool operator==(const KeySplitLayout&) const = default;
};
std::vector<KeySplitLayout> keySplitLayouts(codegen::AttentionPass pass, uint32_t splits, bool forced,
                                            uint32_t subgroups, uint32_t tile);
// Whether the coop dK/dV pass recomputes delta from dO and O (codegen::DkvDelta::Recompute), which frees it
// to run beside the dQ pass: as `mode` (attention.delta) says, and by policy always (where the third staged
// tile fits): the two passes then share the device, which small grids leave idle and large ones finish with
// a shorter tail (2026-11-26-h100-attention-key-splits.json).
bool attentionRecomputeDelta(tuning::DeltaMode mode);

// Vectors of a q/k/v row one invocation of the f32 fallback holds (codegen::attentionParams): 4 on Intel
// (vendor 0x8086), whose invocations get 128 32-bit registers at the narrowest SIMD width, where the
// backward passes spilled at 8 (DG2, D = 64); 8 elsewhere (AMD and NVIDIA give an invocation up to 255-256).
uint32_t attentionRowVectors(uint32_t vendorId);

// Gradients from the forward's o and lse (recomputing the scores): dQ, dK, dV (overwritten). delta is scratch
// of batch*heads*Tq floats (written with dO . o per row, then read).
void attentionBackward(Executor& exec, vk::BufferRange q, vk::BufferRange k, vk::BufferRange v,
                       vk::BufferRange o, vk::BufferRange lse, vk::BufferRange dO, vk::BufferRange dQ,
                       vk::BufferRange dK, vk::BufferRange dV, vk::BufferRange delta,
                       const AttentionShape& shape);

} // namespace helios::ops
