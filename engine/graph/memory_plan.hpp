#pragma once
// The offline memory planner: given each step temporary's size and lifetime (the first and last dispatch
// that touches it), it places the temporaries in a few bins (buffers of at most `binCap` bytes) so that two
// temporaries share bytes only when their lifetimes are disjoint. Pure logic: no Vulkan calls.
//
// Greedy by size: the largest temporary is placed first, each at the lowest aligned offset of the first bin
// where it overlaps no placed temporary that is live at the same time. Deterministic for a given input.
#include <cstdint>
#include <span>
#include <vector>

namespace helios::graph {

struct Lifetime {
  uint64_t bytes = 0;
  // Dispatch indices, inclusive. first > last: never touched (it may go anywhere).
  uint64_t first = 1, last = 0;
  bool touched() const { return first <= last; }
  bool overlaps(const Lifetime& o) const {
    return touched() && o.touched() && first <= o.last && o.first <= last;
  }
};

struct Placement {
  uint32_t bin = 0;
  uint64_t offset = 0;
};

struct MemoryPlan {
  std::vector<Placement> placements; // one per lifetime, in input order
  std::vector<uint64_t> binBytes;    // each bin's size (its highest end, aligned)
  uint64_t totalBytes() const;
};

// Throws std::invalid_argument when a temporary is larger than binCap or alignment is not a power of two.
MemoryPlan planMemory(std::span<const Lifetime> lifetimes, uint64_t binCap, uint64_t alignment);

// The lifetimes counted in barrier epochs instead of dispatches (epochs[d]: the barriers up to dispatch d, as
// graph::barrierEpochs gives them). Planned in epochs, two temporaries share bytes only when a barrier the
// step has anyway lies between the last use of one and the first use of the other, so the reuse adds no
// barrier: the planned step has the barriers of the step without reuse.
std::vector<Lifetime> inEpochs(std::span<const Lifetime> lifetimes, std::span<const uint32_t> epochs);

// Whether the plan in epochs (no new barrier) is taken over the plan in dispatches (reuse as soon as a
// temporary is dead, each reuse within a barrier-free stretch adding a barrier): unless it needs more than
// 1/32 (3%) more bytes, and more than 16 MiB more (a small model's plan is a few MiB: waiting for barriers
// may cost it a large fraction of those).
bool preferEpochPlan(uint64_t epochPlanBytes, uint64_t dispatchPlanBytes);

// The most bytes live at any one dispatch: no plan can be smaller (a lower bound for tests and reports).
uint64_t peakLiveBytes(std::span<const Lifetime> lifetimes, uint64_t alignment);
// The first dispatch at which that many bytes are live (0 when nothing is touched).
uint64_t peakDispatch(std::span<const Lifetime> lifetimes, uint64_t alignment);

// The bytes of a plan with no reuse at all (every temporary its own range), aligned as the plan's.
uint64_t unplannedBytes(std::span<const Lifetime> lifetimes, uint64_t alignment);

} // namespace helios::graph
