#pragma once
// The sizes of a matmul and of an attention from their operands' shapes, checked: what the library's tensors
// (api/ops.cpp) and helios-run's .npy arrays (tools/helios_run) both start from. Errors are
// std::invalid_argument, prefixed by `who` ("helios::matmul: ...") where it is not empty, naming the shapes
// that disagree.
#include "engine/ops/attention.hpp"
#include "engine/ops/matmul.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace helios::ops {

// A [M, K] x B [K, N] -> [M, N], or batches: [batch, M, K] x [batch, K, N] with either side 2-D (or of batch
// 1) shared by the batch. A is stored K x M where transA, B N x K where transB.
struct MatmulSizes {
  MatmulArgs args; // M, N, K, batch, transA, transB and the batch strides; nothing else set
  std::vector<uint64_t> outShape;
};
MatmulSizes matmulSizes(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b, bool transA,
                        bool transB, std::string_view who = {});

// q [batch, heads, Tq, D], k and v [batch, kvHeads, Tk, D] with heads a multiple of kvHeads; scale 0 is
// 1 / sqrt(D). The kernel and the storage types are left as AttentionShape's defaults.
AttentionShape attentionSizes(const std::vector<uint64_t>& q, const std::vector<uint64_t>& k,
                              const std::vector<uint64_t>& v, bool causal, float scale,
                              std::string_view who = {});

} // namespace helios::ops
