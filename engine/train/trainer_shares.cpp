// The trainer's data-parallel shares (trainer.hpp, step 6): the first split of the batch, the peers'
// exchange, the step's times handed to the Balancer, and a new split, or fewer ranks, when it decides so.
// A change waits for the GPU and forgets the recorded segments: they name the old rows (and cuts), and the
// ranks that stay record the step anew.
#include "engine/core/fnv1a.hpp"
#include "engine/train/trainer.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

namespace helios::train {

namespace {

using Clock = std::chrono::steady_clock;

double msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Two ranks compute the same bits from the same inputs on the same device, driver and subgroup size.
uint64_t arithmeticFingerprint(const vk::Device& d) {
  const VkPhysicalDeviceProperties& p = d.properties();
  return fnv1a64(
      fmt::format("{}:{}:{}:{}:{}", p.vendorID, p.deviceID, p.driverVersion, p.deviceName, d.subgroupSize()));
}

std::string slowNote(uint64_t step, const dist::Balancer::Outcome& o, size_t rank, const std::string& device,
                     dist::ShareMode mode, bool exclude) {
  const dist::RankTiming& t = o.timing[rank];
  const dist::RankTiming& lead = o.timing[0];
  const char* action =
      mode == dist::ShareMode::Measured
          ? (exclude ? "left out" : "kept (--slow-ranks keep)")
          : (mode == dist::ShareMode::Hand ? "kept (its share was set by --share)"
                                           : "kept (even shares; --share auto leaves it out)");
  return fmt::format("warning: step {}: rank {} ({}) costs more than it adds: {} sequences in {:.1f} ms "
                     "against rank 0's {} in {:.1f} ms; the others alone would take {:.1f} ms per step, with "
                     "it {:.1f} ms (the exchange: {:.1f} ms): {}",
                     step, rank, device, t.rows, t.busyMs, lead.rows, lead.busyMs, o.proposal.withoutSlowMs,
                     o.proposal.keptMs, dist::exchangeMs(o.timing), action);
}

} // namespace

void Trainer::shareBatch() {
  dist::Communicator* comm = parallelOptions_.comm;
  if (!comm || comm->size() == 1) {
    rowsPerRank_ = {cfg_.batch};
    rows_ = {0, cfg_.batch};
    return;
  }
  comm_ = comm;
  jobRank_ = comm->rank();
  members_.resize(size_t(comm->size()));
  std::iota(members_.begin(), members_.end(), 0);
  devices_ = dist::allgatherText(*comm, ctx_.device().name(), "naming the ranks' devices");
  comm->setRankLabels(devices_);
  fingerprints_ = comm->allgather(arithmeticFingerprint(ctx_.device()), "comparing the ranks' devices");
  alike_ = alike();
  shareMode_ = dist::resolveMode(parallelOptions_.shares, alike_);
  rowsPerRank_ = dist::initialRows(parallelOptions_.shares, shareMode_, uint32_t(comm->size()), cfg_.batch);
  if (shareMode_ == dist::ShareMode::Measured) {
    const std::vector<uint64_t> types =
        comm->allgather(uint64_t(ctx_.device().properties().deviceType), "comparing the ranks' device types");
    std::vector<bool> cpu;
    for (uint64_t t : types)
      cpu.push_back(t == VK_PHYSICAL_DEVICE_TYPE_CPU);
    rowsPerRank_ = dist::measuredStart(cfg_.batch, cpu);
  }
  rows_ = dist::rowsOf(rowsPerRank_, size_t(jobRank_));
  balancer_ =
      std::make_unique<dist::Balancer>(shareMode_, parallelOptions_.balance, cfg_.batch, rowsPerRank_);
}

void Trainer::makePeers() {
  parallel_.reset();
  overlap_ = false;
  if (!comm_ || comm_->size() == 1) {
    balancer_.reset(); // one rank left: nothing to balance
    return;
  }
  const dist::PeerOptions peers{double(rows_.count) / double(cfg_.batch), alike_};
  parallel_ =
      std::make_unique<dist::DataParallel>(ctx_, *comm_, model_.parameterGroups(),
                                           parallelOptions_.bucketBytes, cfg_.gradAccum * lossStride_, peers);
  overlap_ = parallelOptions_.overlap;
  if (!parallelOptions_.trace.empty() && comm_->rank() == 0) parallel_->traceTo(parallelOptions_.trace);
}

void Trainer::balance(Pending& p, Clock::time_point begin, Clock::time_point ready,
                      Clock::time_point exchanged) {
  balancer_->observe(msBetween(begin, ready), msBetween(ready, exchanged));
  if (!balancer_->due()) return;
  const dist::Balancer::Outcome o = balancer_->conclude(*comm_, members_);
  const double stepS = o.proposal.measuredMs * 1e-3;
  for (size_t r = 0; r < o.timing.size(); ++r)
    if (const dist::RankTiming& t = o.timing[r]; t.rows > 0)
      p.ranks.push_back({int(r), devices_[r], t.rows, t.busyMs, t.waitMs,
                         stepS > 0 ? double(t.rows) * cfg_.seqLen * cfg_.gradAccum / stepS : 0.0});
  for (size_t r : o.newlySlow)
    note(slowNote(p.step, o, r, devices_[r], balancer_->mode(), parallelOptions_.balance.exclude));
  if (!o.changed) return;
  note(fmt::format(
      "step {}: shares {} -> {} of each micro-batch of {} (measured {:.1f} ms per step, predicted "
      "{:.1f})",
      p.step, dist::describeRows(rowsPerRank_), dist::describeRows(balancer_->rows()), cfg_.batch,
      o.proposal.measuredMs, o.proposal.predictedMs));
  applyRows(balancer_->rows());
}

void Trainer::applyRows(std::vector<uint32_t> rows) {
  graph_->flush(); // nothing in flight still uses the old split's recordings, cuts or window
  graph_->forgetReplays();
  evalUploaded_ = evalRecorded_ = false;
  rowsPerRank_ = rows;
  rows_ = dist::rowsOf(rows, size_t(jobRank_));
  const bool leaving =
      std::any_of(members_.begin(), members_.end(), [&](int r) { return rows[size_t(r)] == 0; });
  if (!leaving) {
    parallel_->forgetOverlap();
    parallel_->setWeight(double(rows_.count) / double(cfg_.batch));
    return;
  }
  parallel_.reset(); // the window it imported goes back before the communicator releases it
  std::unique_ptr<dist::Communicator> next = comm_->split(rows_.count > 0, "leaving slow ranks out");
  if (rows_.count == 0) {
    leftOut_ = true;
    comm_ = nullptr;
    balancer_.reset();
    return;
  }
  std::erase_if(members_, [&](int r) { return rows[size_t(r)] == 0; });
  alike_ = alike(); // the unlike device may have been the one that left
  std::vector<std::string> labels;
  for (int r : members_)
    labels.push_back(devices_[size_t(r)]);
  next->setRankLabels(std::move(labels));
  remaining_ = std::move(next);
  comm_ = remaining_.get();
  makePeers();
}

bool Trainer::alike() const {
  return std::all_of(members_.begin(), members_.end(),
                     [&](int r) { return fingerprints_[size_t(r)] == fingerprints_[size_t(members_[0])]; });
}

void Trainer::note(const std::string& line) const {
  if (hooks_ && hooks_->onNote) hooks_->onNote(line);
}

} // namespace helios::train
