#pragma once
// Internal to engine/model: the pieces of one transformer block, written against the autograd tape.
// Weight layouts are PyTorch Linear ([out, in], y = x W^T + b).
#include "engine/autograd/ops.hpp"
#include "engine/model/gpt.hpp"

#include <functional>
#include <string>

namespace helios::model::detail {

using autograd::Tape;
using autograd::Tensor;

// One block's parameters as this call sees them: norms and biases f32; GEMM weights f32, or their 16-bit
// copies in Precision::Mixed and BF16 (sharing the master's gradient slot). Unused members stay empty.
struct BlockWeights {
  Tensor ln1w, ln1b, ln2w, ln2b;
  Tensor qkvW, qkvB;             // packed QKV: [(H + 2 Hkv) D, C]
  Tensor qW, qB, kW, kB, vW, vB; // separate Q, K, V
  Tensor projW, projB;           // attention output projection [C, H D]
  Tensor fcW, fcB;               // GELU MLP [hidden, C]
  Tensor gateW, gateB, upW, upB; // SwiGLU [hidden, C] each
  Tensor mlpProjW, mlpProjB;     // [C, hidden]
  // 16-bit copies of qkvB and fcB made with the weights' (GptConfig::groupCasts), for GEMMs that write
  // 16-bit outputs; empty otherwise (linear() then casts the f32 bias itself).
  Tensor qkvBHalf, fcBHalf;
  // LoRA adapters on the linear layers of the same names (rank 0: none).
  autograd::LoraTerm qkvLora, qLora, kLora, vLora, projLora, fcLora, gateLora, upLora, mlpProjLora;
};

// A bias as linear() takes it: null where the configuration places none (BiasPlacement).
inline const Tensor* biasOf(const Tensor& bias) {
  return bias.shape.empty() ? nullptr : &bias;
}

// The bias a GEMM with a 16-bit output adds: its ready 16-bit copy where there is one.
inline const Tensor* halfBiasOf(const Tensor& bias, const Tensor& half) {
  return half.shape.empty() ? biasOf(bias) : &half;
}

// An adapter as LinearOptions takes it: null where the layer has none.
inline const autograd::LoraTerm* loraOf(const autograd::LoraTerm& term) {
  return term.rank == 0 ? nullptr : &term;
}

// Fills w's adapters for block `layer` of `c` (lora_weights.cpp): A and B are tensor("blocks.N.<site>.lora_A
// .weight") etc., as the caller stores them; dropout draws from `counter` (empty: no dropout, as in
// decoding).
void attachLora(BlockWeights& w, const GptConfig& c, uint32_t layer,
                const std::function<Tensor(const std::string&)>& tensor, vk::BufferRange counter);

struct BlockShape {
  GptConfig config;
  uint32_t batch = 0, T = 0;
  uint32_t kvHeads = 0, headDim = 0;
  vk::BufferRange ropeTable; // [context, D/2, 2] when config.rope
  bool fuseGelu = false;     // forward-only calls: GEMM with the fused bias + GELU epilogue
  uint32_t layer = 0;        // the block's index (block 0's input gradient goes to the embeddings)
  // [batch, T] int32 positions inside packed documents (config.pack's ops::documentPositions, or given with
  // the batch); empty without packing.
  vk::BufferRange documentPositions;
  // The 16-bit kind of the GEMM operands: F16 (Mixed), BF16, or F32 (no 16-bit copies).
  autograd::DType half() const { return halfOf(config.precision); }
  bool mixed() const { return codegen::isHalf(half()); } // Mixed or BF16: 16-bit GEMM operands
  // The storage a producer whose only consumer is a GEMM writes: the 16-bit kind with fused casts.
  autograd::DType gemmOperand() const { return mixed() && config.fusedCasts ? half() : autograd::DType::F32; }
  // Gradients that only meet 16-bit GEMMs travel in 16 bits (GptConfig::f16Grads).
  bool halfGrads() const { return codegen::isHalf(gemmOperand()) && config.f16Grads; }
  // The kind in which the GEMMs before a norm read the residual stream's gradient: the norm's backward
  // writes that 16-bit copy beside dx (GptConfig::normHalfGrads), F32 for none.
  autograd::DType residualGrad() const {
    return mixed() && config.normHalfGrads ? half() : autograd::DType::F32;
  }
};

// x [rows, C] -> norm(x) with the configured kind (beta unused for RMSNorm), stored as `out`.
Tensor norm(Tape& tape, const GptConfig& config, const Tensor& x, const Tensor& gamma, const Tensor& beta,
            autograd::DType out = autograd::DType::F32, autograd::DType dxHalf = autograd::DType::F32);
// GEMM input in the configured precision (a 16-bit copy in Mixed and BF16 mode; x itself when already
// 16-bit). Casting first beats letting the coop GEMM round f32 operands as it stages them (roundTo): on the
// H100 the single-stage kernel's doubled loads cost more than the casts (GPT-2 small mixed 157K -> 142K
// tokens/s, f31dbe4).
Tensor gemmInput(Tape& tape, const BlockShape& s, const Tensor& x);
// Causal multi-head (grouped-query) self-attention of h [B*T, C], including the output projection.
Tensor attention(Tape& tape, const BlockShape& s, const BlockWeights& w, const Tensor& h);
// The MLP (GELU or SwiGLU) of h [B*T, C].
Tensor mlp(Tape& tape, const BlockShape& s, const BlockWeights& w, const Tensor& h);
// The residual stream between blocks: x, plus a term `delta` that the next norm adds to it in its own forward
// kernel (GptConfig::residualNorms); delta empty: x alone.
struct Stream {
  Tensor x, delta;
};
// norm(in.x + in.delta) with the configured kind: {the stream's value (the sum, or x), the normed}.
autograd::AddNorm normStream(Tape& tape, const GptConfig& config, const Stream& in, const Tensor& gamma,
                             const Tensor& beta, autograd::DType out, autograd::DType dxHalf);
// Pre-norm block on the stream: x1 = x + attn(norm1(x)) (the add inside norm2's kernel), returned as
// {x1, mlp(norm2(x1))} with its last residual add left to the next norm.
Stream blockStream(Tape& tape, const BlockShape& s, const BlockWeights& w, const Stream& in);
// Pre-norm block: x + attn(norm1(x)), then + mlp(norm2(.)).
Tensor block(Tape& tape, const BlockShape& s, const BlockWeights& w, const Tensor& x);
// The same block with its attention half (x + attn(norm1(x))) checkpointed: recomputed in the backward.
Tensor blockRecomputingAttention(Tape& tape, const BlockShape& s, const BlockWeights& w, const Tensor& x);

} // namespace helios::model::detail
