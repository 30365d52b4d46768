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
//   Cast                    0 x (`type`)    1 out (`out`, or f32)                      f32 <-> f16 or bf16
//   Fill                    0 out (write)                                            out = alpha
//   Copy                    0 x (read)      1 out (write)                            bit-exact
// Push constants: ElementwisePush {uint n; uint cols; float alpha; uint pad;} (16 bytes, every variant).
// `type` is the storage type of every buffer of the math ops, fill and copy; math is always done in f32
// (16-bit storage widens on load and rounds to nearest even on store; bf16 is held as uint16 bits). A cast
// reads `type` and writes `out` (to a 16-bit kind from f32) or f32 (from a 16-bit kind).
// GELU is the tanh form, evaluated as x * sigmoid(2u) (= 0.5 x (1 + tanh u), u = sqrt(2/pi)(x + 0.044715
// x^3)), which cannot overflow to NaN for large |x|.
#include <cstdint>
#include <string>

#include "codegen/elem.hpp"
#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
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
  Cast,
  Fill,
  Copy,
};
const char* toString(EwOp op);

// Number of storage buffers the op's kernel binds (see the table above).
uint32_t ewNumBuffers(EwOp op);

struct ElementwisePush {
  uint32_t n = 0;    // element count
  uint32_t cols = 1; // broadcast period (Add/Sub/Mul with broadcast: b[i % cols]); Axpy: slices of x
  float alpha = 0;   // Scale / Axpy factor, Fill value
  uint32_t pad = 0;
};
static_assert(isPushBlock<ElementwisePush>);

struct ElementwiseParams {
  EwOp op = EwOp::Add;
  Elem type = Elem::F32;
  bool broadcast = false; // Add/Sub/Mul only: b has `cols` elements, reused for every row
  uint32_t localSize = 256;
  // F16 or BF16: the output in that 16-bit kind while the inputs stay in `type` = F32 (math ops: the
  // producer of a GEMM's 16-bit operand writes it directly instead of leaving a cast to a separate kernel;
  // and casts from f32). F32: the output as `type` (casts from a 16-bit kind: f32).
  Elem out = Elem::F32;
  // Four elements per step as 4-vectors (vec4 / f16vec4): n and the broadcast period then count vectors
  // (Axpy's slice count does not change). ops::elementwise takes it where the sizes divide by 4 and every
  // range is 16-byte aligned: fewer, wider memory accesses for the same arithmetic.
  bool vec4 = false;
  std::string cacheKey() const; // "ew:add:f32:bcast:wg256" (":f16out", ":bf16out", ":v4"; casts
                                // "ew:cast_f32_bf16:f32:...", the types in the op's name)
};

// Throws std::invalid_argument for inconsistent parameters (broadcast on a non-binary op, a cast that is not
// between f32 and a 16-bit kind, a 16-bit `out` on anything but a math op or cast on F32, a local size
// outside [1, 1024]).
Kernel generateElementwise(const ElementwiseParams& p);
void registerElementwise(KernelRegistry& registry);

} // namespace helios::codegen
