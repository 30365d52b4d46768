#include "engine/graph/lifetime_recorder.hpp"

#include <algorithm>

namespace helios::graph {

void LifetimeRecorder::dispatch(const vk::Pipeline& pipeline, std::span<const ops::Binding> bindings,
                                const void*, size_t, vk::Groups groups) {
  if (groups.x == 0 || groups.y == 0 || groups.z == 0) return; // the graph records nothing for it either
  log_.add(bindings);
  records_.push_back({pipeline.name, std::vector<ops::Binding>(bindings.begin(), bindings.end())});
  for (const auto& b : bindings)
    if (b.range.buffer == arena_.virtualBuffer())
      touches_.push_back(
          {b.range.offset, b.range.offset + std::max<VkDeviceSize>(b.range.size, 1), dispatches_});
  ++dispatches_;
}

std::vector<Lifetime> LifetimeRecorder::lifetimes(const std::vector<StepArena::Request>& requests) const {
  std::vector<Lifetime> out(requests.size());
  for (size_t i = 0; i < requests.size(); ++i)
    out[i].bytes = requests[i].bytes;
  // Requests lie one after another in the virtual buffer: the first one a touch reaches is the last one
  // starting at or before it; the touch marks every request its range overlaps.
  const auto startsAfter = [](VkDeviceSize at, const StepArena::Request& r) { return at < r.offset; };
  for (const Touch& t : touches_) {
    auto it = std::upper_bound(requests.begin(), requests.end(), t.begin, startsAfter);
    if (it != requests.begin()) --it;
    for (; it != requests.end() && it->offset < t.end; ++it) {
      if (it->offset + std::max<VkDeviceSize>(it->bytes, 1) <= t.begin) continue;
      Lifetime& l = out[size_t(it - requests.begin())];
      if (!l.touched()) l.first = t.dispatch;
      l.first = std::min(l.first, t.dispatch);
      l.last = std::max(l.last, t.dispatch);
    }
  }
  return out;
}

} // namespace helios::graph
