#pragma once
// What a data-parallel training step asks of its peer ranks, behind one object the trainer holds only when
// there are several ranks: the gradients' mean after the backward, the same starting state everywhere, and
// the periodic check that the parameters stayed identical. Values travel through host-visible staging
// buffers (a GPU copy into them, the host reads, MPI, the host writes, a GPU copy back), one bucket at a
// time.
//
// Overlapped (--overlap on): the backward's recording is cut after the dispatch that last writes each bucket
// (graph/cut_plan.hpp: a dry run finds it), each cut copies the buckets final there into the staging, and
// the parts are submitted one by one; the host then waits for each part in turn and exchanges its buckets
// while the GPU runs the rest of the backward. The buckets and their sums are the same as without overlap,
// so the results are bit-identical; only the order of the exchanges follows the backward (the same on every
// rank: every rank records the same step).
#include "engine/dist/buckets.hpp"
#include "engine/dist/communicator.hpp"
#include "engine/graph/cut_plan.hpp"
#include "engine/graph/graph_executor.hpp"
#include "engine/model/parameter_store.hpp"
#include "engine/vk/host_import.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

namespace helios::dist {

inline constexpr uint64_t kDefaultBucketBytes = 25ull << 20;

struct PeerOptions {
  // This rank's part of the global batch (its rows / batch): its losses count this much in their sum, as its
  // backward scaled its gradients by it. 0: 1 / ranks.
  double weight = 0;
  // Every rank's device computes the same bits from the same inputs (the same device and driver). Where
  // they differ, the optimizer's rounding may differ too: rank 0's optimizer control (norm, clip, skip, bias
  // corrections) is adopted every step (adoptRankZero), and checkIdentical re-synchronises the parameters
  // from rank 0 instead of requiring identical hashes.
  bool alike = true;
};

class DataParallel {
public:
  using Clock = std::chrono::steady_clock;
  // `extraFloats`: the most f32 values averageGradients() averages beside the gradients (the losses).
  DataParallel(vk::Context& ctx, Communicator& comm, const std::vector<model::ParameterGroup>& groups,
               uint64_t bucketBytes, uint32_t extraFloats, PeerOptions options = {});

  Communicator& comm() { return comm_; }
  // The gradients travel through host memory every rank of this host maps, read and written by the GPUs
  // themselves (a shared window imported as a buffer), instead of through copies on the host.
  bool zeroCopy() const { return window_ != nullptr; }
  // The step about to be recorded or replayed uses token set `set` (0 or 1): the window half it writes.
  void beginStep(uint32_t set) { set_ = set % 2; }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  bool alike() const { return options_.alike; }
  void setWeight(double weight) { options_.weight = weight; }
  // `values` replaced by the sum over the ranks of each rank's values times its weight (losses).
  void sumWeighted(std::span<float> values, const char* what);

  // Replaces every group's gradient by its sum over the ranks (each rank's backward scaled its own by its
  // weight, so the sum is the mean over the global batch, and a gradient overflows in f16 on N ranks where it
  // would in one process), and `losses` (f32) by their weighted sum. Waits for the GPU's backward; records
  // the copies back. Returns when this rank's gradients were ready on the host (the rest was the exchange).
  Clock::time_point reduceGradients(graph::GraphExecutor& g, const vk::BufferRange& losses, uint64_t step);
  // The overlapped exchange. The gradient ranges of the buckets, in bucket order (what findLastWrites
  // watches); the cuts for the backward's recording once planOverlap has their last writes (atCut records the
  // copies into the staging through `g`); the exchange, waiting for each cut's part (`step` names it in the
  // trace). reduceGradients and reduceOverlapped give the same bits.
  std::vector<vk::BufferRange> bucketRanges() const;
  void planOverlap(graph::GraphExecutor& g, std::span<const uint64_t> lastWrites);
  bool overlapPlanned() const { return !cuts_.after.empty(); }
  void forgetOverlap() { cuts_ = {}, plan_ = {}; } // the step's recording changed (another batch split)
  const graph::Cuts& cuts() const { return cuts_; }
  Clock::time_point reduceOverlapped(graph::GraphExecutor& g, const vk::BufferRange& losses, uint64_t step);
  // Appends one JSON line per exchange to `path` (a measurement aid, not a test): when each cut's buckets
  // were ready and exchanged and when the backward ended, in ms since the exchange began.
  void traceTo(const std::filesystem::path& path);

