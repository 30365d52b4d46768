#pragma once
// What the trainer draws its batches from: text windows (DataLoader, data.hpp) or packed chat examples
// (ChatLoader, chat_loader.hpp). Sampling is deterministic from a seed; a source's whole state is one 64-bit
// word, saved in checkpoints, so a resumed run draws exactly the batches the uninterrupted run would have.
#include <cstdint>
#include <vector>

namespace helios::train {

// One rank's part of every batch in data-parallel training: rows [first, first + count) of each micro-batch
// of `batch` rows that one process would draw (dist/shares.hpp). Ranks whose parts tile the micro-batch
// together see exactly the rows of one process, and a source's state after a step depends neither on the
// rank count nor on the shares (a resume may change both). batch 0: the whole batch.
struct Shard {
  uint32_t first = 0, count = 0, batch = 0;
};

// The draws behind a rank's `rows` (whole micro-batches' runs): every rank draws each micro-batch's `batch`
// rows, in the order one process draws them, and keeps its run. Sources walk draws 0 .. count() - 1.
class ShardDraws {
public:
  // Throws std::invalid_argument (naming `who`) unless `rows` is a whole number of runs of shard.count and
  // the run lies inside the micro-batch.
  ShardDraws(uint32_t rows, Shard shard, const char* who);
  uint64_t count() const { return uint64_t(rows_ / shard_.count) * shard_.batch; }
  // Draw i's row among this rank's rows (row j of micro-batch m: m * count + j - first), or -1: another's.
  int64_t row(uint64_t i) const;

private:
  uint32_t rows_;
  Shard shard_;
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
  // This rank's `rows` sequences of the next training batch (rows / shard.count micro-batches); advances the
  // state past every rank's draws (ShardDraws::count()).
  virtual void nextTrain(uint32_t rows, Batch& out, Shard shard = {}) = 0;
  // This rank's rows of validation batch `index` (0, 1, ...): the same rows every time for a given seed,
  // whatever the state.
  virtual void valBatch(uint32_t index, uint32_t rows, Batch& out, Shard shard = {}) const = 0;
  virtual uint64_t state() const = 0;
  virtual void setState(uint64_t s) = 0;
};

} // namespace helios::train
