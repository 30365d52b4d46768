#pragma once
// Chat data as the trainer's batches: JSONL files read (chat_data.hpp), the examples split into training
// and evaluation sets, each packed into sequences (chat_pack.hpp). Training batches walk the training
// sequences epoch by epoch, each epoch in its own seeded order: every example once per epoch. The state is
// the count of sequences drawn so far (one word, as BatchSource asks). Evaluation batch i holds the
// evaluation sequences from i * rows on, wrapping around when there are fewer than the evaluation asks for.
#include "engine/train/batch_source.hpp"
#include "engine/train/chat_pack.hpp"

#include <memory>
#include <string>

namespace helios::train {

class ChatLoader final : public BatchSource {
public:
  // Throws std::invalid_argument when `train` has no sequence.
  ChatLoader(PackedChat train, PackedChat eval, uint64_t seed);
  uint32_t seqLen() const override { return train_.T; }
  uint64_t trainTokens() const override { return train_.exampleTokens; }
  uint64_t valTokens() const override { return eval_.exampleTokens; }
  bool hasPositions() const override { return true; }
  bool masksTargets() const override { return true; }
  void nextTrain(uint32_t rows, Batch& out, Shard shard = {}) override;
  void valBatch(uint32_t index, uint32_t rows, Batch& out, Shard shard = {}) const override;
  uint64_t state() const override { return drawn_; }
  void setState(uint64_t s) override { drawn_ = s; }
  const PackedChat& train() const { return train_; }
  const PackedChat& eval() const { return eval_; }

private:
  size_t sequence(uint64_t k); // the k-th training sequence drawn
  PackedChat train_, eval_;
  uint64_t seed_ = 0, drawn_ = 0;
  uint64_t epoch_ = ~0ull;    // the epoch order_ holds
  std::vector<size_t> order_; // this epoch's order of the training sequences
};

// Where chat data comes from and how it is read (TrainConfig's chat keys).
struct ChatDataConfig {
  std::string train, eval; // JSONL files; eval "": the last evalFraction of the examples, seeded shuffle
  double evalFraction = 0.1;
  bool skipBadLines = false;
  uint32_t seqLen = 0;
  uint64_t seed = 0;
};

struct ChatData {
  std::unique_ptr<ChatLoader> loader;
  ChatFileStats trainFile, evalFile; // evalFile.path empty: held out of the training file
  uint64_t trainExamples = 0, evalExamples = 0;
  uint64_t hash = 0; // of the files' bytes and how they were rendered and split (a resume must match)
  nlohmann::ordered_json toJson() const; // the counts, for the run's metrics
};

// Reads, renders, splits and packs; throws (naming the file, and line where one is at fault) on bad data, and
// when no example is left for training or for a requested evaluation split.
ChatData openChatData(const ChatDataConfig& config, const ChatRenderer& renderer, int32_t padId);

} // namespace helios::train