  // Rank 0's parameters and AdamW moments to every rank.
  void broadcastState(graph::GraphExecutor& g);
  // Throws Error naming the ranks when their parameter values differ (a hash of every group's bytes). Unlike
  // devices: ranks whose parameters differ take rank 0's parameters and moments, after checking that they
  // differ by rounding only (else Error).
  void checkIdentical(graph::GraphExecutor& g, uint64_t step);
  // Unlike devices, after the optimizer's control dispatch: rank 0's values of these small ranges (the
  // control and the step's record) replace every other rank's, so every rank applies the same update.
  void adoptRankZero(graph::GraphExecutor& g, std::span<const vk::BufferRange> ranges);

private:
  struct Piece {
    vk::BufferRange range; // f32 values on the device
    uint64_t stage = 0;    // first float in the staging buffers
    uint32_t count = 0;
  };
  Piece bucketPiece(size_t b) const;
  Piece lossPiece(const vk::BufferRange& losses) const;
  std::span<float> toHost(graph::GraphExecutor& g, std::span<const Piece> pieces); // waits for the copies
  std::span<float> forHost(graph::GraphExecutor& g, uint64_t floats);    // to overwrite (waits for GPU reads)
  void fromHost(graph::GraphExecutor& g, std::span<const Piece> pieces); // records the copies
  uint64_t parameterHash(graph::GraphExecutor& g);
  void resynchronise(graph::GraphExecutor& g, uint64_t step); // rank 0's state, differences checked
  void openWindow(vk::Context& ctx);
  // Floats [first, first + count) of `rank`'s segment, in the current half, as a buffer range.
  vk::BufferRange windowRange(int rank, uint64_t first, uint64_t count) const;
  uint64_t half() const { return set_ * half_; }
  void toWindow(graph::GraphExecutor& g, uint32_t bucket); // records the copy into this rank's segment
  void sumInWindow(std::span<const uint32_t> buckets);     // collective
  void fromWindow(graph::GraphExecutor& g);                // records the copies of the summed slices back
  void averageLosses(graph::GraphExecutor& g, const vk::BufferRange& losses);
  void writeTrace(uint64_t step, bool overlapped, const std::vector<double>& ready,
                  const std::vector<double>& exchanged, double backwardEnd);

  Communicator& comm_;
  PeerOptions options_;
  const std::vector<model::ParameterGroup>& groups_;
  std::vector<Bucket> buckets_;
  uint64_t extraStage_ = 0;
  vk::Buffer stage_; // host-visible and coherent (MemoryKind::Readback), both ways
  // Zero-copy exchange: the window, imported whole. Each segment holds two halves, one per token set (steps
  // alternate sets), so a rank's GPU writes one half while a slower rank's GPU may still read the other.
  SharedWindow* window_ = nullptr;
  vk::ImportedHostBuffer windowBuffer_;
  uint64_t bufferLead_ = 0;  // floats from the imported buffer's start to segment 0
  uint64_t segmentLead_ = 0; // floats from a segment's start to its first descriptor-aligned float
  uint64_t half_ = 0;        // floats per half
  uint32_t set_ = 0;
  uint32_t alignFloats_ = 1;
  graph::CutPlan plan_;
  graph::Cuts cuts_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> trace_{nullptr, &std::fclose};
};

// A 64-bit hash of the bytes of `values` (FNV-1a over 64-bit words).
uint64_t hashValues(std::span<const float> values);

} // namespace helios::dist
