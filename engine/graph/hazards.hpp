#pragma once
// Decides where barriers go. Dispatches are appended in order with the buffer ranges they read and write;
// a barrier is needed before a dispatch only when it touches a range that an earlier dispatch since the last
// barrier wrote (read-after-write, write-after-write) or read (write-after-read). One barrier then covers
// every buffer, so independent dispatches share a barrier-free stretch. Pure logic: no Vulkan calls.
#include "engine/ops/executor.hpp"

#include <span>
#include <vector>

namespace helios::graph {

class HazardTracker {
public:
  // True when `bindings` conflict with work recorded since the last barrier.
  bool needsBarrier(std::span<const ops::Binding> bindings) const;
  // Adds a dispatch's accesses to the current barrier-free stretch.
  void record(std::span<const ops::Binding> bindings);
  // A barrier was recorded: everything before it is visible to everything after it.
  void barrier();
  bool empty() const { return reads_.empty() && writes_.empty(); }

private:
  struct Range {
    VkBuffer buffer;
    VkDeviceSize begin, end;
  };
  static bool overlaps(const std::vector<Range>& set, const Range& r);
  std::vector<Range> reads_, writes_;
};

// A recorded sequence of dispatches as the hazard tracker sees them (a dry run's, for planning).
struct DispatchLog {
  std::vector<ops::Binding> bindings; // every dispatch's bindings, one dispatch after another
  std::vector<size_t> starts;         // dispatch i binds bindings[starts[i]] up to the next start
  void add(std::span<const ops::Binding> b);
  size_t size() const { return starts.size(); }
  std::span<const ops::Binding> dispatch(size_t i) const;
};

// epochs[i]: how many barriers HazardTracker puts before dispatch i, the one just before it included,
// starting from a barrier (as a recorded segment does). Two dispatches with the same epoch share a
// barrier-free stretch; the last epoch is the segment's barrier count between its dispatches.
std::vector<uint32_t> barrierEpochs(const DispatchLog& log);

} // namespace helios::graph
