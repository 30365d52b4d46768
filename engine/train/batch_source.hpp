#pragma once
// What the trainer draws its batches from: text windows (DataLoader, data.hpp) or packed chat examples
// (ChatLoader, chat_loader.hpp). Sampling is deterministic from a seed; a source's whole state is one 64-bit
// word, saved in checkpoints, so a resumed run draws exactly the batches the uninterrupted run would have.
#include <cstdint>
#include <vector>

namespace helios::train {

// One rank's part of every batch in data-parallel training: rows index, index + count, ... of the batch one
// process would draw. N ranks at batch B/N together see exactly the rows of one process at batch B, and the
// loader's state after a step does not depend on the rank count (resume may change it).
struct Shard {
  uint32_t index = 0, count = 1;
};

struct Batch {
  std::vector<int32_t> tokens, targets; // rows x seqLen each (this rank's rows)
  // rows x seqLen positions inside packed documents, where the source packs documents (hasPositions());
  // attention then stays inside each document and positions restart with it.
  std::vector<int32_t> positions;
  // Targets inside the vocabulary over the whole batch (every rank's rows): what the mean loss divides by
  // where targets are masked (masksTargets()); otherwise every target counts.
  uint64_t trainedTargets = 0;
};

class BatchSource {
public:
  virtual ~BatchSource() = default;
  virtual uint32_t seqLen() const = 0;
  virtual uint64_t trainTokens() const = 0;
  virtual uint64_t valTokens() const = 0;
  virtual bool hasPositions() const { return false; }
  // Some targets lie outside the vocabulary (ignored by the loss): the mean loss is taken over
  // Batch::trainedTargets instead of every token.
  virtual bool masksTargets() const { return false; }
  // The next training batch of `rows` sequences; advances the state past rows * shard.count draws.
  virtual void nextTrain(uint32_t rows, Batch& out, Shard shard = {}) = 0;
  // Validation batch `index` (0, 1, ...): the same rows every time for a given seed, whatever the state.
  virtual void valBatch(uint32_t index, uint32_t rows, Batch& out, Shard shard = {}) const = 0;
  virtual uint64_t state() const = 0;
  virtual void setState(uint64_t s) = 0;
};

} // namespace helios::train
