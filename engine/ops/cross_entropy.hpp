#pragma once
// Fused softmax cross-entropy with logits along the last axis; kernel: codegen/kernels/cross_entropy.hpp.
// One workgroup per row, looping over the vocabulary (any size, GPT-2's 50304 included).
#include <cstdint>

#include "codegen/kernels/cross_entropy.hpp"
#include "engine/ops/executor.hpp"
#include "engine/ops/reduce.hpp"

namespace helios::ops {

// logits [rows, vocab] f32, targets [rows] int32 -> loss [rows] f32 (logsumexp - logit[target]) and
// dlogits [rows, vocab] f32 = (softmax - onehot(target)) * gradScale (e.g. 1/rows for a mean loss).
// Ignore index: a target outside [0, vocab) (-1, -100, ...) gives that row loss 0 and dlogits 0.
// dlogits may not alias logits. logitsType F16 or BF16: logits and dlogits are that 16-bit kind in memory
// (the math is f32).
void crossEntropy(Executor& exec, vk::BufferRange logits, vk::BufferRange targets, vk::BufferRange loss,
                  vk::BufferRange dlogits, uint32_t rows, uint32_t vocab, float gradScale,
                  RowKernelChoice kernel = {}, codegen::Elem logitsType = codegen::Elem::F32);

} // namespace helios::ops
