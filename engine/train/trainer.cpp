#include "engine/train/trainer.hpp"

#include "engine/ops/elementwise.hpp"
#include "engine/ops/optim_step.hpp"
#include "engine/ops/recording_executor.hpp"
#include "engine/train/checkpoint.hpp"
#include "engine/train/checkpoint_dir.hpp"
#include "engine/train/finite_check.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <numeric>
#include <thread>

namespace helios::train {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

uint32_t roundUp(uint32_t v, uint32_t m) {
  return (v + m - 1) / m * m;
}

template <class T> std::span<const std::byte> bytesOf(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

constexpr float kMaxLossScale = 16777216.0f; // 2^24

// Tokens per trained target: what turns a mean over every token into the mean over trained targets.
float tokensPerTrained(uint64_t tokens, uint64_t trained) {
  return trained ? static_cast<float>(double(tokens) / double(trained)) : 1.0f;
}

} // namespace

// A float as JSON with its shortest decimal form (0.01, not 0.009999999776482582); inf/NaN become null.
nlohmann::ordered_json shortest(float v) {
  if (!std::isfinite(v)) return nullptr;
  return std::stod(fmt::format("{}", v));
}

nlohmann::ordered_json StepRecord::toJson() const {
  nlohmann::ordered_json j{{"step", step},
                           {"loss", shortest(loss)},
                           {"lr", shortest(lr)},
                           {"grad_norm", shortest(gradNorm)},
                           {"clip", shortest(clip)},
                           {"loss_scale", shortest(lossScale)},
                           {"skipped", skipped},
                           {"skipped_total", skippedTotal},
                           {"tok_s", std::round(tokPerSec * 10) / 10},
                           {"ms", std::round(ms * 1000) / 1000},
                           {"elapsed_s", std::round(elapsedS * 1000) / 1000},
                           {"submits", stats.submits},
                           {"dispatches", stats.dispatches},
                           {"barriers", stats.barriers},
                           {"replayed", stats.replayedSegments},
                           {"bytes_allocated", stats.bytesAllocated}};
  if (valLoss) j["val_loss"] = shortest(*valLoss);
  if (trainedTokens) j["trained_tokens"] = trainedTokens;
  if (timed) j["timed"] = true;
  for (const RankStats& r : ranks)
    j["ranks"].push_back({{"rank", r.rank},
                          {"device", r.device},
                          {"rows", r.rows},
                          {"tok_s", std::round(r.tokPerSec * 10) / 10},
                          {"busy_ms", std::round(r.busyMs * 1000) / 1000},
                          {"wait_ms", std::round(r.waitMs * 1000) / 1000}});
  return j;
}

Trainer::Trainer(vk::Context& ctx, Model& model, TrainConfig config, BatchSource& data, DataInfo dataInfo,
                 fs::path outDir, Parallel parallel)
    : ctx_(ctx), model_(model), cfg_(std::move(config)), data_(data), dataInfo_(std::move(dataInfo)),
      outDir_(std::move(outDir)), checkEvery_(parallel.checkEvery), parallelOptions_(std::move(parallel)) {
  cfg_.validate();
  shareBatch(); // this rank's rows of each micro-batch (all of them for one process)
  if (data_.seqLen() != cfg_.seqLen)
    throw std::invalid_argument(fmt::format(
        "the data loader cuts sequences of {} tokens, the config asks for {}", data_.seqLen(), cfg_.seqLen));
  if (cfg_.seqLen > model_.context())
    throw std::invalid_argument(
        fmt::format("seq_len {} exceeds the model's context {}", cfg_.seqLen, model_.context()));
  graph::GraphOptions go;
  go.syncEvery = cfg_.syncEvery;
  go.profile = cfg_.profile;
  graph_ = std::make_unique<graph::GraphExecutor>(ctx_, go);
  arena_ = std::make_unique<graph::StepArena>(ctx_);
  lossScale_ = cfg_.initialLossScale();

  // Aligned slots: every range bound to a kernel starts at a multiple of minStorageBufferOffsetAlignment, and
  // separate slots let the graph track them separately (a record download waits for its own step only).
  const uint32_t alignF = static_cast<uint32_t>(ctx_.allocator().alignment() / 4);
  lossStride_ = alignF;
  recordStride_ = roundUp(codegen::kOptimRecordFloats, alignF);
  const VkDeviceSize rowsBytes = 4ull * cfg_.gradAccum * cfg_.batch * cfg_.seqLen; // any share fits
  for (int k = 0; k < 2; ++k) {
    tokens_[k] = ctx_.buffer(rowsBytes, "train tokens", vk::MemoryKind::Upload);
    targets_[k] = ctx_.buffer(rowsBytes, "train targets", vk::MemoryKind::Upload);
    if (data_.hasPositions())
      positions_[k] = ctx_.buffer(rowsBytes, "train positions", vk::MemoryKind::Upload);
    losses_[k] = ctx_.buffer(4ull * cfg_.gradAccum * lossStride_, "micro-batch losses");
  }
  for (const auto& g : model_.parameterGroups()) {
    partialSlot_.push_back(partialFloats_);
    partialFloats_ += roundUp(ops::gradSumsqSlots(g.elements), alignF);
  }
  partials_ = ctx_.buffer(4ull * std::max(partialFloats_, 1u), "gradient sum-of-squares partials");
  adamState_ = ctx_.buffer(4ull * alignF, "AdamW step counter");
  control_ = ctx_.buffer(4ull * alignF, "optimizer control");
  recordRing_ = ctx_.buffer(4ull * kRecordRing * recordStride_, "step records", vk::MemoryKind::Readback);
  const uint32_t evalBatches = std::max(cfg_.evalBatches, 1u);
  const VkDeviceSize evalBytes = 4ull * evalBatches * cfg_.batch * cfg_.seqLen;
  evalTokens_ = ctx_.buffer(evalBytes, "eval tokens", vk::MemoryKind::Upload);
  evalTargets_ = ctx_.buffer(evalBytes, "eval targets", vk::MemoryKind::Upload);
  if (data_.hasPositions()) evalPositions_ = ctx_.buffer(evalBytes, "eval positions", vk::MemoryKind::Upload);
  evalLosses_ = ctx_.buffer(4ull * evalBatches * lossStride_, "eval losses", vk::MemoryKind::Readback);

  // Zero what accumulates or is summed with gaps: gradients (the optimizer re-zeroes them every step),
  // moments, partials, losses, the AdamW counter.
  auto zero = [&](const vk::BufferRange& r) {
    ops::fill(*graph_, r, static_cast<uint32_t>(r.size / 4), 0.0f);
  };
  for (const auto& g : model_.parameterGroups()) {
    zero(g.grad);
    zero(g.m);
    zero(g.v);
  }
  for (auto* b : {&partials_, &adamState_, &control_, &recordRing_, &evalLosses_, &losses_[0], &losses_[1]})
    zero(b->range());
  graph_->flush();
  makePeers();
  precompile_ = precompile();
  start_ = lastStepEnd_ = Clock::now();
}

// Start-up: every kernel of a training step and of an evaluation, listed by recording them into an executor
// that runs nothing, and compiled in parallel before step 1 needs the first of them. The arena hands out
// virtual ranges meanwhile, so the listing allocates no step memory.
vk::PrecompileStats Trainer::precompile() {
  ops::RecordingExecutor rec(ctx_);
  const uint32_t B = rows_.count, T = cfg_.seqLen;
  const VkDeviceSize bytes = 4ull * B * T;
  struct Virtual {
    graph::StepArena& arena;
    ~Virtual() { arena.endRecording(); }
  } virtualArena{*arena_};
  arena_->beginRecording();
  return ctx_.pipelines().precompile([&] {
    model_.forwardBackward(rec, *arena_, slice(tokens_[0], 0, bytes), slice(targets_[0], 0, bytes), B, T,
                           slice(losses_[0], 0, 4), 1.0f, positions(positions_[0], 0, bytes));
    recordOptimizer(rec, 1, 0, 0, lossScale_, cfg_.lr, 1.0f);
    arena_->reset();
    const vk::BufferRange tgt = slice(evalTargets_, 0, bytes), loss = slice(evalLosses_, 0, 4);
    model_.forward(rec, *arena_, slice(evalTokens_, 0, bytes), B, T, {}, &tgt, &loss,
                   positions(evalPositions_, 0, bytes));
  });
}

Trainer::~Trainer() {
  try {
    graph_->flush();
  } catch (...) {
    // Destruction must not throw.
  }
}

vk::BufferRange Trainer::slice(const vk::Buffer& b, VkDeviceSize offset, VkDeviceSize bytes) const {
  return vk::subrange(b.range(), offset, bytes);
}

vk::BufferRange Trainer::positions(const vk::Buffer& b, VkDeviceSize offset, VkDeviceSize bytes) const {
  return data_.hasPositions() ? slice(b, offset, bytes) : vk::BufferRange{};
}

float Trainer::learningRate(uint64_t s) const {
  if (cfg_.warmup > 0 && s <= cfg_.warmup)
    return cfg_.lr * static_cast<float>(s) / static_cast<float>(cfg_.warmup);
  const double span = std::max<double>(1.0, double(cfg_.steps) - cfg_.warmup);
  const double progress = std::clamp((double(s) - cfg_.warmup) / span, 0.0, 1.0);
  const double cosine = 0.5 * (1.0 + std::cos(3.141592653589793 * progress));
  return static_cast<float>(cfg_.lr * (cfg_.minLrFrac + (1.0 - cfg_.minLrFrac) * cosine));
}

// ---------------------------------------------------------------------------------------------------------
// One step.
// ---------------------------------------------------------------------------------------------------------
void Trainer::step() {
  const uint64_t s = step_ + 1;
  const Clock::time_point begin = Clock::now();

  // 1. Loss-scale decisions from the records of steps at least kLag old.
  while (!pending_.empty() && pending_.front().step + kLag <= s) {
    readRecord(pending_.front());
    applyRecord(pending_.front());
    pending_.pop_front();
  }

  // 2. The batch, into the token buffers the step two back used (waits only for that step's reads).
  const uint32_t set = static_cast<uint32_t>(s % 2);
  data_.nextTrain(cfg_.gradAccum * rows_.count, hostBatch_, shard());
  graph_->upload(tokens_[set], bytesOf(hostBatch_.tokens));
  graph_->upload(targets_[set], bytesOf(hostBatch_.targets));
  if (data_.hasPositions()) graph_->upload(positions_[set], bytesOf(hostBatch_.positions));
  const uint64_t trained = data_.masksTargets() ? hostBatch_.trainedTargets : 0; // over every rank's rows

  // A timed step starts from an idle GPU and waits after each phase.
  const bool timed = cfg_.timeEvery > 0 && (s == 4 || s % cfg_.timeEvery == 0); // 4: both sets recorded
  if (timed) graph_->flush();

  // 3. Forward + backward (replayed).
  graph_->beginStep();
  const Clock::time_point t0 = Clock::now();
  const float scale = lossScale_;
  if (parallel_) parallel_->beginStep(set);
  recordForwardBackward(set, scale);
  if (parallelOptions_.delayMsPerRow > 0) // a testing aid: a slower device
    std::this_thread::sleep_for(
        std::chrono::duration<double, std::milli>(parallelOptions_.delayMsPerRow * rows_.count));
  Clock::time_point ready = Clock::now();
  if (parallel_ && overlap_)
    ready = parallel_->reduceOverlapped(*graph_, losses_[set].range(), s);
  else if (parallel_)
    ready = parallel_->reduceGradients(*graph_, losses_[set].range(), s); // waits for the backward
  const Clock::time_point exchanged = Clock::now();
  double fbMs = 0;
  if (timed) {
    graph_->flush();
    fbMs = msSince(t0);
  }

  // 4. The optimizer (recorded fresh: the learning rate is a push constant).
  const Clock::time_point t1 = Clock::now();
  const uint32_t slot = static_cast<uint32_t>(s % kRecordRing);
  const float lr = learningRate(s);
  recordOptimizer(*graph_, s, set, slot, scale, lr, tokensPerTrained(cfg_.tokensPerStep(), trained),
                  parallel_ && !parallel_->alike());
  if (timed) {
    graph_->flush();
    phases_.optimizerMs = msSince(t1);
    phases_.forwardBackwardMs = fbMs;
    phases_.measuredAt = s;
  }

  // 5. Submit without waiting; the record is read kLag steps later.
  Pending p;
  p.stats = graph_->endStep();
  p.step = s;
  p.slot = slot;
  p.lr = lr;
  p.scale = scale;
  p.timed = timed;
  p.trained = trained;
  if (timed) timeForward(); // a forward-only pass on a validation batch (changes no training state)
  const Clock::time_point now = Clock::now();
  p.ms = std::chrono::duration<double, std::milli>(now - lastStepEnd_).count();
  p.elapsedS = elapsedBase_ + std::chrono::duration<double>(now - start_).count();
  lastStepEnd_ = now;
  pending_.push_back(p);
  step_ = s;
  if (balancer_) balance(pending_.back(), begin, ready, exchanged);
}

void Trainer::recordForwardBackward(uint32_t set, float scale) {
  const uint32_t B = rows_.count, T = cfg_.seqLen;
  const VkDeviceSize mbBytes = 4ull * B * T;
  // One segment per token buffer, loss scale and share: everything it names stays fixed, so it replays as
  // is. The gradient is weighted by this rank's part of the global batch: the ranks' sum is its mean.
  const std::string key =
      fmt::format("train.fwdbwd:set{}:scale{:08x}:rows{}", set, std::bit_cast<uint32_t>(scale), B);
  const float gradScale = scale * static_cast<float>(B) / static_cast<float>(cfg_.gradAccum * cfg_.batch);
  const graph::StepRecording record = [&](ops::Executor& exec) {
    for (uint32_t mb = 0; mb < cfg_.gradAccum; ++mb) {
      arena_->reset(); // the previous micro-batch's temporaries are dead (the graph orders reuse)
      model_.forwardBackward(exec, *arena_, slice(tokens_[set], mb * mbBytes, mbBytes),
                             slice(targets_[set], mb * mbBytes, mbBytes), B, T,
                             slice(losses_[set], 4ull * mb * lossStride_, 4), gradScale,
                             positions(positions_[set], mb * mbBytes, mbBytes));
    }
  };
  if (overlap_ && !parallel_->overlapPlanned()) { // every recording of the step has the same dispatches
    const std::vector<vk::BufferRange> buckets = parallel_->bucketRanges();
    parallel_->planOverlap(*graph_, graph::findLastWrites(ctx_, *arena_, record, buckets));
  }
  const PlanSummary p = recordArenaSegment(key, record, overlap_ ? &parallel_->cuts() : nullptr);
  if (p.requests) plan_ = p;
}

PlanSummary Trainer::recordArenaSegment(const std::string& key, const graph::StepRecording& record,
                                        const graph::Cuts* cuts) {
  struct Scratch { // ops' scratch comes from the arena while the segment records
    graph::GraphExecutor& g;
    ~Scratch() { g.setScratchArena(nullptr); }
  } scratch{*graph_};
  graph_->setScratchArena(arena_.get());
  if (!cfg_.memoryPlan || graph_->hasReplay(key)) {
    graph_->replayable(
        key, [&] { record(*graph_); }, cuts);
    return {};
  }
  const graph::StepPlan plan = graph::planStep(ctx_, *arena_, record);
  if (!arena_->fits(plan.plan)) {
    graph_->forgetReplays(); // they name the old bins; they are recorded again when next asked for
    arena_->provideBins(plan.plan);
  }
  graph_->replayable(
      key, [&] { graph::recordPlanned(*graph_, *arena_, plan, record); }, cuts);
  PlanSummary s;
  s.requests = plan.lifetimes.size();
  s.dispatches = plan.dispatches;
  s.plannedBytes = plan.plan.totalBytes();
  s.unplannedBytes = plan.unplannedBytes();
  s.peakLiveBytes = plan.peakLiveBytes();
  s.bins = static_cast<uint32_t>(plan.plan.binBytes.size());
  s.barriers = plan.barriers;
  s.plannedBarriers = plan.plannedBarriers;
  return s;
}

void Trainer::recordOptimizer(ops::Executor& exec, uint64_t step, uint32_t set, uint32_t slot, float scale,
                              float lr, float lossWeight, bool adoptRankZero) {
  // One sum of squares and one AdamW dispatch per parameter group (flat buffers; padding stays zero).
  const auto& groups = model_.parameterGroups();
  for (size_t i = 0; i < groups.size(); ++i) {
    const uint32_t slots = ops::gradSumsqSlots(groups[i].elements);
    ops::gradSumsq(exec, groups[i].grad, groups[i].elements,
                   slice(partials_, 4ull * partialSlot_[i], 4ull * slots), 0);
  }
  ops::OptimControlArgs c;
  c.partials = slice(partials_, 0, 4ull * std::max(partialFloats_, 1u));
  c.losses = losses_[set].range();
  c.state = slice(adamState_, 0, 4);
  c.control = slice(control_, 0, 16);
  c.records = slice(recordRing_, 4ull * slot * recordStride_, 4ull * codegen::kOptimRecordFloats);
  c.count = partialFloats_;
  c.lossCount = cfg_.gradAccum * lossStride_;
  // The gradients and losses are means over every token: lossWeight makes them means over trained targets
  // (the norm, the clip and the update all see the rescaled gradients).
  c.lossMul = lossWeight / static_cast<float>(cfg_.gradAccum);
  c.slot = 0;
  c.scale = scale / lossWeight;
  c.maxNorm = cfg_.gradClip;
  c.beta1 = cfg_.beta1;
  c.beta2 = cfg_.beta2;
  ops::optimControl(exec, c);
  if (adoptRankZero) { // unlike devices: every rank applies rank 0's norm, clip, skip and bias corrections
    const vk::BufferRange shared[] = {c.control, c.records};
    parallel_->adoptRankZero(*graph_, shared);
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    const model::ParameterGroup& g = groups[i];
    ops::AdamWCtrlHyper h{lr, cfg_.beta1, cfg_.beta2, cfg_.eps, g.decay ? cfg_.weightDecay : 0.0f};
    // bf16 parameters round stochastically, seeded by the step and group: a resumed run repeats it exactly.
    const uint32_t seed = static_cast<uint32_t>(step) * 0x9e3779b1u ^ static_cast<uint32_t>(i) * 0x85ebca6bu;
    ops::adamwCtrl(exec, g.data, g.m, g.v, g.grad, c.control, g.elements, h, g.dtype, seed);
  }
}

void Trainer::readRecord(Pending& p) {
  if (p.emitted) return;
  float rec[codegen::kOptimRecordFloats];
  graph_->download(recordRing_, std::as_writable_bytes(std::span<float>(rec)), 4ull * p.slot * recordStride_);
  p.finite = rec[2] != 0.0f;
  p.emitted = true;
  StepRecord r;
  r.step = p.step;
  r.loss = rec[0];
  r.gradNorm = rec[1];
  r.clip = rec[5];
  r.lossScale = p.scale;
  r.lr = p.lr;
  r.skipped = !p.finite;
  r.timed = p.timed;
  r.trainedTokens = p.trained;
  if (r.skipped) ++skippedTotal_;
  r.skippedTotal = skippedTotal_;
  r.ms = p.ms;
  recentMs_.push_back(p.ms);
  if (recentMs_.size() > 10) recentMs_.pop_front();
  const double windowMs = std::accumulate(recentMs_.begin(), recentMs_.end(), 0.0);
  r.tokPerSec =
      windowMs > 0 ? double(cfg_.tokensPerStep()) * double(recentMs_.size()) / (windowMs * 1e-3) : 0;
  r.elapsedS = p.elapsedS;
  r.stats = p.stats;
  if (auto it = valLoss_.find(p.step); it != valLoss_.end()) r.valLoss = it->second;
  r.ranks = p.ranks;
  records_.push_back(r);
  if (metrics_) metrics_->add(r.toJson());
  if (hooks_ && hooks_->onStep) hooks_->onStep(r);
  countNonFinite(r.step, r.loss);
}

// A non-finite loss means the forward pass itself broke (NaN or infinite weights, an overflow in f32);
// steps skipped for overflowing gradients under loss scaling have finite losses and do not count.
void Trainer::countNonFinite(uint64_t step, float loss) {
  if (std::isfinite(loss)) {
    nonFiniteRun_ = 0;
    return;
  }
  if (++nonFiniteRun_ < cfg_.nonFiniteLimit) return;
  throw NonFiniteLoss(fmt::format(
      "steps {}-{}: the loss was {} {} times in a row: training diverged, stopping (nonfinite_limit {}; no "
      "checkpoint of non-finite state is written, the current one is kept)",
      step + 1 - nonFiniteRun_, step, std::isnan(loss) ? "NaN" : "infinite", nonFiniteRun_,
      cfg_.nonFiniteLimit));
}

void Trainer::applyRecord(const Pending& p) {
  if (!cfg_.dynamicLossScale()) return;
  if (!p.finite) {
    // Steps recorded before the last halving carried a larger scale; their overflow is already answered.
    if (p.scale >= lossScale_) {
      lossScale_ = std::max(1.0f, p.scale * 0.5f);
      goodSteps_ = 0;
    }
  } else if (p.scale == lossScale_ && ++goodSteps_ >= cfg_.scaleGrowthInterval) {
    lossScale_ = std::min(kMaxLossScale, lossScale_ * 2.0f);
    goodSteps_ = 0;
  }
}

void Trainer::drain() {
  for (auto& p : pending_)
    readRecord(p);
}

// ---------------------------------------------------------------------------------------------------------
// Evaluation, timing, outputs, checkpoints.
// ---------------------------------------------------------------------------------------------------------
void Trainer::recordEval(uint32_t index) {
  const uint32_t B = rows_.count, T = cfg_.seqLen;
  const VkDeviceSize bytes = 4ull * B * T;
  if (!evalUploaded_) {
    Batch b;
    evalTrained_.clear();
    for (uint32_t i = 0; i < std::max(cfg_.evalBatches, 1u); ++i) {
      data_.valBatch(i, B, b, shard());
      graph_->upload(evalTokens_, bytesOf(b.tokens), i * bytes);
      graph_->upload(evalTargets_, bytesOf(b.targets), i * bytes);
      if (data_.hasPositions()) graph_->upload(evalPositions_, bytesOf(b.positions), i * bytes);
      evalTrained_.push_back(b.trainedTargets);
    }
    evalUploaded_ = true;
  }
  if (index == 0) evalRecorded_ = true;
  recordArenaSegment(fmt::format("train.eval:{}", index), [&](ops::Executor& exec) {
    arena_->reset();
    const vk::BufferRange tgt = slice(evalTargets_, index * bytes, bytes);
    const vk::BufferRange loss = slice(evalLosses_, 4ull * index * lossStride_, 4);
    model_.forward(exec, *arena_, slice(evalTokens_, index * bytes, bytes), B, T, {}, &tgt, &loss,
                   positions(evalPositions_, index * bytes, bytes));
  });
}

float Trainer::evaluate() {
  const uint32_t n = std::max(cfg_.evalBatches, 1u);
  for (uint32_t i = 0; i < n; ++i)
    recordEval(i);
  std::vector<float> losses(size_t(n) * lossStride_);
  graph_->download(evalLosses_, std::as_writable_bytes(std::span<float>(losses)));
  if (parallel_) parallel_->sumWeighted(losses, "averaging validation losses");
  double sum = 0;
  for (uint32_t i = 0; i < n; ++i)
    sum += losses[size_t(i) * lossStride_];
  if (!data_.masksTargets()) return static_cast<float>(sum / n);
  // Each batch's loss is a mean over its batch * seq_len tokens: back to sums, over the trained targets.
  const uint64_t trained = std::accumulate(evalTrained_.begin(), evalTrained_.end(), uint64_t{0});
  return static_cast<float>(sum * double(cfg_.batch) * cfg_.seqLen / double(std::max<uint64_t>(trained, 1)));
}

void Trainer::timeForward() {
  if (data_.valTokens() == 0) { // no validation batch to time a forward on (chat data without an eval set)
    phases_.forwardMs = phases_.backwardMs = 0;
    return;
  }
  if (!evalRecorded_) recordEval(0); // the first call records; time a replay
  graph_->flush();
  const Clock::time_point t0 = Clock::now();
  recordEval(0);
  graph_->flush();
  phases_.forwardMs = msSince(t0) * cfg_.gradAccum;
  phases_.backwardMs = std::max(0.0, phases_.forwardBackwardMs - phases_.forwardMs);
}

void Trainer::openMetrics(uint64_t resumeStep) {
  if (outDir_.empty() || metrics_) return;
  fs::create_directories(outDir_);
  metrics_ = std::make_unique<MetricsWriter>(outDir_ / "metrics.jsonl", resumeStep);
  if (resumeStep == 0 && !dataInfo_.stats.empty()) // what reading the data counted, before step 1
    metrics_->add(nlohmann::ordered_json{{"step", 0}, {"data", dataInfo_.stats}});
}

void Trainer::flushOutputs() {
  drain();
  if (!metrics_) return;
  metrics_->flush();
  std::vector<CurvePoint> train, val;
  curvesFromHistory(metrics_->history(), train, val);
  writeLossSvg(outDir_ / "loss.svg", train, val,
               fmt::format("{} - {} tokens/step", model_.describe(), cfg_.tokensPerStep()));
}

nlohmann::json Trainer::stateJson() const {
  nlohmann::json pending = nlohmann::json::array();
  for (const auto& p : pending_)
    pending.push_back({{"step", p.step}, {"finite", p.finite}, {"scale", p.scale}});
  return {{"step", step_},
          {"loss_scale", lossScale_},
          {"good_steps", goodSteps_},
          {"skipped_total", skippedTotal_},
          {"pending", pending},
          {"loader_state", data_.state()},
          {"data", {{"path", dataInfo_.path}, {"hash", dataInfo_.hash}, {"tokens", dataInfo_.tokens}}},
          {"tokenizer", dataInfo_.tokenizer},
          {"config", toJson(cfg_)},
          {"elapsed_s", elapsedBase_ + std::chrono::duration<double>(Clock::now() - start_).count()}};
}

fs::path Trainer::saveCheckpoint(const fs::path& run) {
  drain();
  if (metrics_) flushOutputs(); // the metrics cover every step the checkpoint holds
  graph_->flush();
  const auto bad = nonFiniteState(ctx_, *graph_, model_);
  if (!bad.empty()) {
    const auto current = currentCheckpoint(run);
    throw CheckpointError(
        fmt::format("refusing to save the checkpoint of step {}: non-finite values in {}; {}", step_,
                    fmt::join(bad, ", "),
                    current ? "the current checkpoint " + current->dir.string() + " is kept"
                            : std::string("no checkpoint was written")));
  }
  float t = 0;
  ctx_.download(adamState_, std::as_writable_bytes(std::span<float>(&t, 1)));
  nlohmann::json state = stateJson();
  state["adam_t"] = t;
  if (nlohmann::json m = model_.runtimeState(); !m.is_null()) state["model_state"] = std::move(m);
  train::saveCheckpoint(ctx_, stageCheckpoint(run, step_), model_, step_, state, dataInfo_.tokenizerFiles);
  lastCheckpoint_ = commitCheckpoint(run, step_, cfg_.keepCheckpoints);
  if (hooks_ && hooks_->onCheckpoint) hooks_->onCheckpoint(step_, lastCheckpoint_);
  return lastCheckpoint_;
}

void Trainer::resume(const fs::path& path) {
  if (step_ != 0) throw std::logic_error("Trainer::resume: steps were already taken");
  const fs::path dir = resolveCheckpoint(path);
  graph_->flush();
  const nlohmann::json st = loadCheckpoint(ctx_, dir, model_, true);
  const std::string where = (dir / "optimizer.safetensors").string();
  try {
    if (st.at("tokenizer") != dataInfo_.tokenizer)
      throw CheckpointError(fmt::format("{}: the checkpoint's tokenizer ({}) differs from this run's ({})",
                                        where, st.at("tokenizer").dump(), dataInfo_.tokenizer.dump()));
    const auto& d = st.at("data");
    if (d.at("hash").get<uint64_t>() != dataInfo_.hash)
      throw CheckpointError(
          fmt::format("{}: the checkpoint was trained on {} ({} tokens, hash {:016x}); this run "
                      "reads {} ({} tokens, hash {:016x})",
                      where, d.at("path").get<std::string>(), d.at("tokens").get<uint64_t>(),
                      d.at("hash").get<uint64_t>(), dataInfo_.path, dataInfo_.tokens, dataInfo_.hash));
    step_ = st.at("step").get<uint64_t>();
    lossScale_ = st.at("loss_scale").get<float>();
    goodSteps_ = st.at("good_steps").get<uint64_t>();
    skippedTotal_ = st.at("skipped_total").get<uint64_t>();
    data_.setState(st.at("loader_state").get<uint64_t>());
    elapsedBase_ = st.value("elapsed_s", 0.0);
    const float t = st.at("adam_t").get<float>();
    ctx_.upload(adamState_, std::as_bytes(std::span<const float>(&t, 1)));
    model_.restoreRuntimeState(st.value("model_state", nlohmann::json()));
    pending_.clear();
    for (const auto& p : st.at("pending")) {
      Pending q;
      q.step = p.at("step").get<uint64_t>();
      q.finite = p.at("finite").get<bool>();
      q.scale = p.at("scale").get<float>();
      q.emitted = true;
      pending_.push_back(q);
    }
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(fmt::format("{}: incomplete trainer state ({})", where, e.what()));
  }
  if (!outDir_.empty()) {
    fs::create_directories(outDir_);
    const fs::path run = runOfCheckpoint(dir);
    const fs::path mine = outDir_ / "metrics.jsonl", theirs = run / "metrics.jsonl";
    std::error_code ec;
    if (!run.empty() && !fs::equivalent(outDir_, run, ec) && fs::exists(theirs))
      fs::copy_file(theirs, mine, fs::copy_options::overwrite_existing);
    openMetrics(step_);
  }
  start_ = lastStepEnd_ = Clock::now();
}

// ---------------------------------------------------------------------------------------------------------
// The loop.
// ---------------------------------------------------------------------------------------------------------
void Trainer::train(const TrainHooks& hooks) {
  struct Scope { // the hooks are the caller's: forget them however train() ends
    const TrainHooks*& slot;
    ~Scope() { slot = nullptr; }
  } scope{hooks_};
  hooks_ = &hooks;
  openMetrics(0);
  if (parallel_) { // every rank starts from rank 0's state (fresh or resumed)
    parallel_->broadcastState(*graph_);
    parallel_->checkIdentical(*graph_, step_);
  }
  while (step_ < cfg_.steps && !leftOut_) {
    step();
    if (leftOut_) break; // this rank costs the job more than it adds: the others go on without it
    const uint64_t s = step_;
    if (parallel_ && ((checkEvery_ > 0 && s % checkEvery_ == 0) || s == cfg_.steps))
      parallel_->checkIdentical(*graph_, s);
    if (cfg_.evalEvery > 0 && (s % cfg_.evalEvery == 0 || s == cfg_.steps)) {
      const float val = evaluate();
      valLoss_[s] = val;
      drain();
      if (hooks.onEval) hooks.onEval(s, val);
      flushOutputs();
    }
    if (!outDir_.empty() && cfg_.checkpointEvery > 0 && s % cfg_.checkpointEvery == 0 && s != cfg_.steps)
      saveCheckpoint(outDir_);
  }
  if (!outDir_.empty()) saveCheckpoint(outDir_);
  flushOutputs();
  graph_->flush();
}

} // namespace helios::train
