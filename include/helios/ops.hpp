#pragma once
// Ops on tensors. Outside a Graph::record they run at once (submitted and waited for); inside one they are
// recorded into the graph. The forms that return a new tensor allocate it; the forms taking `out` write an
// existing one (the only form allowed inside Graph::record, whose replays reuse it).
#include "helios/tensor.hpp"

namespace helios {

struct MatmulOptions {
  bool transposeA = false, transposeB = false; // A stored K x M, B stored N x K
  float alpha = 1.0f, beta = 0.0f;             // out = alpha * A B + beta * out
  DType outType = DType::F32;                  // f16 output needs f16 inputs
};

// A [M, K] x B [K, N] -> [M, N], or batched: [batch, M, K] x [batch, K, N], either side may be 2-D (shared
// across the batch). A and B are both f32 or both f16 (f32 accumulation). Throws std::invalid_argument on
// mismatched shapes or types.
HELIOS_API Tensor matmul(const Tensor& a, const Tensor& b, const MatmulOptions& options = {});
HELIOS_API void matmul(const Tensor& a, const Tensor& b, Tensor& out, const MatmulOptions& options = {});

struct AttentionOptions {
  bool causal = false; // query i sees keys j <= i + Tk - Tq
  float scale = 0;     // scores = scale * q . k; 0: 1 / sqrt(headDim)
};

// softmax(scale q k^T) v per batch and head, fused (the scores never reach memory). f32:
// q [batch, heads, Tq, D], k and v [batch, kvHeads, Tk, D] with heads a multiple of kvHeads -> o like q.
HELIOS_API Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v,
                            const AttentionOptions& options = {});
HELIOS_API void attention(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out,
                          const AttentionOptions& options = {});

} // namespace helios
