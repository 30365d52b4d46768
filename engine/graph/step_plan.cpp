#include "engine/graph/step_plan.hpp"

#include "engine/graph/lifetime_recorder.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace helios::graph {

uint64_t StepPlan::unplannedBytes() const {
  return graph::unplannedBytes(lifetimes, alignment);
}

uint64_t StepPlan::peakLiveBytes() const {
  return graph::peakLiveBytes(lifetimes, alignment);
}

std::vector<std::pair<std::string, uint64_t>> StepPlan::liveAtPeak() const {
  const uint64_t at = peakDispatch(lifetimes, alignment);
  std::map<std::string, uint64_t> sums;
  for (size_t i = 0; i < lifetimes.size(); ++i)
    if (lifetimes[i].touched() && lifetimes[i].first <= at && at <= lifetimes[i].last)
      sums[names[i]] += lifetimes[i].bytes;
  std::vector<std::pair<std::string, uint64_t>> out(sums.begin(), sums.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

DispatchLog placedLog(const DispatchLog& log, VkBuffer virtualBuffer,
                      const std::vector<StepArena::Request>& requests, const MemoryPlan& plan,
                      std::span<const VkBuffer> binHandles) {
  DispatchLog out = log;
  const auto startsAfter = [](VkDeviceSize at, const StepArena::Request& r) { return at < r.offset; };
  for (ops::Binding& b : out.bindings) {
    if (b.range.buffer != virtualBuffer) continue;
    auto it = std::upper_bound(requests.begin(), requests.end(), b.range.offset, startsAfter);
    if (it == requests.begin()) throw std::logic_error("placedLog: a binding before the first request");
    --it;
    const Placement& p = plan.placements[size_t(it - requests.begin())];
    b.range.buffer = binHandles[p.bin];
    b.range.offset = p.offset + (b.range.offset - it->offset);
  }
  return out;
}

namespace {

// The dry run's dispatches with each temporary moved from its virtual range to its planned place (bin b at
// b << 48 of the virtual buffer), so the census sees the reuse hazards the planned recording will have.
std::vector<DispatchRecord> atPlannedPlaces(std::vector<DispatchRecord> log, VkBuffer virtualBuffer,
                                            const std::vector<StepArena::Request>& requests,
                                            const MemoryPlan& plan) {
  const auto startsAfter = [](VkDeviceSize at, const StepArena::Request& r) { return at < r.offset; };
  for (auto& d : log)
    for (auto& b : d.bindings) {
      if (b.range.buffer != virtualBuffer) continue;
      auto it = std::upper_bound(requests.begin(), requests.end(), b.range.offset, startsAfter);
      if (it == requests.begin()) continue;
      --it;
      const Placement& p = plan.placements[size_t(it - requests.begin())];
      b.range.offset = (uint64_t(p.bin) << 48) + p.offset + (b.range.offset - it->offset);
    }
  return log;
}

uint32_t barrierCount(const DispatchLog& log) {
  const auto epochs = barrierEpochs(log);
  return epochs.empty() ? 0 : epochs.back();
}

} // namespace

uint64_t planBinCap(const vk::Context& ctx, const StepArena& arena) {
  const uint64_t limit = ctx.device().limits().maxStorageBufferRange;
  return limit / arena.alignment() * arena.alignment();
}

StepPlan planStep(vk::Context& ctx, StepArena& arena, const StepRecording& record) {
  LifetimeRecorder recorder(ctx, arena);
  arena.beginRecording();
  std::vector<StepArena::Request> requests;
  try {
    record(recorder);
    requests = arena.endRecording();
  } catch (...) {
    arena.endRecording();
    throw;
  }
  StepPlan p;
  p.lifetimes = recorder.lifetimes(requests);
  for (const auto& r : requests)
    p.names.push_back(r.what);
  p.dispatches = recorder.dispatches();
  p.alignment = arena.alignment();
  const std::vector<uint32_t> epochs = barrierEpochs(recorder.log());
  p.barriers = epochs.empty() ? 0 : epochs.back();
  const uint64_t cap = planBinCap(ctx, arena);
  p.plan = planMemory(inEpochs(p.lifetimes, epochs), cap, arena.alignment());
  MemoryPlan asSoonAsDead = planMemory(p.lifetimes, cap, arena.alignment());
  p.dispatchPlanBytes = asSoonAsDead.totalBytes();
  p.inEpochs = preferEpochPlan(p.plan.totalBytes(), p.dispatchPlanBytes);
  if (!p.inEpochs) p.plan = std::move(asSoonAsDead);
  // Made-up handles for the bins: addresses no Vulkan object has.
  std::vector<char> tags(p.plan.binBytes.size());
  std::vector<VkBuffer> bins;
  for (char& t : tags)
    bins.push_back(reinterpret_cast<VkBuffer>(&t));
  p.plannedBarriers = barrierCount(placedLog(recorder.log(), arena.virtualBuffer(), requests, p.plan, bins));
  p.census = takeCensus(atPlannedPlaces(recorder.records(), arena.virtualBuffer(), requests, p.plan));
  return p;
}

void recordPlanned(ops::Executor& exec, StepArena& arena, const StepPlan& plan, const StepRecording& record) {
  std::vector<VkDeviceSize> sizes(plan.lifetimes.size());
  std::transform(plan.lifetimes.begin(), plan.lifetimes.end(), sizes.begin(),
                 [](const Lifetime& l) { return l.bytes; });
  arena.usePlan(plan.plan, std::move(sizes));
  try {
    record(exec);
  } catch (...) {
    try {
      arena.endPlan();
    } catch (const std::logic_error&) {
      // The recording's own error is the one to report.
    }
    throw;
  }
  arena.endPlan();
}

} // namespace helios::graph
