// Barriers under a memory plan, on made-up steps (pure logic, no device): dispatches write new temporaries
// and read recent ones beside a parameter buffer, as a network's step does. Planned in barrier epochs, the
// placed step needs exactly the barriers of the step without reuse; planned in dispatches (reuse as soon as
// a temporary is dead) it needs more. Both plans are valid in dispatches and about as small.
#include "engine/graph/step_plan.hpp"

#include <catch2/catch_test_macros.hpp>
#include <random>

using namespace helios;
using namespace helios::graph;
using ops::Access;

namespace {

constexpr uint64_t kAlign = 256;

uint64_t alignUp(uint64_t v) {
  return (std::max<uint64_t>(v, 1) + kAlign - 1) / kAlign * kAlign;
}

VkBuffer handle(uintptr_t id) {
  return reinterpret_cast<VkBuffer>(id);
}

struct MadeUpStep {
  DispatchLog log;
  std::vector<StepArena::Request> requests; // in the virtual buffer, one after another
  std::vector<Lifetime> lifetimes;          // in dispatches
};

const VkBuffer kVirtual = handle(0x1000), kParams = handle(0x2000);

// n dispatches; dispatch i writes temporary i (a random size) and reads one to three of the last few, and
// now and then reads or accumulates into a slice of the parameter buffer.
MadeUpStep randomStep(std::mt19937_64& rng, size_t n) {
  MadeUpStep s;
  for (size_t i = 0; i < n; ++i) {
    const VkDeviceSize at =
        s.requests.empty() ? 0 : s.requests.back().offset + alignUp(s.requests.back().bytes);
    s.requests.push_back({at, rng() % 20000 + 1, "t"});
    s.lifetimes.push_back({s.requests.back().bytes, i, i});
  }
  for (size_t i = 0; i < n; ++i) {
    std::vector<ops::Binding> b{{{kVirtual, s.requests[i].offset, s.requests[i].bytes}, Access::Write}};
    for (size_t k = 0, reads = rng() % 3 + (i > 0); k < reads && i > 0; ++k) {
      const size_t j = i - 1 - rng() % std::min<size_t>(i, 6);
      b.push_back({{kVirtual, s.requests[j].offset, s.requests[j].bytes}, Access::Read});
      s.lifetimes[j].last = i;
    }
    if (rng() % 4 == 0)
      b.push_back({{kParams, (rng() % 8) * 1024, 1024}, rng() % 2 ? Access::Read : Access::ReadWrite});
    s.log.add(b);
  }
  return s;
}

uint32_t barriersOf(const DispatchLog& log) {
  const auto e = barrierEpochs(log);
  return e.empty() ? 0 : e.back();
}

uint32_t placedBarriers(const MadeUpStep& s, const MemoryPlan& p) {
  std::vector<VkBuffer> bins;
  for (size_t i = 0; i < p.binBytes.size(); ++i)
    bins.push_back(handle(0x3000 + i));
  return barriersOf(placedLog(s.log, kVirtual, s.requests, p, bins));
}

// Temporaries live at the same dispatch never share a byte of a bin.
void checkValid(const std::vector<Lifetime>& ls, const MemoryPlan& p) {
  for (size_t i = 0; i < ls.size(); ++i)
    for (size_t j = i + 1; j < ls.size(); ++j) {
      const Placement &a = p.placements[i], &b = p.placements[j];
      if (a.bin != b.bin || !ls[i].overlaps(ls[j])) continue;
      INFO("temporaries " << i << " and " << j);
      CHECK((a.offset + alignUp(ls[i].bytes) <= b.offset || b.offset + alignUp(ls[j].bytes) <= a.offset));
    }
}

} // namespace

TEST_CASE(
    "barrier epochs: a barrier before each dispatch that reads, or overwrites, what the stretch touched",
    "[graph][memory-plan]") {
  const auto A = handle(1), B = handle(2);
  DispatchLog log;
  log.add(std::vector<ops::Binding>{{{A, 0, 64}, Access::Write}});
  log.add(std::vector<ops::Binding>{{{B, 0, 64}, Access::Write}});
  log.add(std::vector<ops::Binding>{{{A, 0, 64}, Access::Read}, {{B, 64, 64}, Access::Write}}); // RAW on A
  log.add(std::vector<ops::Binding>{{{B, 0, 64}, Access::Read}});    // B written before
  log.add(std::vector<ops::Binding>{{{A, 32, 8}, Access::Write}});   // WAR on A
  log.add(std::vector<ops::Binding>{{{B, 128, 64}, Access::Write}}); // disjoint
  CHECK(barrierEpochs(log) == std::vector<uint32_t>{0, 0, 1, 1, 2, 2});
  CHECK(barrierEpochs(DispatchLog{}).empty());
}

