#pragma once
// Records a whole step -- forward, backward, optimizer -- into a few command buffers with inferred barriers,
// submits them in one vkQueueSubmit2, and lets the GPU run ahead: the CPU waits only when it reads a buffer
// (lazily, for the submission that last wrote it) or when every command buffer in the ring is in flight.
//
// Replay: a segment recorded under a key is kept and re-submitted on later steps without calling the code
// that recorded it (in the spirit of CUDA graphs). The buffers it names must stay allocated (use a
// StepArena); values that change per step belong in device buffers, or in a segment that is recorded fresh
// each step.
#include "engine/graph/arena.hpp"
#include "engine/graph/hazards.hpp"
#include "engine/ops/executor.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace helios::graph {

struct GraphOptions {
  uint32_t maxPendingDispatches = 4096; // a longer recording is split into several command buffers
  uint32_t ring = 3;                    // command buffers (fresh segments) that may be in flight at once
  uint32_t syncEvery = 0;               // debugging: wait for the GPU every N steps (0 = never)
  bool profile = false;                 // GPU timestamp after every dispatch, aggregated per kernel
};

struct StepStats {
  uint32_t submits = 0;    // vkQueueSubmit2 calls
  uint32_t dispatches = 0; // recorded + replayed
  uint32_t barriers = 0;   // recorded + replayed
  uint32_t replayedSegments = 0;
  uint64_t bytesAllocated = 0; // growth of the allocator's reserved bytes during the step
};

// Cuts of a replayable recording into parts: after the recording's after[i]-th dispatch (counted from 1, its
// own dispatches only), atCut(i) records more work into the part that ends there and the next part begins.
// Every part is submitted on its own (its own timeline value) as soon as it is recorded or replayed, so the
// host can wait for the work of an early part while the GPU runs the later ones.
// `final[i]` (optional): ranges no dispatch may write after cut i; the first recording checks it (a cut plan
// from a dry run that no longer matches the recording would otherwise pass values that are not final).
struct Cuts {
  std::vector<uint64_t> after; // strictly increasing
  std::function<void(size_t cut)> atCut;
  std::vector<std::vector<vk::BufferRange>> final;
};

struct KernelProfile {
  std::string name;
  uint64_t calls = 0;
  double totalUs = 0;
};

class GraphExecutor final : public ops::Executor {
public:
  explicit GraphExecutor(vk::Context& ctx, GraphOptions options = {});
  GraphExecutor(const GraphExecutor&) = delete;
  GraphExecutor& operator=(const GraphExecutor&) = delete;
  ~GraphExecutor() override;

  vk::Context& context() override { return ctx_; }
  void dispatch(const vk::Pipeline& pipeline, std::span<const ops::Binding> bindings, const void* push,
                size_t pushBytes, vk::Groups groups) override;
  // Submits everything recorded and waits for the GPU.
  void flush() override;
  // Released when the submission that uses it completes; inside a replayable recording, kept with the replay.
  void retain(vk::Buffer buffer) override;
  // From the arena set by setScratchArena (null: a buffer of its own, as any executor).
  vk::BufferRange scratch(VkDeviceSize bytes, std::string_view what) override;
  // Ops' scratch comes from `arena` while it is set: a step's scratch then repeats with the step (replays of
  // several segments share it) and is planned with the step's temporaries.
  void setScratchArena(StepArena* arena) { scratchArena_ = arena; }

  // A step: stats are collected from begin to end; end submits what was recorded (no wait).
  void beginStep();
  StepStats endStep();
  // Runs `record` the first time `key` is seen and keeps what it recorded; later calls replay it. With
  // `cuts`, the recording is kept in parts, each submitted at once (the cuts must stay the same per key).
  void replayable(const std::string& key, const std::function<void()>& record, const Cuts* cuts = nullptr);
  void forgetReplays(); // e.g. after shapes change
  bool hasReplay(const std::string& key) const { return replays_.count(key) != 0; }

