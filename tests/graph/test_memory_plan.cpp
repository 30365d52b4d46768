// The memory planner as a pure function on made-up lifetimes: temporaries live at the same time never share
// a byte, every place is aligned and inside its bin, bins respect their cap, the plan is deterministic, and
// on chains of short lifetimes it reaches the lower bound (the most bytes live at once).
#include "engine/graph/memory_plan.hpp"

#include <catch2/catch_test_macros.hpp>
#include <random>

using namespace helios::graph;

namespace {

constexpr uint64_t kAlign = 256;

uint64_t alignUp(uint64_t v) {
  return (std::max<uint64_t>(v, 1) + kAlign - 1) / kAlign * kAlign;
}

std::vector<Lifetime> randomLifetimes(std::mt19937_64& rng, size_t n, uint64_t dispatches,
                                      uint64_t maxBytes) {
  std::vector<Lifetime> out(n);
  for (auto& l : out) {
    l.bytes = rng() % maxBytes + 1;
    if (rng() % 16 == 0) continue; // never touched
    l.first = rng() % dispatches;
    l.last = l.first + rng() % (dispatches / 4 + 1);
  }
  return out;
}

// Every pair live at the same time in one bin: disjoint byte ranges. Every place: aligned, inside the bin.
void checkPlan(const std::vector<Lifetime>& ls, const MemoryPlan& p, uint64_t cap) {
  REQUIRE(p.placements.size() == ls.size());
  for (uint64_t b : p.binBytes)
    CHECK(b <= cap);
  for (size_t i = 0; i < ls.size(); ++i) {
    const Placement& a = p.placements[i];
    REQUIRE(a.bin < p.binBytes.size());
    CHECK(a.offset % kAlign == 0);
    CHECK(a.offset + alignUp(ls[i].bytes) <= p.binBytes[a.bin]);
    for (size_t j = i + 1; j < ls.size(); ++j) {
      const Placement& b = p.placements[j];
      if (a.bin != b.bin || !ls[i].overlaps(ls[j])) continue;
      const bool disjoint =
          a.offset + alignUp(ls[i].bytes) <= b.offset || b.offset + alignUp(ls[j].bytes) <= a.offset;
      INFO("temporaries " << i << " and " << j << " are live together");
      CHECK(disjoint);
    }
  }
}

} // namespace

TEST_CASE("memory plan: live temporaries never share bytes, on random lifetimes", "[graph][memory-plan]") {
  std::mt19937_64 rng(std::random_device{}());
  for (int round = 0; round < 20; ++round) {
    const auto ls = randomLifetimes(rng, 200, 500, 100000);
    const uint64_t cap = 1ull << 22;
    const MemoryPlan p = planMemory(ls, cap, kAlign);
    checkPlan(ls, p, cap);
    CHECK(p.totalBytes() >= peakLiveBytes(ls, kAlign));
    CHECK(p.totalBytes() <= unplannedBytes(ls, kAlign));
    const MemoryPlan again = planMemory(ls, cap, kAlign);
    for (size_t i = 0; i < ls.size(); ++i) {
      CHECK(again.placements[i].bin == p.placements[i].bin);
      CHECK(again.placements[i].offset == p.placements[i].offset);
    }
  }
}

TEST_CASE("memory plan: a small cap spreads the temporaries over several bins", "[graph][memory-plan]") {
  std::mt19937_64 rng(std::random_device{}());
  const auto ls = randomLifetimes(rng, 150, 100, 60000);
  const uint64_t cap = 131072; // a few temporaries per bin
  const MemoryPlan p = planMemory(ls, cap, kAlign);
  CHECK(p.binBytes.size() > 1);
  checkPlan(ls, p, cap);
}

TEST_CASE("memory plan: a chain of activations reuses memory down to the live peak", "[graph][memory-plan]") {
  // Forward: x_i written at dispatch i, read at i + 1 (and its gradient at 2n - i): like a network's
  // temporaries, each one dead as soon as its last reader ran. Sizes vary and are not aligned.
  std::vector<Lifetime> ls;
  const uint64_t n = 40;
  for (uint64_t i = 0; i < n; ++i)
    ls.push_back({1000 + 37 * (i % 7), i, i + 1});
  for (uint64_t i = 0; i < n; ++i)
    ls.push_back({5000 + 11 * i, 2 * n - i, 2 * n - i + 1});
  const MemoryPlan p = planMemory(ls, 1ull << 30, kAlign);
  checkPlan(ls, p, 1ull << 30);
  REQUIRE(p.binBytes.size() == 1);
  CHECK(p.totalBytes() == peakLiveBytes(ls, kAlign));
  CHECK(p.totalBytes() * 10 < unplannedBytes(ls, kAlign));
}

TEST_CASE("memory plan: lifetimes that all overlap get disjoint ranges end to end", "[graph][memory-plan]") {
  std::vector<Lifetime> ls{{300, 0, 9}, {256, 2, 3}, {1, 3, 5}, {4096, 0, 4}};
  const MemoryPlan p = planMemory(ls, 1ull << 20, kAlign);
  checkPlan(ls, p, 1ull << 20);
  CHECK(p.totalBytes() == unplannedBytes(ls, kAlign)); // 512 + 256 + 256 + 4096: nothing to reuse
}

TEST_CASE("memory plan: untouched temporaries cost nothing beyond the largest", "[graph][memory-plan]") {
  std::vector<Lifetime> ls{{1000, 0, 1}, {5000, 1, 0}, {700, 1, 0}, {1024, 2, 3}};
  const MemoryPlan p = planMemory(ls, 1ull << 20, kAlign);
  checkPlan(ls, p, 1ull << 20);
  CHECK(p.totalBytes() == alignUp(5000));
}

TEST_CASE("memory plan: refuses a temporary above the cap and a bad alignment", "[graph][memory-plan]") {
  std::vector<Lifetime> ls{{5000, 0, 1}};
  CHECK_THROWS_AS(planMemory(ls, 4096, kAlign), std::invalid_argument);
  CHECK_THROWS_AS(planMemory(ls, 1 << 20, 100), std::invalid_argument);
}
