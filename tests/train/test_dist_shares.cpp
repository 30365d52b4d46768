// engine/dist's share policy without mpirun: --share parsing and its refusals, whole-row splits, the balance
// model's proposals (who gets how many rows, who is left out) and the Balancer's decisions against a
// scripted peer. Pure functions; no device.
#include "engine/dist/balancer.hpp"
#include "support/random.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstring>
#include <numeric>
#include <random>

using namespace helios;
using Catch::Matchers::ContainsSubstring;

namespace {

uint32_t sum(const std::vector<uint32_t>& v) {
  return std::accumulate(v.begin(), v.end(), 0u);
}

// Rank 0 of 2 whose peer reports `peerBusy` / `peerWait` ms as its step times.
class TimingPeer final : public dist::Communicator {
public:
  double peerBusy = 0, peerWait = 0;
  int rank() const override { return 0; }
  int size() const override { return 2; }
  int localRank() const override { return 0; }
  int localSize() const override { return 2; }
  void allreduceSum(std::span<float>, const char*) override {}
  void broadcast(std::span<std::byte>, const char*) override {}
  std::vector<uint64_t> allgather(uint64_t value, const char*) override { return {value, value}; }
  std::vector<std::byte> allgatherBytes(std::span<const std::byte> mine, const char*) override {
    REQUIRE(mine.size() == 2 * sizeof(double));
    std::vector<std::byte> all(mine.begin(), mine.end());
    const double peer[2] = {peerBusy, peerWait};
    all.resize(2 * mine.size());
    std::memcpy(all.data() + mine.size(), peer, sizeof(peer));
    return all;
  }
  [[noreturn]] void abort(int) override { throw std::logic_error("abort"); }
  std::string describe() const override { return "timing rank 0 of 2"; }
};

} // namespace

TEST_CASE("dist: --share is auto, even or one positive number per rank; others are refused by name",
          "[train][dist]") {
  CHECK(dist::parseShareSpec("auto").mode == dist::ShareMode::Measured);
  CHECK(dist::parseShareSpec("even").mode == dist::ShareMode::Even);
  const dist::ShareSpec hand = dist::parseShareSpec("7,1.5");
  CHECK(hand.mode == dist::ShareMode::Hand);
  CHECK(hand.weights == std::vector<double>{7.0, 1.5});
  CHECK(dist::resolveMode({}, true) == dist::ShareMode::Even);
  CHECK(dist::resolveMode({}, false) == dist::ShareMode::Measured);
  CHECK(dist::resolveMode(hand, false) == dist::ShareMode::Hand);
  CHECK_THROWS_WITH(dist::parseShareSpec("3,0"),
                    ContainsSubstring("share 2 is 0: every rank needs a positive"));
  CHECK_THROWS_WITH(dist::parseShareSpec("-1,2"), ContainsSubstring("share 1 is -1"));
  for (const char* bad : {"1,x", "1,,2", "nan", "inf", "", "1,2,", "2 "})
    CHECK_THROWS_WITH(dist::parseShareSpec(bad), ContainsSubstring("is not a number"));
}

