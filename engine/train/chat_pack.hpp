#pragma once
// Chat examples packed into training sequences of T tokens. An example of n ids is one document of n - 1
// inputs (ids 0 .. n-2), each predicting the next id; a target is kept where that id is trained (the
// assistant's content and end-of-turn token) and is -1 (ignored by the loss) elsewhere, so no target
// crosses into another example. Documents are placed best-fit decreasing (the longest first, each into the
// sequence it leaves the least room in), deterministic for given examples; what no document fills is
// padding: `padId` tokens with ignored targets, a document of its own. Positions restart at 0 with every
// document (GPU attention stays inside documents: ops::AttentionShape::documentPositions).
#include "engine/train/chat_data.hpp"

#include <cstdint>
#include <vector>

namespace helios::train {

struct PackedChat {
  uint32_t T = 0;
  std::vector<int32_t> tokens, targets, positions; // count() x T each
  std::vector<uint32_t> trained;                   // per sequence: its targets inside the vocabulary
  uint64_t exampleTokens = 0;                      // inputs of examples (not padding)
  uint64_t examples = 0;
  size_t count() const { return trained.size(); }
};

// Every example must have 2 to T + 1 ids (chat_data.hpp drops longer ones); throws std::invalid_argument
// otherwise.
PackedChat packChat(const std::vector<ChatExample>& examples, uint32_t T, int32_t padId);

} // namespace helios::train