TEST_CASE("memory plan in barrier epochs: the placed step has the barriers of the step without reuse",
          "[graph][memory-plan]") {
  std::mt19937_64 rng(std::random_device{}());
  uint64_t epochBytes = 0, dispatchBytes = 0;
  uint32_t extraInDispatches = 0;
  for (int round = 0; round < 20; ++round) {
    const MadeUpStep s = randomStep(rng, 150);
    const auto epochs = barrierEpochs(s.log);
    const uint32_t unplanned = barriersOf(s.log);
    const MemoryPlan inEpochPlan = planMemory(inEpochs(s.lifetimes, epochs), 1ull << 20, kAlign);
    const MemoryPlan inDispatchPlan = planMemory(s.lifetimes, 1ull << 20, kAlign);
    checkValid(s.lifetimes, inEpochPlan);
    CHECK(placedBarriers(s, inEpochPlan) == unplanned);
    const uint32_t asSoonAsDead = placedBarriers(s, inDispatchPlan);
    CHECK(asSoonAsDead >= unplanned);
    extraInDispatches += asSoonAsDead - unplanned;
    CHECK(inEpochPlan.totalBytes() >= peakLiveBytes(s.lifetimes, kAlign));
    CHECK(inEpochPlan.totalBytes() * 4 < unplannedBytes(s.lifetimes, kAlign));
    epochBytes += inEpochPlan.totalBytes();
    dispatchBytes += inDispatchPlan.totalBytes();
  }
  CHECK(extraInDispatches > 0); // the made-up steps do tell the two plans apart
  // Waiting for a barrier keeps a temporary's bytes a little longer: a few per cent here.
  CHECK(epochBytes <= dispatchBytes * 13 / 10);
}

TEST_CASE("placed log: only the virtual buffer's ranges move, each by its request's place",
          "[graph][memory-plan]") {
  DispatchLog log;
  log.add(std::vector<ops::Binding>{{{kVirtual, 0, 100}, Access::Write}, {{kParams, 8, 16}, Access::Read}});
  log.add(std::vector<ops::Binding>{{{kVirtual, 256 + 40, 60}, Access::Read}});
  std::vector<StepArena::Request> requests{{0, 100, "a"}, {256, 200, "b"}};
  MemoryPlan plan;
  plan.placements = {{1, 512}, {0, 0}};
  plan.binBytes = {256, 768};
  const std::vector<VkBuffer> bins{handle(0x3000), handle(0x3001)};
  const DispatchLog placed = placedLog(log, kVirtual, requests, plan, bins);
  REQUIRE(placed.bindings.size() == 3);
  CHECK(placed.bindings[0].range.buffer == bins[1]);
  CHECK(placed.bindings[0].range.offset == 512);
  CHECK(placed.bindings[1].range.buffer == kParams);
  CHECK(placed.bindings[1].range.offset == 8);
  CHECK(placed.bindings[2].range.buffer == bins[0]);
  CHECK(placed.bindings[2].range.offset == 40);
  CHECK(placed.bindings[2].range.size == 60);
  CHECK(placed.starts == log.starts);
}

TEST_CASE("memory plan: the plan in epochs is preferred unless over 3% and 16 MiB larger",
          "[graph][memory-plan]") {
  const uint64_t GiB = 1ull << 30, MiB = 1ull << 20;
  CHECK(preferEpochPlan(GiB, GiB));
  CHECK(preferEpochPlan(GiB + GiB / 32, GiB));
  CHECK_FALSE(preferEpochPlan(GiB + GiB / 32 + 1, GiB));
  CHECK(preferEpochPlan(GiB - MiB, GiB)); // greedy plans are not monotone: it may even be smaller
  CHECK(preferEpochPlan(17 * MiB, MiB));  // small plans: 16 MiB more is allowed
  CHECK_FALSE(preferEpochPlan(17 * MiB + 1, MiB));
  CHECK(preferEpochPlan(0, 0));
}
