#pragma once
// The training loop. Per step (Trainer::step, read it top to bottom):
//   1. apply the step records that are kLag steps old: dynamic loss scaling decides on the host, a few steps
//      behind the GPU, from {finite, scale used} that the GPU wrote (no wait on the current step);
//   2. sample the batch on the host and upload it into one of two host-visible token buffers (double
//      buffering: the upload waits only for the step two back, long finished);
//   3. graph.beginStep(); forward + backward of every micro-batch as one replayable segment (recorded once
//      per token buffer and loss scale, re-submitted afterwards); gradients accumulate, pre-multiplied by
//      lossScale / gradAccum;
//   4. the optimizer, recorded fresh (lr changes every step): per-tensor gradient sums of squares, one
//   control
//      dispatch (global norm, clip factor, inf/NaN check, AdamW step counter: the skip decision stays on the
//      GPU), AdamW reading that control buffer and zeroing the gradients for the next step;
//   3b. with several ranks (data parallelism, engine/dist): wait for the backward (which weighted the
//      gradients by this rank's part of the global batch), sum the gradients and the weighted losses over the
//      ranks, copy them back; everything after it sees the same values on every rank, so clipping, loss
//      scaling and skipped steps agree (unlike devices also take rank 0's optimizer control). Overlapped
//      (Parallel::overlap), the segment is cut into parts at the buckets' last writes and each bucket is
//      summed once its part is done, while the GPU runs the later parts;
//   5. graph.endStep() submits without waiting; the step's record (loss, norm, finite, ...) lands in a ring
//      and is read kLag steps later, or when an eval, checkpoint or the end of training needs it;
//   6. with several ranks: the step's times go to the Balancer (dist/balancer.hpp); every few steps the ranks
//      compare them and may move to another split of the batch or leave a slow rank out (trainer_shares.cpp).
#include "engine/dist/balancer.hpp"
#include "engine/dist/data_parallel.hpp"
#include "engine/graph/arena.hpp"
#include "engine/graph/graph_executor.hpp"
#include "engine/graph/step_plan.hpp"
#include "engine/train/config.hpp"
#include "engine/train/data.hpp"
#include "engine/train/metrics.hpp"
#include "engine/train/model.hpp"

#include <chrono>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>

