#pragma once
// Elementwise kernels: one generator, an enum of ops. Every variant is a grid-stride loop over n elements
// (i = GlobalInvocationId.x; i < n; i += NumWorkgroups.x * localSize), so any element count works with
// any workgroup count (maxComputeWorkGroupCount[0] may be 65535).
//
// Bindings (set 0) by op kind; every buffer is decorated Aliased, so an output may alias an input
// (in place) wherever the element index is the same (not with the broadcast operand b):
//   Add, Sub, Mul           0 a (n, read)   1 b (n, or cols when broadcast, read)   2 out (n, write)
//   Scale                   0 x (read)      1 out (write)                            out = alpha * x
//   Gelu, Silu, Relu        0 x (read)      1 out (write)
//   *Backward               0 x (read)      1 dy (read)   2 dx (write)               dx = dy * f'(x)
//   Axpy                    0 x (read)      1 y (read-write)     y += alpha * sum_{s < cols} x[s*n + i]
//                           (cols = 1: the plain axpy; more: the sum of `cols` slices of n, e.g. split-K)
//   CastF32ToF16            0 x (f32, read) 1 out (f16, write)
//   CastF16ToF32            0 x (f16, read) 1 out (f32, write)
//   Fill                    0 out (write)                                            out = alpha
//   Copy                    0 x (read)      1 out (write)                            bit-exact
// Push constants: ElementwisePush {uint n; uint cols; float alpha; uint pad;} (16 bytes, every variant).
// `type` is the storage type of every buffer of the math ops, fill and copy; math is always done in f32
// (F16 storage converts on load and store). Casts have fixed types and require type == F32.
// GELU is the tanh form, evaluated as x * sigmoid(2u) (= 0.5 x (1 + tanh u), u = sqrt(2/pi)(x + 0.044715
// x^3)), which cannot overflow to NaN for large |x|.
#include <cstdint>
#include <string>

#include "codegen/kernel.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

enum class EwOp : uint8_t {
  Add,
  Sub,
  Mul,
  Scale,
  Axpy,
  Gelu,
  Silu,
  Relu,
  GeluBackward,
  SiluBackward,
  ReluBackward,
  CastF32ToF16,
  CastF16ToF32,
  Fill,
  Copy,
};
const char* toString(EwOp op);

enum class EwType : uint8_t { F32, F16 };
const char* toString(EwType t);

// Number of storage buffers the op's kernel binds (see the table above).
uint32_t ewNumBuffers(EwOp op);

struct ElementwisePush {
  uint32_t n = 0;    // element count
  uint32_t cols = 1; // broadcast period (Add/Sub/Mul with broadcast: b[i % cols]); Axpy: slices of x
  float alpha = 0;   // Scale / Axpy factor, Fill value
  uint32_t pad = 0;
};

struct ElementwiseParams {
  EwOp op = EwOp::Add;
  EwType type = EwType::F32;
  bool broadcast = false; // Add/Sub/Mul only: b has `cols` elements, reused for every row
  uint32_t localSize = 256;
  // The output in f16 while the inputs stay in `type` = F32 (math ops only): the producer of a GEMM's f16
  // operand writes it directly instead of leaving a cast to a separate kernel.
  bool outF16 = false;
  // Four elements per step as 4-vectors (vec4 / f16vec4): n and the broadcast period then count vectors
  // (Axpy's slice count does not change). ops::elementwise takes it where the sizes divide by 4 and every
  // range is 16-byte aligned: fewer, wider memory accesses for the same arithmetic.
  bool vec4 = false;
  std::string cacheKey() const; // "ew:add:f32:bcast:wg256" (":f16out", ":v4")
};

// Throws std::invalid_argument for inconsistent parameters (broadcast on a non-binary op, a cast with
// type != F32, outF16 on anything but a math op on F32, a local size that is not a power of two in
// [32, 1024]).
Kernel generateElementwise(const ElementwiseParams& p);
void registerElementwise(KernelRegistry& registry);

} // namespace helios::codegen