TEST_CASE("dist: shares become whole rows of every micro-batch, each rank at least one", "[train][dist]") {
  CHECK(dist::initialRows(dist::parseShareSpec("7,1"), dist::ShareMode::Hand, 2, 8) ==
        std::vector<uint32_t>{7, 1});
  CHECK(dist::initialRows(dist::parseShareSpec("2,1"), dist::ShareMode::Hand, 2, 6) ==
        std::vector<uint32_t>{4, 2});
  CHECK(dist::initialRows({}, dist::ShareMode::Even, 3, 7) == std::vector<uint32_t>{3, 2, 2});
  CHECK(dist::initialRows({}, dist::ShareMode::Measured, 4, 6) == std::vector<uint32_t>{2, 2, 1, 1});
  CHECK_THROWS_WITH(
      dist::initialRows(dist::parseShareSpec("7,1"), dist::ShareMode::Hand, 2, 6),
      ContainsSubstring("--share 7,1: rank 1's share (1 of 8) of a micro-batch of 6 sequences is "
                        "0.75 sequences, less than one"));
  CHECK_THROWS_WITH(dist::initialRows(dist::parseShareSpec("1,1,1"), dist::ShareMode::Hand, 2, 6),
                    ContainsSubstring("--share 1,1,1 lists 3 shares for 2 ranks"));
  CHECK_THROWS_WITH(dist::initialRows(dist::parseShareSpec("1,1"), dist::ShareMode::Hand, 1, 6),
                    ContainsSubstring("lists 2 shares for 1 rank:"));
  CHECK_THROWS_WITH(dist::initialRows({}, dist::ShareMode::Even, 4, 3),
                    ContainsSubstring("--batch 3 over 4 ranks: each rank needs at least one sequence"));
  // Random weights: the rows add up to the batch, each within one row of its exact part.
  std::uniform_real_distribution<double> weight(0.2, 5.0);
  for (int trial = 0; trial < 200; ++trial) {
    const uint32_t ranks = 2 + uint32_t(trial % 5), batch = 20 + uint32_t(trial % 37);
    std::vector<double> w(ranks);
    for (double& x : w)
      x = weight(test::rng());
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    std::vector<uint32_t> rows;
    try {
      rows = dist::rowsFromWeights(batch, w);
    } catch (const std::invalid_argument&) {
      CHECK(*std::min_element(w.begin(), w.end()) * batch / total < 1.0); // refused only below one row
      continue;
    }
    REQUIRE(sum(rows) == batch);
    for (size_t r = 0; r < ranks; ++r) {
      CHECK(rows[r] >= 1);
      CHECK(std::abs(double(rows[r]) - batch * w[r] / total) < 1.0);
    }
  }
  // Measured shares start CPU ranks beside GPUs at one row; all alike: even.
  CHECK(dist::measuredStart(64, {false, true}) == std::vector<uint32_t>{63, 1});
  CHECK(dist::measuredStart(10, {true, false, false}) == std::vector<uint32_t>{1, 5, 4});
  CHECK(dist::measuredStart(6, {true, true}) == std::vector<uint32_t>{3, 3});
  CHECK(dist::measuredStart(7, {false, false, false}) == std::vector<uint32_t>{3, 2, 2});
  const std::vector<uint32_t> split{3, 0, 4};
  CHECK(dist::rowsOf(split, 2).first == 3);
  CHECK(dist::rowsOf(split, 2).count == 4);
  CHECK(dist::describeRows(split) == "3+0+4");
}

TEST_CASE("dist: the balanced split minimises the slowest rank's time, whole rows, every member one at least",
          "[train][dist]") {
  CHECK(dist::balancedRows(8, std::vector<double>{3.0, 1.0}, {true, true}) == std::vector<uint32_t>{6, 2});
  CHECK(dist::balancedRows(8, std::vector<double>{1000.0, 1.0}, {true, true}) == std::vector<uint32_t>{7, 1});
  CHECK(dist::balancedRows(9, std::vector<double>{1.0, 1.0, 1.0}, {true, false, true}) ==
        std::vector<uint32_t>{5, 0, 4});
  // Against every split of a small batch over 3 ranks: none has a smaller slowest time.
  const std::vector<double> speed{2.5, 1.0, 0.7};
  const std::vector<uint32_t> best = dist::balancedRows(12, speed, {true, true, true});
  const double bestMs = dist::predictStepMs(best, speed, 0);
  for (uint32_t a = 1; a < 12; ++a)
    for (uint32_t b = 1; a + b < 12; ++b)
      CHECK(dist::predictStepMs(std::vector<uint32_t>{a, b, 12 - a - b}, speed, 0) >= bestMs - 1e-12);
  CHECK(dist::predictStepMs(std::vector<uint32_t>{4, 0}, std::vector<double>{2.0, 1.0}, 5.0) == 2.0); // alone
  CHECK(dist::predictStepMs(std::vector<uint32_t>{4, 2}, std::vector<double>{2.0, 1.0}, 5.0) == 7.0);
}

