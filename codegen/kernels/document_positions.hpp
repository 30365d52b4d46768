#pragma once
// Positions inside documents, for sequence packing: sequences of `T` tokens hold documents that each end
// with the end-of-text token, so token t of a sequence belongs to the document that starts after the last
// end-of-text token before it (or at the sequence's start), and its position restarts there:
//   pos[t] = t % T - start(t),  start(t) = 1 + max{u < t % T : ids[seq * T + u] == eot}, else 0.
// The causal attention over packed sequences lets query q see keys q - pos[q] .. q (softmax.hpp), and the
// learned position embedding is gathered at pos.
//   Bindings: 0 ids (tokens int32, read), 1 pos (tokens int32, write). Push: {uint tokens, uint T, int eot}.
//   Grid: one invocation per token, grid-stride; each scans its sequence's prefix (O(T), like a score row).
#include <cstdint>
#include <string>

#include "codegen/kernel.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

struct DocumentPositionsParams {
  uint32_t localSize = 256;
  std::string cacheKey() const; // "document_positions:wg256"
};

Kernel generateDocumentPositions(const DocumentPositionsParams& p);
void registerDocumentPositions(KernelRegistry& registry);

} // namespace helios::codegen
