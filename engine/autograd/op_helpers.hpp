#pragma once
// What the autograd ops (ops_*.cpp) share: argument checks, gradient sinks and targets for kernels that
// always write, the bias-gradient column sums. Internal to engine/autograd.
#include <cstdint>

#include "engine/autograd/tape.hpp"

namespace helios::autograd {
struct LoraTerm;
}

namespace helios::autograd::detail {

void requireF32(const char* op, const Tensor& t);
void requireSameCount(const char* op, const Tensor& a, const Tensor& b);
uint32_t lastDim(const Tensor& t);

// A sink when the tensor needs a gradient, else a throwaway temporary (ops that always write every output).
struct MaybeSink {
  Tape::Sink sink;
  bool commit = false;
};
MaybeSink sinkOrScratch(Tape& tape, const Tensor& t);
void finish(Tape& tape, const Tensor& t, const MaybeSink& s);
// For kernels that can accumulate: t's target, or a throwaway temporary when t needs no gradient.
Tape::Target targetOrScratch(Tape& tape, const Tensor& t);

// Column sums of dy [rows, cols] (of dyType: f32 or 16-bit) into t's gradient (bias gradients),
// deterministic: ops::columnSum. A 1 x rows x cols GEMM with a ones vector did this before and ran a 128x128
// tile for one row of output (9% of a char-model step on the H100).
void columnSumInto(Tape& tape, const Tensor& t, vk::BufferRange dy, uint32_t rows, uint32_t cols,
                   DType dyType = DType::F32);

// x has no gradient yet: a producer may hand it over in 16 bits (Tape::passGradHalf).
bool gradStillEmpty(const Tensor& x);

// C = alpha op(A) op(B) + beta C with A and B of storage `type` and C of storage `out` (one GEMM, batch 1).
void gemm(ops::Executor& exec, vk::BufferRange a, vk::BufferRange b, vk::BufferRange c, uint32_t M,
          uint32_t N, uint32_t K, bool transA, bool transB, DType type, DType out, float alpha = 1.0f,
          float beta = 0.0f);

// y += the LoRA term's product (ops_lora.cpp; linear() with LinearOptions::lora): x [rows, in] is the linear
// layer's input, y [rows, out] its output, given a gradient slot when the adapter needs one.
void addLora(Tape& tape, const Tensor& x, Tensor& y, const LoraTerm& term);

} // namespace helios::autograd::detail
