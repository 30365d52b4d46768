#pragma once
// Positions inside documents, for sequence packing: sequences of `T` tokens hold documents that each end
// with the end-of-text token, so token t of a sequence belongs to the document that starts after the last
// end-of-text token before it (or at the sequence's start), and its position restarts there:
//   pos[t] = t % T - start(t),  start(t) = 1 + max{u < t % T : ids[seq * T + u] == eot}, else 0.
// The causal attention over packed sequences lets query q see keys q - pos[q] .. q (softmax.hpp), and the
// learned position embedding is gathered at pos.
//   Bindings: 0 ids (tokens int32, read), 1 pos (tokens int32, write). Push: DocumentPositionsPush.
//   Grid: one invocation per token, grid-stride; each scans its sequence's prefix (O(T), like a score row).
#include <cstdint>
#include <string>

#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

// Push constants: the op fills these, the generator declares them (push_block.hpp).
struct DocumentPositionsPush {
  uint32_t tokens = 0, T = 0; // all sequences' tokens, tokens per sequence
  int32_t eot = 0;            // the end-of-text id
};
static_assert(isPushBlock<DocumentPositionsPush> && sizeof(DocumentPositionsPush) == 12);

struct DocumentPositionsParams {
  uint32_t localSize = 256;
  std::string cacheKey() const; // "document_positions:wg256"
};

Kernel generateDocumentPositions(const DocumentPositionsParams& p);
void registerDocumentPositions(KernelRegistry& registry);

} // namespace helios::codegen
