#pragma once
// Fused softmax cross-entropy with logits, along the last axis (f32 or f16 logits, int32 targets, row-major):
//   loss[r]       = logsumexp(logits[r, :]) - logits[r, t],  t = targets[r]
//   dlogits[r, j] = (softmax(logits[r, :])[j] - (j == t)) * gradScale
// Ignore-index convention: a target outside [0, vocab) (e.g. -1 or -100 for padding) gives loss[r] = 0 and
// dlogits[r, :] = 0, so such rows contribute nothing to the loss or the gradient.
// Bindings: 0 logits (read), 1 targets (int32, read), 2 loss (write), 3 dlogits (write).
// Push: CrossEntropyPush {rows, vocab, gradScale}. One workgroup per row (2-D grid, see rowIndex()); the
// columns are looped over (online max/sum in one read pass, then one write pass), so any vocab works
// (GPT-2's 50304 included).
#include <cstdint>
#include <string>

#include "codegen/elem.hpp"
#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/kernels/row_reduce.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

// Push constants: the op fills these, the generator declares them (push_block.hpp).
struct CrossEntropyPush {
  uint32_t rows = 0, vocab = 0;
  float gradScale = 1;
};
static_assert(isPushBlock<CrossEntropyPush> && sizeof(CrossEntropyPush) == 12);

struct CrossEntropyParams {
  uint32_t localSize = 256;
  ReduceStrategy strategy = ReduceStrategy::Subgroup;
  // logits and dlogits in f32 or a 16-bit kind (the math stays f32): a mixed-precision head's logits are
  // read and its gradient written at half the bytes, and the gradient is the 16-bit operand its GEMMs take.
  Elem logits = Elem::F32;
  // Logits and dlogits read and written as 4-vectors (vocab % 4 == 0, 16-byte aligned ranges; the op
  // decides): wider accesses, and the online max/sum takes one rescale per 4 logits.
  bool vec4 = false;
  std::string cacheKey() const; // "cross_entropy:f32:i32:wg256:subgroup" ("cross_entropy:bf16:...", ":v4")
};

Kernel generateCrossEntropy(const CrossEntropyParams& p);
void registerCrossEntropy(KernelRegistry& registry);

} // namespace helios::codegen
