#pragma once
// Autograd ops: each dispatches its forward kernels now and, when the tape records and an input needs a
// gradient, pushes a closure with its backward kernels. Shapes are row-major; "rows x cols" ops work along
// the last axis. All f32 unless stated; 16-bit tensors (f16 or bf16) are GEMM and attention operands (cast())
// and, with 16-bit parameters, the weights themselves.
#include "engine/autograd/tape.hpp"
#include "engine/ops/attention.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/rope.hpp"
#include "engine/ops/softmax.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

namespace helios::autograd {

// f32 <-> f16 or bf16 copy (rounded to nearest even; widened exactly). The result shares x's gradient slot
// (gradients stay f32), so no backward is needed.
Tensor cast(Tape& tape, const Tensor& x, DType to);

// C[b] = alpha * op(A[b]) * op(B[b]) (+ bias[n]) for b < batch, dense batches; A and B both f32 or both of
// one 16-bit kind (then the backward casts dC to it for its GEMMs), C shaped [batch * M, N]. op(A): M x K
// (A stored K x M when transA); op(B): K x N (B stored N x K when transB, i.e. a PyTorch Linear weight).
// gelu: fused GELU epilogue, forward only (a recording tape with gradients throws; use activation()).
struct MatmulSpec {
  uint32_t M = 0, N = 0, K = 0, batch = 1;
  bool transA = false, transB = false;
  float alpha = 1.0f;
  bool gelu = false;
  // F16 or BF16: f32 operands multiplied as that kind with f32 accumulation, in the forward and both
  // gradient GEMMs (mixed precision without cast kernels; ops::MatmulArgs::roundTo).
  DType roundTo = DType::F32;
  // C's storage (f32 accumulation either way; a bias is stored like C): a 16-bit kind e.g. for a
  // mixed-precision head's logits, whose gradient the cross-entropy then hands back in that kind
  // (Tape::passGradHalf) for the backward GEMMs to take as it is.
  DType out = DType::F32;
  // 16-bit operands: dA is written in their kind and handed back with Tape::passGradHalf when it is A's
  // first gradient (an A whose only reader is this GEMM, e.g. a 16-bit activation: its backward then runs on
  // 16 bits).
  bool halfGradA = false;
};
Tensor matmul(Tape& tape, const Tensor& a, const Tensor& b, const MatmulSpec& spec,
              const Tensor* bias = nullptr);

// A LoRA adapter on a linear layer (engine/model/lora_sites.hpp): y += scale * dropout(x) A^T Bblock^T. A
// [parts * rank, in] stacks the parts' A matrices, B [rows of all parts, rank] their B matrices; part p adds
// to the layer's output rows [row, row + rows) through A's rows [p rank, (p + 1) rank) and B's rows from
// bRow. A and B are parameters (their f16 copies in mixed precision, sharing the gradient slots), stored like
// x. Dropout (0 = none) draws its mask from `counter` (one uint on the device) and `stream`
// (ops/dropout.hpp).
struct LoraPartRows {
  uint32_t row = 0, rows = 0, bRow = 0;
};
struct LoraTerm {
  Tensor a, b;
  std::vector<LoraPartRows> parts;
  uint32_t rank = 0;
  float scale = 1;
  float dropout = 0;
  vk::BufferRange counter;
  uint32_t stream = 0;
};

// How linear() multiplies (each a MatmulSpec field of the same name, and an adapter).
struct LinearOptions {
  bool gelu = false;          // the fused GELU epilogue (forward only)
  DType roundTo = DType::F32; // f32 operands multiplied as this 16-bit kind
  DType out = DType::F32; // y's storage; an f32 bias is cast to a 16-bit copy first (its gradient flows back)
  bool halfGradA = false; // x's gradient handed back in the operands' 16-bit kind
  // A LoRA adapter whose product is added to y (small GEMMs after the layer's own; not with gelu). Null:
  // none.
  const LoraTerm* lora = nullptr;
};

// y = x * W^T + bias for x [rows, in] and W [out, in] (PyTorch Linear). bias may be null.
Tensor linear(Tape& tape, const Tensor& x, const Tensor& w, const Tensor* bias,
              const LinearOptions& options = {});

// y = a + b (same element count; the shape of a).
Tensor add(Tape& tape, const Tensor& a, const Tensor& b);
// y[r, c] = x[r, c] + b[c] for x [rows, cols] (cols = b's element count).
Tensor addBroadcast(Tape& tape, const Tensor& x, const Tensor& b);
// y = a * b elementwise.
Tensor mul(Tape& tape, const Tensor& a, const Tensor& b);
// y = act(x) (GELU tanh form, SiLU, ReLU). out = F16 or BF16: y rounded to that kind in the same pass (for
// a GEMM's operand: no separate cast); its gradient stays f32 and the backward reads only x. halfGrad: x's
// gradient is handed back in out's kind (Tape::passGradHalf) when it is x's first, for an x whose only
// reader is this op and whose producer takes 16-bit gradients (a GEMM with 16-bit operands: no cast, and its
// bias sums read them). A 16-bit x (out the same kind): everything in 16 bits, y's gradient read in 16 bits
// (Tape::gradOfHalf) and x's handed back in 16 bits.
Tensor activation(Tape& tape, ops::Activation act, const Tensor& x, DType out = DType::F32,
                  bool halfGrad = false);

// Along the last axis of x [rows, cols]; gamma/beta [cols]. out = F16 or BF16 as for activation().
// dxHalf = F16 or BF16: the backward also writes x's gradient (after accumulating into it) rounded to that
// kind and keeps it as the gradient's 16-bit copy (Tape::noteHalf): for a residual stream whose gradient the
// GEMMs before it read in 16 bits, no cast pass.
Tensor layerNorm(Tape& tape, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                 DType out = DType::F32, DType dxHalf = DType::F32);
Tensor rmsNorm(Tape& tape, const Tensor& x, const Tensor& gamma, float eps, DType out = DType::F32,
               DType dxHalf = DType::F32);
// sum = a + b, then y = layerNorm(sum) (rmsNorm) in one forward kernel (ops::ResidualAdd): the residual add
// before a pre-norm block's norm. sum's gradient (its later readers', plus the norm's dx) passes to a and b
// as add()'s does. Same values as add() then layerNorm(), bit for bit.
struct AddNorm {
  Tensor sum, y;
};
AddNorm addLayerNorm(Tape& tape, const Tensor& a, const Tensor& b, const Tensor& gamma, const Tensor& beta,
                     float eps, DType out = DType::F32, DType dxHalf = DType::F32);
AddNorm addRmsNorm(Tape& tape, const Tensor& a, const Tensor& b, const Tensor& gamma, float eps,
                   DType out = DType::F32, DType dxHalf = DType::F32);

// out[t, :] = table[ids[t], :] for `tokens` int32 ids; table [vocab, dim] (f32 or bf16, or f16 without a
// gradient: a frozen LoRA base's; out f32).
Tensor embedding(Tape& tape, const Tensor& table, vk::BufferRange ids, uint32_t tokens);

// y (dense, `shape`) [i0, i1, i2, i3] = x[srcOffset + sum ik * srcStrides[k]] (f32). The addressed elements
// of x must be distinct. Backward scatters dy back (accumulating; a full permutation of x overwrites).
// to = F16 or BF16: an f32 x gives a 16-bit y (rounded in the same pass, as for activation()).
Tensor permute(Tape& tape, const Tensor& x, const std::array<uint32_t, 4>& shape, uint32_t srcOffset,
               const std::array<uint32_t, 4>& srcStrides, DType to = DType::F32);

// Several permute() views that together partition x (every element of x in exactly one view, e.g. Q, K and
// V of a packed projection): the same forward, but one backward writes every part of dx directly, without
// zero-filling dx first and accumulating each part into it.
struct PermuteView {
  std::array<uint32_t, 4> shape;
  uint32_t srcOffset = 0;
  std::array<uint32_t, 4> srcStrides;
};
// to = F16 or BF16: the parts are written in that kind from an f32 x (their gradients stay f32). halfGrad:
// x's gradient in `to`, as for activation().
std::vector<Tensor> permuteSplit(Tape& tape, const Tensor& x, const std::vector<PermuteView>& views,
                                 DType to = DType::F32, bool halfGrad = false);

// Rotary embedding of x [rows, headDim] whose row r sits at position r % T (or as `given`: per-token
// positions of packed documents); table: ops::ropeTable(>= T, D).
Tensor rope(Tape& tape, const Tensor& x, vk::BufferRange table, uint32_t headDim, uint32_t T,
            const ops::RopePositions& given = {});

// Softmax along the last axis of x [rows, cols] (options: scale, causal mask).
Tensor softmax(Tape& tape, const Tensor& x, uint32_t rows, uint32_t cols,
               const ops::SoftmaxOptions& options = {});

// Fused attention (ops::attentionForward): q [B, H, Tq, D], k and v [B, Hkv, Tk, D] (f32) -> o like q. The
// scores never reach memory; the backward recomputes them from the saved log-sum-exp.
Tensor attention(Tape& tape, const Tensor& q, const Tensor& k, const Tensor& v,
                 const ops::AttentionShape& shape);

// Fused attention straight from a packed projection: qkv [B T, (H + 2 Hkv) D] (f32 or 16-bit; q heads, then
// k, then v, as one linear layer writes them) -> o [B T, H D], the heads already merged for the output
// projection: no split or merge copies. Tq = Tk = T; coop passes only (ops::AttentionKernel::Coop), which
// read the heads in place. halfOut: o is 16-bit (shape.half's kind) and qkv's gradient is handed back in it.
Tensor attentionPacked(Tape& tape, const Tensor& qkv, const ops::AttentionShape& shape, bool halfOut);

// Fused softmax cross-entropy: returns the per-row loss [rows] (no gradient); the backward hands
// (softmax - onehot) * gradScale to the logits [rows, vocab]. Targets outside [0, vocab) are ignored.
// 16-bit logits are read as they are (the loss math is f32) and their gradient is handed back in their kind.
Tensor crossEntropy(Tape& tape, const Tensor& logits, vk::BufferRange targets, float gradScale);

// The LM head (logits = x W^T, W [vocab, C]) and the cross-entropy in one op over chunks of chunkRows rows:
// each chunk's logits and dlogits are made, and with gradients used up at once (dx rows, dW accumulated), so
// the full [rows, vocab] logits and gradient never exist. Same loss as matmul + crossEntropy; the gradients
// differ only by dW's summation order over the chunks. The logits are stored as x's type when gradients
// flow (the backward GEMMs take dlogits beside W), else as `logits`.
struct HeadLossSpec {
  uint32_t chunkRows = 0; // 0: all rows at once
  DType logits = DType::F32;
};
Tensor headCrossEntropy(Tape& tape, const Tensor& x, const Tensor& w, vk::BufferRange targets,
                        float gradScale, const HeadLossSpec& spec);
// Rows per chunk so that a chunk's 16-bit logits stay within chunkBytes: about equal chunks of a multiple of
// 128 rows (at least 128; all rows when fewer).
uint32_t headChunkRows(uint32_t rows, uint32_t vocab, uint64_t chunkBytes);

// Activation checkpointing: y = fn(tape, x), but only x and y are kept. The forward runs fn on a no-grad tape
// whose temporaries are released right away; the backward re-runs fn on a recording tape into the same
// memory, back-propagates y's gradient through it and releases it again. fn must be deterministic and return
// a tensor shaped like x; parameters it captures keep their (persistent) gradient slots.
Tensor checkpoint(Tape& tape, const Tensor& x, const std::function<Tensor(Tape&, const Tensor&)>& fn);

} // namespace helios::autograd
