#pragma once
// Token embedding (codegen/kernels/embedding.hpp): f32 table (vocab x dim), int32 ids (tokens).
// Sizes are validated against the buffer ranges (a range of size 0 means "whole buffer", unchecked);
// mismatches throw std::invalid_argument naming the operand.
#include "codegen/elem.hpp"
#include "engine/ops/executor.hpp"

#include <cstdint>

namespace helios::ops {

// out[t, :] = table[ids[t], :]; an id outside [0, vocab) gives a row of zeros. The table is f32, f16 or bf16
// (tableType; out stays f32, widened exactly).
void embedding(Executor& exec, vk::BufferRange table, vk::BufferRange ids, vk::BufferRange out,
               uint32_t tokens, uint32_t vocab, uint32_t dim, codegen::Elem tableType = codegen::Elem::F32);

// How embeddingBackward sums (codegen/kernels/embedding.hpp): per-segment sums for a small vocabulary (at
// most kEmbeddingSmallVocab ids, the partials within 64 MiB), else per-segment chains (`segments` of
// `segmentTokens` tokens, the heads table within 64 MiB) combined in segment order.
struct EmbeddingBackwardPlan {
  bool segmented = false;
  uint32_t segments = 0, segmentTokens = 0;
};
EmbeddingBackwardPlan embeddingBackwardPlan(uint32_t tokens, uint32_t vocab, uint32_t dim);
// Bytes of scratch embeddingBackward needs: the segment partials and their column-sum scratch, or the chains'
// links (tokens uint32), heads (segments x vocab uint32) and sums (tokens x dim f32).
uint64_t embeddingBackwardWorkspaceBytes(uint32_t tokens, uint32_t vocab, uint32_t dim);

// dTable[ids[t], :] += dOut[t, :] for every token, summed in a fixed order without float atomics:
// deterministic (bit-identical across runs). accumulate = false overwrites dTable (vocab x dim; rows no token
// uses become 0); accumulate = true adds into it (gradient accumulation, tied weights), rows no token uses
// keeping their values. Tokens with an id outside [0, vocab) contribute nothing.
void embeddingBackward(Executor& exec, vk::BufferRange ids, vk::BufferRange dOut, vk::BufferRange dTable,
                       vk::BufferRange workspace, uint32_t tokens, uint32_t vocab, uint32_t dim,
                       bool accumulate = false);

} // namespace helios::ops