namespace helios::train {

inline constexpr uint64_t kLag = 2; // steps between a step's submission and the host acting on its record
inline constexpr uint32_t kRecordRing = 16;

// One rank's part of a data-parallel step, as measured over the Balancer's last window.
struct RankStats {
  int rank = 0;         // in the job
  std::string device;   // its device's name
  uint32_t rows = 0;    // its sequences of each micro-batch (0: left out)
  double busyMs = 0;    // its own work per step (median)
  double waitMs = 0;    // its wait for the exchange per step (median)
  double tokPerSec = 0; // its tokens per second of the job's step time
};

struct StepRecord {
  uint64_t step = 0;
  float loss = 0, gradNorm = 0, lr = 0, lossScale = 1, clip = 1;
  bool skipped = false;        // non-finite gradients: the update was not applied
  bool timed = false;          // a synchronised, phase-timed step (its submits and ms are not typical)
  uint64_t skippedTotal = 0;   // skipped steps up to and including this one
  double ms = 0, elapsedS = 0; // host wall time between this step's submission and the previous one's
  double tokPerSec = 0;        // over the last 10 steps (the CPU runs a few steps ahead of the GPU)
  graph::StepStats stats;
  std::optional<float> valLoss;
  std::vector<RankStats> ranks; // data parallel: on the steps that ended a measuring window
  nlohmann::ordered_json toJson() const;
};

// The memory plan of the training step's forward and backward (TrainConfig::memoryPlan), for reports.
struct PlanSummary {
  uint64_t requests = 0, dispatches = 0;
  uint64_t plannedBytes = 0;   // the bins the plan needs
  uint64_t unplannedBytes = 0; // the same temporaries without reuse (the bump arena)
  uint64_t peakLiveBytes = 0;  // the most bytes live at one dispatch: no plan is smaller
  uint32_t bins = 0;
  uint32_t barriers = 0, plannedBarriers = 0; // between the segment's dispatches: no reuse / as planned
};

// GPU time of the parts of a step, from synchronised "timed" steps (TrainConfig::timeEvery) and forward-only
// passes on a validation batch. Zero until measured.
struct PhaseTiming {
  double forwardMs = 0, backwardMs = 0, optimizerMs = 0, forwardBackwardMs = 0;
  uint64_t measuredAt = 0; // step of the last measurement (0 = none)
};

struct TrainHooks {
  std::function<void(const StepRecord&)> onStep; // in step order, a few steps after submission
  std::function<void(uint64_t step, float valLoss)> onEval;
  std::function<void(uint64_t step, const std::filesystem::path& dir)> onCheckpoint;
  std::function<void(const std::string& line)> onNote; // data parallel: shares changed, a rank is slow
};

// What the trainer records about the data so that a resume can refuse a different corpus or tokenizer.
struct DataInfo {
  std::string path;
  uint64_t hash = 0;
  uint64_t tokens = 0;
  nlohmann::json tokenizer;
  std::vector<text::TokenizerFile> tokenizerFiles; // saved into every checkpoint beside the weights
};

// Thrown when the loss was non-finite config.nonFiniteLimit steps in a row.
class NonFiniteLoss : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Data parallelism: the peer ranks, when there are any. config.batch stays the global micro-batch; each rank
// trains on its share, a run of rows of every micro-batch (dist/shares.hpp, Shard in data.hpp).
struct Parallel {
  dist::Communicator* comm = nullptr; // null or one rank: a single process
  uint32_t checkEvery = 0; // compare parameter hashes across ranks every N steps (0: start and end)
  uint64_t bucketBytes = dist::kDefaultBucketBytes;
  // Exchange each bucket as soon as the backward has written it for the last time, while the GPU runs the
  // rest (DataParallel::reduceOverlapped); off: after the whole backward. The same bits either way.
  bool overlap = true;
  std::filesystem::path trace; // non-empty: DataParallel's exchange trace (JSON lines), rank 0 only
  dist::ShareSpec shares;      // --share (no mode: even for alike devices, measured otherwise)
  // Measured shares: the policy's knobs; `exclude` leaves out ranks that cost more than they add
  // (--slow-ranks exclude|keep).
  dist::BalanceOptions balance;
  double delayMsPerRow = 0; // a testing aid: this rank sleeps so long per sequence of its share each step
};

class Trainer {
public:
  // `outDir` empty: no metrics, curve or checkpoints on disk (tests, and every rank but 0).
  Trainer(vk::Context& ctx, Model& model, TrainConfig config, DataLoader& data, DataInfo dataInfo,
          std::filesystem::path outDir, Parallel parallel = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Continues from a checkpoint (weights, optimizer moments, step, loss scale, loader state): a run
  // directory's current one or a step directory (resolveCheckpoint, checkpoint_dir.hpp).
  void resume(const std::filesystem::path& path);
  // Runs steps until config.steps, with evals, checkpoints and a final checkpoint + metrics + curve.
  void train(const TrainHooks& hooks = {});
  // One optimizer step (submits, does not wait for the GPU).
  void step();
  // Mean loss over config.evalBatches validation batches (waits for the GPU).
  float evaluate();
  // Waits for the GPU and saves a checkpoint as the run directory's new current step directory (keeping
  // config.keepCheckpoints); returns it. Throws CheckpointError, writing nothing, when a weight or moment is
  // not finite.
  std::filesystem::path saveCheckpoint(const std::filesystem::path& run);
  // Reads every outstanding step record (metrics), flushes metrics.jsonl and redraws loss.svg.
  void flushOutputs();

  float learningRate(uint64_t step) const; // step is 1-based
  uint64_t stepsDone() const { return step_; }
  float lossScale() const { return lossScale_; }
  const std::vector<StepRecord>& records() const { return records_; } // emitted so far, in order
  const PhaseTiming& phases() const { return phases_; }
  // The kernels compiled in parallel at construction (start-up cost on a cold pipeline cache).
  const vk::PrecompileStats& precompiled() const { return precompile_; }
  graph::GraphExecutor& graph() { return *graph_; }
  const graph::StepArena& arena() const { return *arena_; }
  const PlanSummary& stepPlan() const { return plan_; } // zero until the first planned step
  const TrainConfig& config() const { return cfg_; }
  const dist::DataParallel* parallel() const { return parallel_.get(); } // null with one rank
  // Data parallel: how the batch is shared (Even for one process), each job rank's rows (0: left out) and
  // device, and whether this rank was left out (it trains no more).
  dist::ShareMode shareMode() const { return balancer_ ? balancer_->mode() : shareMode_; }
  const std::vector<uint32_t>& rowsPerRank() const { return rowsPerRank_; }
  const std::vector<std::string>& rankDevices() const { return devices_; }
  bool leftOut() const { return leftOut_; }
  const std::filesystem::path& lastCheckpoint() const { return lastCheckpoint_; } // empty until a save
  nlohmann::json stateJson() const; // what a checkpoint stores besides tensors (after a drain)

private:
  struct Pending {
    uint64_t step = 0;
    uint32_t slot = 0;
    float lr = 0, scale = 1;
    double ms = 0, elapsedS = 0;
    graph::StepStats stats;
    bool emitted = false, finite = true, timed = false;
    std::vector<RankStats> ranks;
  };

  void recordForwardBackward(uint32_t set, float scale);
  // Records (first time) or replays the segment `key` whose temporaries come from the step arena: placed by
  // a memory plan computed from a dry run of `record`, or bump-allocated without TrainConfig::memoryPlan.
  PlanSummary recordArenaSegment(const std::string& key, const graph::StepRecording& record,
                                 const graph::Cuts* cuts = nullptr);
  // The optimizer of step `step` (it seeds the stochastic rounding of bf16 parameters); with adoptRankZero
  // every rank applies rank 0's norm, clip and skip decisions (unlike devices).
  void recordOptimizer(ops::Executor& exec, uint64_t step, uint32_t set, uint32_t slot, float scale, float lr,
                       bool adoptRankZero = false);
  vk::PrecompileStats precompile();
  void readRecord(Pending& p);        // downloads the record (waits for its step only) and emits metrics
  void applyRecord(const Pending& p); // loss-scale decisions
  void countNonFinite(uint64_t step, float loss); // throws NonFiniteLoss at the limit
  void drain();                                   // reads every pending record (does not apply them)
  void recordEval(uint32_t index);
  void timeForward();
  void openMetrics(uint64_t resumeStep);
  vk::BufferRange slice(const vk::Buffer& b, VkDeviceSize offset, VkDeviceSize bytes) const;
  // Data parallel (trainer_shares.cpp): the first split, the peers' exchange, the step's times to the
  // Balancer and a new split (or fewer ranks) when it decides so.
  void shareBatch();
  void makePeers();
  void balance(Pending& p, std::chrono::steady_clock::time_point begin,
               std::chrono::steady_clock::time_point ready, std::chrono::steady_clock::time_point exchanged);
  void applyRows(std::vector<uint32_t> rows);
  void note(const std::string& line) const;
  bool alike() const; // the training ranks' devices compute the same bits
  Shard shard() const { return {rows_.first, rows_.count, cfg_.batch}; }

  vk::Context& ctx_;
  Model& model_;
  TrainConfig cfg_;
  DataLoader& data_;
  DataInfo dataInfo_;
  std::filesystem::path outDir_;
  std::unique_ptr<graph::GraphExecutor> graph_;
  std::unique_ptr<graph::StepArena> arena_;
  std::unique_ptr<MetricsWriter> metrics_;
  uint32_t checkEvery_ = 0;
  Parallel parallelOptions_;
  // Data parallelism: the ranks training now (the job's, or those left after slow ones were left out), their
  // job ranks, every job rank's device and rows, this rank's rows of each micro-batch.
  dist::Communicator* comm_ = nullptr;            // null: one process
  std::unique_ptr<dist::Communicator> remaining_; // the ranks still training after some left
  std::vector<int> members_;
  std::vector<std::string> devices_;
  std::vector<uint64_t> fingerprints_; // per job rank: device, driver, subgroup size
  std::vector<uint32_t> rowsPerRank_;
  int jobRank_ = 0;
  bool alike_ = true, leftOut_ = false;
  dist::ShareMode shareMode_ = dist::ShareMode::Even;
  dist::RowRange rows_;
  std::unique_ptr<dist::Balancer> balancer_;     // several ranks training
  std::unique_ptr<dist::DataParallel> parallel_; // only with several ranks
  bool overlap_ = false;                         // parallel_ exchanges overlapped with the backward

  // device state
  vk::Buffer tokens_[2], targets_[2]; // host-visible, double-buffered; gradAccum * batch * seqLen each
  vk::Buffer losses_[2];              // one aligned slot per micro-batch (zero gaps)
  vk::Buffer partials_;               // gradient sums of squares, one aligned region per parameter
  std::vector<uint32_t> partialSlot_; // first float of each parameter group's region
  uint32_t partialFloats_ = 0;
  vk::Buffer adamState_;  // [0] = AdamW step counter t (advanced on finite steps only)
  vk::Buffer control_;    // {gradMul, skip, 1/(1-b1^t), 1/(1-b2^t)}
  vk::Buffer recordRing_; // host-visible ring of step records
  vk::Buffer evalTokens_, evalTargets_, evalLosses_;
  uint32_t lossStride_ = 0, recordStride_ = 0; // floats between aligned slots

  // host state
  uint64_t step_ = 0;
  float lossScale_ = 1;
  uint64_t goodSteps_ = 0, skippedTotal_ = 0;
  uint32_t nonFiniteRun_ = 0; // consecutive non-finite losses
  std::filesystem::path lastCheckpoint_;
  std::deque<Pending> pending_;
  std::vector<StepRecord> records_;
  std::map<uint64_t, float> valLoss_;
  std::deque<double> recentMs_; // the last few steps' wall times, for a steady tokens/s
  std::vector<int32_t> hostTokens_, hostTargets_;
  bool evalUploaded_ = false, evalRecorded_ = false;
  PhaseTiming phases_;
  vk::PrecompileStats precompile_;
  PlanSummary plan_;
  const TrainHooks* hooks_ = nullptr;
  std::chrono::steady_clock::time_point start_, lastStepEnd_;
  double elapsedBase_ = 0; // seconds trained before a resume
};

} // namespace helios::train
