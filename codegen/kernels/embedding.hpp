#pragma once
// Embedding lookup (gather) and its deterministic backward (scatter-add), f32 tables, int32 ids.
//
// Gather: out[t, :] = table[ids[t], :]; an id outside [0, vocab) gives a row of zeros.
//   Bindings: 0 table (vocab*dim, read), 1 ids (tokens, int32, read), 2 out (tokens*dim, write).
//   Grid: x strides over columns, y over tokens (both grid-stride loops).
//
// Backward: dTable[ids[t], :] += dOut[t, :] for every token t, in token order, with no float atomics, so
// the result is bit-identical from run to run. Two kernels and a workspace of 2*tokens uint32:
//   Link (one invocation per token, grid-stride): next[t] = the smallest s > t with ids[s] == ids[t]
//     (0xffffffff if none), and hasPrev[s] = 1 for that s. hasPrev (workspace[tokens..2*tokens)) must be
//     zero before the kernel runs (the op clears it). Afterwards each distinct id owns exactly one
//     chain of tokens, in increasing order, starting at its first occurrence (hasPrev == 0).
//     Bindings: 0 ids (read), 1 workspace (read-write).
//   Accumulate (x: columns, y: tokens, both grid-stride): for a chain head t with an id in range, every
//     column j walks the chain in token order: acc = dTable[id, j]; acc += dOut[s, j] for s in the chain;
//     dTable[id, j] = acc. Exactly one invocation writes each (id, column), so no atomics are needed.
//     Bindings: 0 dOut (tokens*dim, read), 1 ids (read), 2 workspace (read), 3 dTable (vocab*dim,
//     read-write).
//   Cost for V=50304, T=16384, D=768: Link reads ids (64 KiB, cache-resident) with an early-exit forward
//   scan, O(T) per token at worst (tokens that occur once); Accumulate reads dOut once (T*D floats) and
//   reads/writes only the rows that occur (distinct*D floats), with distinct*D-way parallelism. The only
//   serial part is a chain walk per frequent id (length = its count), which is short for natural text.
//   Rows whose id does not occur are untouched (the op clears dTable first unless accumulating).
// Small vocabularies (<= kEmbeddingSmallVocab ids: character models, where every id has a chain hundreds of
// tokens long and the walk above is serial) use per-segment sums instead:
//   SegmentSums (x: columns, one invocation each; y: segments of `segment` consecutive tokens):
//     partials[s, id, :] = sum of dOut[t, :] over the tokens t of segment s with that id, in token order,
//     accumulated in shared memory (localSize 32: 16 KiB, what every Vulkan device offers). Bindings: 0 dOut
//     (read), 1 ids (read), 2 partials (segments*vocab*dim, write). The op then sums the partials over
//     segments (ops::columnSum), in segment order.
// Push constants (all): EmbeddingPush {uint tokens; uint dim; uint vocab; uint pad (SegmentSums: segment)}.
#include <cstdint>
#include <string>

#include "codegen/kernel.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

enum class EmbeddingKernel : uint8_t { Gather, Link, Accumulate, SegmentSums };
const char* toString(EmbeddingKernel k);

struct EmbeddingPush {
  uint32_t tokens = 0, dim = 0, vocab = 0, pad = 0;
};

inline constexpr uint32_t kEmbeddingChainEnd = 0xffffffffu;
inline constexpr uint32_t kEmbeddingSmallVocab = 128; // SegmentSums keeps this many sums per invocation

struct EmbeddingParams {
  EmbeddingKernel kernel = EmbeddingKernel::Gather;
  uint32_t localSize = 256;
  std::string cacheKey() const; // "embedding:gather:f32:wg256"
};

Kernel generateEmbedding(const EmbeddingParams& p);
void registerEmbedding(KernelRegistry& registry);

} // namespace helios::codegen
