#pragma once
// Embedding lookup (gather) and its deterministic backward (scatter-add), int32 ids. Tables are f32, or f16 /
// bf16 for the gather (bf16 parameters, a frozen LoRA base: widened exactly; the gradient stays f32).
//
// Gather: out[t, :] = table[ids[t], :]; an id outside [0, vocab) gives a row of zeros.
//   Bindings: 0 table (vocab*dim, read), 1 ids (tokens, int32, read), 2 out (tokens*dim, write).
//   Grid: x strides over columns, y over tokens (both grid-stride loops).
//
// Backward: dTable[ids[t], :] += dOut[t, :] for every token t, with no float atomics, so the result is
// bit-identical from run to run: the tokens are cut into segments of `segment` (push `pad`), each id's
// tokens summed in token order within a segment, then those sums added in segment order. Three kernels;
// workspace: next (tokens uint32), heads (segments * vocab uint32, zeroed by the op first), partials
// (tokens * dim f32).
//   Link (one invocation per token, grid-stride): next[t] = the next token of t's segment with the same id
//     (0xffffffff if none); a token with no earlier one of its id in its segment is that id's head there:
//     heads[segment, id] = t + 1. Both scans stay inside the segment. Bindings: 0 ids, 1 next, 2 heads.
//   Accumulate (x: columns, y: tokens, both grid-stride): for each head t, partials[t, j] = the sum of
//     dOut[s, j] over its chain. Bindings: 0 dOut, 1 ids, 2 next, 3 heads, 4 partials.
//   Combine (x: columns, y: tokens): for each head in the first segment holding its id, dTable[id, j] += the
//     partials of every segment's head of that id, in segment order; exactly one invocation writes each (id,
//     column). Bindings: 0 ids, 1 heads, 2 partials, 3 dTable (read-write).
//   The serial parts are bounded by the segment (a chain walk, the link scans) and by the segment count (the
//   combine), whatever the ids: a byte-level GPT-2 (256 ids, a few thousand spaces per step) no longer walks
//   one chain per id across the whole batch. Rows whose id does not occur are untouched (the op clears dTable
//   first unless accumulating).
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

#include "codegen/elem.hpp"
#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

enum class EmbeddingKernel : uint8_t { Gather, Link, Accumulate, SegmentSums, Combine };
const char* toString(EmbeddingKernel k);

struct EmbeddingPush {
  uint32_t tokens = 0, dim = 0, vocab = 0, pad = 0;
};
static_assert(isPushBlock<EmbeddingPush>);

inline constexpr uint32_t kEmbeddingChainEnd = 0xffffffffu;
inline constexpr uint32_t kEmbeddingSmallVocab = 128; // SegmentSums keeps this many sums per invocation

struct EmbeddingParams {
  EmbeddingKernel kernel = EmbeddingKernel::Gather;
  uint32_t localSize = 256;
  Elem table = Elem::F32;       // Gather: the table's storage (f32, f16 or bf16)
  std::string cacheKey() const; // "embedding:gather:f32:wg256" ("...:bf16:..." for a bf16 table)
};

Kernel generateEmbedding(const EmbeddingParams& p);
void registerEmbedding(KernelRegistry& registry);

} // namespace helios::codegen
