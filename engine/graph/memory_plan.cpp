#include "engine/graph/memory_plan.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>

namespace helios::graph {

namespace {

uint64_t alignUp(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

struct Placed {
  uint64_t begin, end; // bytes in the bin
  size_t index;        // into the lifetimes
};

// The lowest aligned offset in a bin where `bytes` fit between the ranges of `busy` (sorted by begin), or
// binCap when none below binCap does.
uint64_t lowestGap(const std::vector<const Placed*>& busy, uint64_t bytes, uint64_t binCap, uint64_t align) {
  uint64_t at = 0;
  for (const Placed* p : busy) {
    if (at + bytes <= p->begin) break;
    at = std::max(at, alignUp(p->end, align));
  }
  return at + bytes <= binCap ? at : binCap;
}

} // namespace

uint64_t MemoryPlan::totalBytes() const {
  return std::accumulate(binBytes.begin(), binBytes.end(), uint64_t{0});
}

MemoryPlan planMemory(std::span<const Lifetime> lifetimes, uint64_t binCap, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw std::invalid_argument("planMemory: alignment " + std::to_string(alignment) +
                                " is not a power of two");
  std::vector<size_t> order(lifetimes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lifetimes[a].bytes > lifetimes[b].bytes; });
  MemoryPlan plan;
  plan.placements.resize(lifetimes.size());
  std::vector<std::vector<Placed>> bins;
  for (size_t i : order) {
    const Lifetime& t = lifetimes[i];
    const uint64_t bytes = alignUp(std::max<uint64_t>(t.bytes, 1), alignment);
    if (bytes > binCap)
      throw std::invalid_argument("planMemory: a temporary of " + std::to_string(t.bytes) +
                                  " bytes exceeds the bin capacity of " + std::to_string(binCap));
    size_t bin = 0;
    uint64_t offset = binCap;
    for (; bin < bins.size(); ++bin) {
      std::vector<const Placed*> busy;
      for (const Placed& p : bins[bin])
        if (lifetimes[p.index].overlaps(t)) busy.push_back(&p);
      std::sort(busy.begin(), busy.end(),
                [](const Placed* a, const Placed* b) { return a->begin < b->begin; });
      offset = lowestGap(busy, bytes, binCap, alignment);
      if (offset < binCap) break;
    }
    if (bin == bins.size()) {
      bins.emplace_back();
      offset = 0;
    }
    bins[bin].push_back({offset, offset + bytes, i});
    plan.placements[i] = {static_cast<uint32_t>(bin), offset};
  }
  for (const auto& b : bins) {
    uint64_t end = 0;
    for (const Placed& p : b)
      end = std::max(end, p.end);
    plan.binBytes.push_back(end);
  }
  return plan;
}

namespace {
// (the most bytes live at once, the first dispatch where they are)
std::pair<uint64_t, uint64_t> livePeak(std::span<const Lifetime> lifetimes, uint64_t alignment) {
  std::map<uint64_t, int64_t> delta; // dispatch index -> change of live bytes
  for (const Lifetime& t : lifetimes) {
    if (!t.touched()) continue;
    const int64_t b = static_cast<int64_t>(alignUp(std::max<uint64_t>(t.bytes, 1), alignment));
    delta[t.first] += b;
    delta[t.last + 1] -= b;
  }
  int64_t live = 0, peak = 0;
  uint64_t where = 0;
  for (const auto& [at, d] : delta) {
    live += d;
    if (live > peak) {
      peak = live;
      where = at;
    }
  }
  return {static_cast<uint64_t>(peak), where};
}
} // namespace

uint64_t peakLiveBytes(std::span<const Lifetime> lifetimes, uint64_t alignment) {
  return livePeak(lifetimes, alignment).first;
}

uint64_t peakDispatch(std::span<const Lifetime> lifetimes, uint64_t alignment) {
  return livePeak(lifetimes, alignment).second;
}

std::vector<Lifetime> inEpochs(std::span<const Lifetime> lifetimes, std::span<const uint32_t> epochs) {
  std::vector<Lifetime> out(lifetimes.begin(), lifetimes.end());
  for (Lifetime& l : out) {
    if (!l.touched()) continue;
    if (l.last >= epochs.size())
      throw std::invalid_argument("inEpochs: a lifetime ends at dispatch " + std::to_string(l.last) + " of " +
                                  std::to_string(epochs.size()));
    l.first = epochs[l.first];
    l.last = epochs[l.last];
  }
  return out;
}

bool preferEpochPlan(uint64_t epochPlanBytes, uint64_t dispatchPlanBytes) {
  return epochPlanBytes <= dispatchPlanBytes + std::max<uint64_t>(dispatchPlanBytes / 32, 16ull << 20);
}

uint64_t unplannedBytes(std::span<const Lifetime> lifetimes, uint64_t alignment) {
  uint64_t total = 0;
  for (const Lifetime& t : lifetimes)
    total += alignUp(std::max<uint64_t>(t.bytes, 1), alignment);
  return total;
}

} // namespace helios::graph