TEST_CASE("dist: the proposal moves rows to the faster rank and leaves out one that costs more than it adds",
          "[train][dist]") {
  // A GPU beside lavapipe, measured at an even split of 64: 6 ms against 5 s; the exchange 3 ms.
  const std::vector<dist::RankTiming> gpuCpu{{32, 6.0, 5000.0}, {32, 5006.0, 3.0}};
  CHECK(dist::exchangeMs(gpuCpu) == 3.0);
  CHECK(dist::measuredStepMs(gpuCpu) == 5009.0);
  const dist::Proposal p = dist::propose(64, gpuCpu, {});
  CHECK(p.rows == std::vector<uint32_t>{64, 0});
  CHECK(p.slow == std::vector<size_t>{1});
  CHECK(std::abs(p.predictedMs - 12.0) < 1e-9); // 64 rows at 32 per 6 ms, no exchange
  CHECK(p.keptMs > 150.0);                      // one row on the CPU takes 156 ms
  dist::BalanceOptions keep;
  keep.exclude = false;
  const dist::Proposal kept = dist::propose(64, gpuCpu, keep);
  CHECK(kept.rows == std::vector<uint32_t>{63, 1}); // reported, not left out
  CHECK(kept.slow == std::vector<size_t>{1});
  // Two GPUs, one 3x slower: both train, 3:1; the exchange is worth it.
  const dist::Proposal two =
      dist::propose(16, std::vector<dist::RankTiming>{{8, 10.0, 21.0}, {8, 30.0, 1.0}}, {});
  CHECK(two.rows == std::vector<uint32_t>{12, 4});
  CHECK(two.slow.empty());
  // Rank 0 writes the run: never left out, however slow.
  const dist::Proposal first =
      dist::propose(8, std::vector<dist::RankTiming>{{4, 900.0, 1.0}, {4, 1.0, 900.0}}, {});
  CHECK(first.rows[0] >= 1);
  CHECK(first.slow.empty());
  // Three ranks, the third hopeless: it alone is left out, the other two still share.
  const dist::Proposal three = dist::propose(
      12, std::vector<dist::RankTiming>{{4, 10.0, 990.0}, {4, 12.0, 988.0}, {4, 998.0, 2.0}}, {});
  CHECK(three.rows[2] == 0);
  CHECK(three.rows[0] + three.rows[1] == 12);
  CHECK(three.rows[1] >= 1);
  CHECK(three.slow == std::vector<size_t>{2});
}

TEST_CASE(
    "dist: a proposal is applied only when it promises enough, and never flaps back to a split measured "
    "slower",
    "[train][dist]") {
  dist::Proposal p;
  p.rows = {5, 3};
  p.measuredMs = 100;
  p.predictedMs = 97; // 3% better: within the hysteresis
  CHECK_FALSE(dist::worthApplying(p, std::vector<uint32_t>{4, 4}, {}, 0.05));
  p.predictedMs = 80;
  CHECK(dist::worthApplying(p, std::vector<uint32_t>{4, 4}, {}, 0.05));
  CHECK_FALSE(dist::worthApplying(p, std::vector<uint32_t>{5, 3}, {}, 0.05)); // already there
  dist::SplitHistory history{{{5, 3}, 99.0}};                                 // tried: hardly faster
  CHECK_FALSE(dist::worthApplying(p, std::vector<uint32_t>{4, 4}, history, 0.05));
  history[{5, 3}] = 70.0; // tried and clearly faster
  CHECK(dist::worthApplying(p, std::vector<uint32_t>{4, 4}, history, 0.05));
}

TEST_CASE("dist: the Balancer measures after settling, moves measured shares, keeps set ones and warns once",
          "[train][dist]") {
  const std::vector<int> members{0, 1};
  dist::BalanceOptions options;
  options.settleSteps = 2;
  options.windowSteps = 3;
  TimingPeer peer;
  peer.peerBusy = 30.0; // the peer: 4 rows in 30 ms; this rank: 4 in 10 ms
  peer.peerWait = 1.0;
  dist::Balancer measured(dist::ShareMode::Measured, options, 8, {4, 4});
  for (int step = 0; step < 4; ++step) {
    measured.observe(step < 2 ? 500.0 : 10.0, 21.0); // the settling steps' times are not counted
    CHECK_FALSE(measured.due());
  }
  measured.observe(10.0, 21.0);
  REQUIRE(measured.due());
  dist::Balancer::Outcome o = measured.conclude(peer, members);
  CHECK(o.timing[0].busyMs == 10.0);
  CHECK(o.timing[1].busyMs == 30.0);
  CHECK(o.changed);
  CHECK(measured.rows() == std::vector<uint32_t>{6, 2});
  CHECK_FALSE(measured.due());
  // At 6:2 both take 15 ms: balanced, nothing moves however often it is measured.
  peer.peerBusy = 15.0;
  for (int window = 0; window < 3; ++window) {
    for (uint32_t step = 0; step < (window == 0 ? 5u : 3u); ++step)
      measured.observe(15.0, 1.0);
    REQUIRE(measured.due());
    CHECK_FALSE(measured.conclude(peer, members).changed);
  }

  // Shares by hand stay as set; a rank that costs more than it adds is reported once.
  dist::Balancer hand(dist::ShareMode::Hand, options, 8, {4, 4});
  peer.peerBusy = 40000.0;
  for (int window = 0; window < 2; ++window) {
    for (uint32_t step = 0; step < (window == 0 ? 5u : 3u); ++step)
      hand.observe(10.0, 39990.0);
    o = hand.conclude(peer, members);
    CHECK_FALSE(o.changed);
    CHECK(o.newlySlow == (window == 0 ? std::vector<size_t>{1} : std::vector<size_t>{}));
    CHECK(hand.rows() == std::vector<uint32_t>{4, 4});
  }
}