  // Host reads and writes that wait only for the GPU work touching `buffer`.
  // Waits (submitting recorded work first) until the host may use `range` of a host-visible buffer in place:
  // read it (`write` false: GPU writes to it are done) or also write it (every GPU access is done).
  void syncHost(const vk::BufferRange& range, bool write);
  void download(const vk::Buffer& src, std::span<std::byte> dst, VkDeviceSize srcOffset = 0);
  void upload(const vk::Buffer& dst, std::span<const std::byte> src, VkDeviceSize dstOffset = 0);

  std::vector<KernelProfile> profile() const; // sorted by total time, descending
  uint64_t totalSubmits() const { return totalSubmits_; }
  // The timeline value of the latest submission, and a wait for a value already submitted that any thread
  // may call (it reads nothing the recording thread changes), e.g. to note when the GPU finished a part.
  uint64_t submittedValue() const { return submittedValue_; }
  void waitSubmitted(uint64_t value) const;
  const GraphOptions& options() const { return options_; }

private:
  struct Segment {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkQueryPool queries = VK_NULL_HANDLE;
    std::vector<std::string> names; // dispatch names, for profiling
    uint32_t dispatches = 0, barriers = 0;
    uint64_t value = 0; // timeline value of its last submission
    bool replayable = false;
    bool profiled = true;              // its timestamps since the last submission were collected
    std::vector<ops::Binding> touched; // every binding, for lazy host waits after replays
    std::vector<vk::Buffer> retained;  // temporaries a replayable segment's commands use
  };
  struct Use {
    VkDeviceSize begin, end;
    uint64_t lastWrite, lastUse; // timeline values (pendingValue() while still unsubmitted)
  };

  struct Cutting { // the state of a cut recording
    const Cuts* cuts = nullptr;
    std::vector<std::unique_ptr<Segment>>* parts = nullptr;
    uint64_t dispatches = 0; // the recording's own
    size_t next = 0;         // the next cut
    bool inAtCut = false;
  };

  Segment& openSegment();
  void beginReplayableSegment(Segment& seg);
  void cutHere();
  void checkNotFinal(const vk::Pipeline& pipeline, std::span<const ops::Binding> bindings) const;
  void replay(std::vector<std::unique_ptr<Segment>>& parts, bool submitEach);
  std::unique_ptr<Segment> newSegment(bool replayable);
  void destroySegment(Segment& seg);
  void closeSegment();
  void submitPending();
  void waitValue(uint64_t value);
  uint64_t completedValue() const;
  uint64_t pendingValue() const { return submittedValue_ + 1; }
  void noteUses(std::span<const ops::Binding> bindings, uint64_t value);
  uint64_t lastValueFor(const vk::BufferRange& range, bool writesOnly) const;
  void collectProfile(Segment& seg);
  void recordBarrier(Segment& seg);
  void releaseCompleted();

  vk::Context& ctx_;
  GraphOptions options_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  uint64_t submittedValue_ = 0;
  HazardTracker hazards_;
  StepArena* scratchArena_ = nullptr;

  std::vector<std::unique_ptr<Segment>> freshRing_; // fresh (one-time) segments, reused round-robin
  size_t ringNext_ = 0;
  std::map<std::string, std::vector<std::unique_ptr<Segment>>> replays_; // a recording's parts, in order
  Cutting cutting_;
  Segment* recording_ = nullptr;  // the open segment
  std::vector<Segment*> pending_; // closed, not yet submitted, in order
  std::unordered_map<VkBuffer, std::vector<Use>> uses_;
  std::vector<std::pair<uint64_t, vk::Buffer>> retained_; // (timeline value that frees it, buffer)

  StepStats step_;
  bool inStep_ = false;
  uint64_t stepStartReserved_ = 0;
  uint64_t steps_ = 0, totalSubmits_ = 0;
  std::map<std::string, KernelProfile> profile_;
};

} // namespace helios::graph
