#pragma once
// Elementwise ops over flat buffers (codegen/kernels/elementwise.hpp): binary with optional broadcast of the
// second operand along the last axis, scale, axpy, activations and their backward, casts, fill, copy.
// Sizes are element counts; every buffer range must hold at least that many elements of its type (a range
// of size 0 means "whole buffer" and is not checked), else std::invalid_argument names the operand.
// Outputs may alias inputs of the same size (in place). n == 0 records nothing. n must be < 2^31.
#include "codegen/kernels/elementwise.hpp"
#include "engine/ops/elem_support.hpp"
#include "engine/ops/executor.hpp"

#include <cstdint>
#include <span>

namespace helios::ops {

using codegen::Elem;

enum class BinaryOp : uint8_t { Add, Sub, Mul };
enum class Activation : uint8_t { Gelu, Silu, Relu };

// out = a op b, n elements each.
void binary(Executor& exec, BinaryOp op, vk::BufferRange a, vk::BufferRange b, vk::BufferRange out,
            uint32_t n, Elem type = Elem::F32);
// out[r, c] = a[r, c] op b[c]: a and out hold rows*cols, b holds cols.
void binaryBroadcast(Executor& exec, BinaryOp op, vk::BufferRange a, vk::BufferRange b, vk::BufferRange out,
                     uint32_t rows, uint32_t cols, Elem type = Elem::F32);
inline void add(Executor& e, vk::BufferRange a, vk::BufferRange b, vk::BufferRange out, uint32_t n,
                Elem t = Elem::F32) {
  binary(e, BinaryOp::Add, a, b, out, n, t);
}
inline void sub(Executor& e, vk::BufferRange a, vk::BufferRange b, vk::BufferRange out, uint32_t n,
                Elem t = Elem::F32) {
  binary(e, BinaryOp::Sub, a, b, out, n, t);
}
inline void mul(Executor& e, vk::BufferRange a, vk::BufferRange b, vk::BufferRange out, uint32_t n,
                Elem t = Elem::F32) {
  binary(e, BinaryOp::Mul, a, b, out, n, t);
}
// out[r, c] = x[r, c] + bias[c].
inline void biasAdd(Executor& e, vk::BufferRange x, vk::BufferRange bias, vk::BufferRange out, uint32_t rows,
                    uint32_t cols, Elem t = Elem::F32) {
  binaryBroadcast(e, BinaryOp::Add, x, bias, out, rows, cols, t);
}

// out = alpha * x.
void scale(Executor& exec, vk::BufferRange x, vk::BufferRange out, uint32_t n, float alpha,
           Elem type = Elem::F32);
// y += alpha * x (gradient accumulation).
void axpy(Executor& exec, float alpha, vk::BufferRange x, vk::BufferRange y, uint32_t n,
          Elem type = Elem::F32);
// y += alpha * (x[0..n) + x[n..2n) + ... ) over `slices` slices of x (slices * n < 2^31): partial sums folded
// into y in one pass.
void axpySlices(Executor& exec, float alpha, vk::BufferRange x, uint32_t slices, vk::BufferRange y,
                uint32_t n, Elem type = Elem::F32);

// out = f(x); GELU is the tanh form.
void activation(Executor& exec, Activation act, vk::BufferRange x, vk::BufferRange out, uint32_t n,
                Elem type = Elem::F32);
// out = f(x) rounded to the 16-bit kind `half` (x f32): the activation and the cast to a GEMM's 16-bit
// operand in one pass.
void activationToHalf(Executor& exec, Activation act, vk::BufferRange x, vk::BufferRange out, uint32_t n,
                      Elem half);
// dx = dy * f'(x); dx may alias dy.
void activationBackward(Executor& exec, Activation act, vk::BufferRange x, vk::BufferRange dy,
                        vk::BufferRange dx, uint32_t n, Elem type = Elem::F32);
// The same with dx rounded to `half` (x, dy f32): the gradient a GEMM with 16-bit operands reads, without a
// cast.
void activationBackwardToHalf(Executor& exec, Activation act, vk::BufferRange x, vk::BufferRange dy,
                              vk::BufferRange dxHalf, uint32_t n, Elem half);

// dst = src converted, n elements, between f32 and a 16-bit kind: round to nearest even (f32 -> f16, whose
// overflow gives inf; f32 -> bf16, NaN kept quiet) and exact widening (f16 or bf16 -> f32).
void cast(Executor& exec, vk::BufferRange src, vk::BufferRange dst, uint32_t n, Elem from, Elem to);

// out = value (converted to the storage type).
void fill(Executor& exec, vk::BufferRange out, uint32_t n, float value, Elem type = Elem::F32);
// dst = src, bit-exact.
void copy(Executor& exec, vk::BufferRange src, vk::BufferRange dst, uint32_t n, Elem type = Elem::F32);

// Any variant, bindings in the kernel's order (codegen/kernels/elementwise.hpp); checks only the binding
// count and 16-bit support. maxGroups caps the workgroup count (0: min(device limit, 65535)); the kernel's
// grid-stride loop covers the rest, so a small cap is how tests exercise that loop.
void elementwise(Executor& exec, const codegen::ElementwiseParams& params, std::span<const Binding> bindings,
                 const codegen::ElementwisePush& push, uint32_t maxGroups = 0);

// Workgroup count for a 1-D grid-stride kernel: ceil(n / localSize), capped at maxGroups (0: the default
// cap).
uint32_t gridStrideGroups(const vk::Context& ctx, uint64_t n, uint32_t localSize, uint32_t maxGroups = 0);

} // namespace helios::ops
