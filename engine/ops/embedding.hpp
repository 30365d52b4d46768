#pragma once
// Token embedding (codegen/kernels/embedding.hpp): f32 table (vocab x dim), int32 ids (tokens).
// Sizes are validated against the buffer ranges (a range of size 0 means "whole buffer", unchecked);
// mismatches throw std::invalid_argument naming the operand.
#include "engine/ops/executor.hpp"

#include <cstdint>

namespace helios::ops {

// out[t, :] = table[ids[t], :]; an id outside [0, vocab) gives a row of zeros.
void embedding(Executor& exec, vk::BufferRange table, vk::BufferRange ids, vk::BufferRange out,
               uint32_t tokens, uint32_t vocab, uint32_t dim);

// Bytes of scratch embeddingBackward needs (2 x tokens uint32: chain links and head flags).
inline uint64_t embeddingBackwardWorkspaceBytes(uint32_t tokens) {
  return 8ull * tokens;
}

// dTable[ids[t], :] += dOut[t, :] for every token, summed in token order without float atomics:
// deterministic (bit-identical across runs). accumulate = false first clears dTable (vocab x dim);
// accumulate = true adds into it (gradient accumulation, tied weights) and leaves rows no token uses
// untouched. Tokens with an id outside [0, vocab) contribute nothing. Records 3 dispatches (4 when clearing).
void embeddingBackward(Executor& exec, vk::BufferRange ids, vk::BufferRange dOut, vk::BufferRange dTable,
                       vk::BufferRange workspace, uint32_t tokens, uint32_t vocab, uint32_t dim,
                       bool accumulate = false);

} // namespace helios::ops
