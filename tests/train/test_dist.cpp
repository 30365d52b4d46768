// engine/dist without mpirun: the bucket plan (pure), and DataParallel against a scripted communicator that
// plays rank 1 of 2 (the other rank's contributions are known), on a bigram model's parameter groups.
#include "common.hpp"
#include "engine/dist/data_parallel.hpp"
#include "engine/ops/elementwise.hpp"
#include "support/random.hpp"

#include <algorithm>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>
#include <numeric>

using namespace helios;
using Catch::Matchers::ContainsSubstring;

namespace {

// Rank 1 of 2 whose peer sends `peer` (the same length as every summed buffer), broadcasts `root`, and
// reports `peerHash` as rank 0's parameter hash (nullopt: the same as ours).
class ScriptedPeer final : public dist::Communicator {
public:
  std::vector<float> peer, root;
  std::optional<uint64_t> peerHash;
  int rank() const override { return 1; }
  int size() const override { return 2; }
  int localRank() const override { return 1; }
  int localSize() const override { return 2; }
  void allreduceSum(std::span<float> data, const char*) override {
    for (size_t i = 0; i < data.size(); ++i)
      data[i] = peer[offset_ + i] + data[i]; // rank order: rank 0's value first
    offset_ += data.size();
  }
  void broadcast(std::span<std::byte> data, const char*) override {
    std::memcpy(data.data(), root.data() + rootOffset_, data.size());
    rootOffset_ += data.size() / 4;
  }
  std::vector<uint64_t> allgather(uint64_t value, const char*) override {
    return {peerHash.value_or(value), value};
  }
  [[noreturn]] void abort(int) override { throw std::logic_error("abort"); }
  std::string describe() const override { return "scripted rank 1 of 2"; }
  void rewind() { offset_ = rootOffset_ = 0; }

private:
  size_t offset_ = 0, rootOffset_ = 0;
};

// Rank 1 of 2 whose peer holds, for every value of ours, 2x + 1: a sum shows which value was sent, and a
// bucket summed twice or not at all shows too. Notes the float count of every exchange in order.
class DoublingPeer final : public dist::Communicator {
public:
  std::vector<size_t> exchanges;
  static float peerOf(float x) { return 2.0f * x + 1.0f; }
  int rank() const override { return 1; }
  int size() const override { return 2; }
  int localRank() const override { return 1; }
  int localSize() const override { return 2; }
  void allreduceSum(std::span<float> data, const char*) override {
    exchanges.push_back(data.size());
    for (float& x : data)
      x = peerOf(x) + x;
  }
  void broadcast(std::span<std::byte>, const char*) override {}
  std::vector<uint64_t> allgather(uint64_t value, const char*) override { return {value, value}; }
  [[noreturn]] void abort(int) override { throw std::logic_error("abort"); }
  std::string describe() const override { return "doubling rank 1 of 2"; }
};

// Rank 1 of 2 (ScriptedPeer) on a bigram model's parameter groups, with `lossFloats` losses on the device.
struct PeerRank {
  vk::Context& ctx = test::trainCtx();
  train::BigramModel model{ctx, 37, 5};
  const std::vector<helios::model::ParameterGroup>& groups = model.parameterGroups();
  graph::GraphExecutor g{ctx};
  ScriptedPeer comm;
  uint32_t lossFloats;
  vk::Buffer losses;
  explicit PeerRank(uint32_t floats) : lossFloats(floats), losses(ctx.buffer(4 * floats, "test losses")) {}
};

void write(graph::GraphExecutor& g, const vk::BufferRange& dst, const std::vector<float>& v) {
  auto& ctx = g.context();
  vk::Buffer up = ctx.buffer(4 * v.size(), "test upload", vk::MemoryKind::Upload);
  g.upload(up, std::as_bytes(std::span<const float>(v)));
  ops::copy(g, up.range(), dst, static_cast<uint32_t>(v.size()));
  g.flush();
}

std::vector<float> read(graph::GraphExecutor& g, const vk::BufferRange& src, uint32_t n) {
  vk::Buffer down = g.context().buffer(4ull * n, "test readback", vk::MemoryKind::Readback);
  ops::copy(g, src, down.range(), n);
  std::vector<float> v(n);
  g.download(down, std::as_writable_bytes(std::span<float>(v)));
  return v;
}

} // namespace

TEST_CASE("dist: buckets cover every gradient once, last group first, on aligned starts", "[train][dist]") {
  const std::vector<uint32_t> groups{10, 0, 37, 64, 5};
  const auto buckets = dist::planBuckets(groups, 18, 4); // cap rounds down to 16
  std::vector<std::vector<int>> seen(groups.size());
  for (size_t g = 0; g < groups.size(); ++g)
    seen[g].assign(groups[g], 0);
  uint64_t stageEnd = 0;
  uint32_t lastGroup = uint32_t(groups.size());
  for (const auto& b : buckets) {
    CHECK(b.count > 0);
    CHECK(b.count <= 16);
    CHECK(b.first % 4 == 0);
    CHECK(b.stage % 4 == 0);
    CHECK(b.stage >= stageEnd); // staging regions do not overlap
    stageEnd = b.stage + b.count;
    CHECK(b.group <= lastGroup); // groups in reverse order
    lastGroup = b.group;
    for (uint32_t i = b.first; i < b.first + b.count; ++i)
      seen[b.group][i]++;
  }
  for (const auto& s : seen)
    for (int c : s)
      CHECK(c == 1);
  CHECK(buckets.front().group == 4);
  CHECK(buckets[1].group == 3);
  CHECK(buckets[1].first == 48); // within a group, its end first
  CHECK(dist::stagedFloats(buckets) == stageEnd);
}

TEST_CASE("dist: DataParallel sums gradients, averages losses, takes rank 0's state, compares hashes",
          "[train][dist]") {
  PeerRank rank(8);
  auto& [ctx, model, groups, g, comm, lossFloats, losses] = rank;
  dist::DataParallel dp(ctx, comm, groups, 64, lossFloats); // 64-byte buckets: many of them

  // Gradients: ours and the peer's, random; the peer's arrive in bucket order.
  std::vector<std::vector<float>> mine;
  for (const auto& gr : groups) {
    mine.push_back(test::randomFloats(gr.elements, -1.0f, 1.0f));
    write(g, gr.grad, mine.back());
  }
  const std::vector<float> myLosses = test::randomFloats(lossFloats, 0.0f, 6.0f);
  write(g, losses.range(), myLosses);
  const auto buckets = dist::planBuckets(
      [&] {
        std::vector<uint32_t> n;
        for (const auto& gr : groups)
          n.push_back(gr.elements);
        return n;
      }(),
      16, uint32_t(ctx.allocator().alignment() / 4));
  std::vector<std::vector<float>> peerGrads;
  for (const auto& gr : groups)
    peerGrads.push_back(test::randomFloats(gr.elements, -1.0f, 1.0f));
  for (const auto& b : buckets)
    for (uint32_t i = 0; i < b.count; ++i)
      comm.peer.push_back(peerGrads[b.group][b.first + i]);
  const std::vector<float> peerLosses = test::randomFloats(lossFloats, 0.0f, 6.0f);
  comm.peer.insert(comm.peer.end(), peerLosses.begin(), peerLosses.end());

  dp.reduceGradients(g, losses.range(), 1);
  g.flush();
  for (size_t k = 0; k < groups.size(); ++k) {
    const auto got = read(g, groups[k].grad, groups[k].elements);
    for (uint32_t i = 0; i < groups[k].elements; ++i)
      REQUIRE(got[i] == peerGrads[k][i] + mine[k][i]);
  }
  // Losses: rank 0's (already weighted by its part of the batch) plus ours times our part, 1/2.
  const auto gotLosses = read(g, losses.range(), lossFloats);
  for (uint32_t i = 0; i < lossFloats; ++i)
    CHECK(gotLosses[i] == peerLosses[i] + 0.5f * myLosses[i]);

  // Rank 0's data, m and v replace ours, group by group.
  std::vector<std::vector<float>> rootState;
  for (const auto& gr : groups)
    for (int kind = 0; kind < 3; ++kind) {
      rootState.push_back(test::randomFloats(gr.elements, -2.0f, 2.0f));
      comm.root.insert(comm.root.end(), rootState.back().begin(), rootState.back().end());
    }
  dp.broadcastState(g);
  size_t r = 0;
  for (const auto& gr : groups)
    for (const vk::BufferRange* range : {&gr.data, &gr.m, &gr.v})
      CHECK(read(g, *range, gr.elements) == rootState[r++]);

  CHECK_NOTHROW(dp.checkIdentical(g, 3));
  comm.peerHash = 0x1234;
  CHECK_THROWS_WITH(dp.checkIdentical(g, 3),
                    ContainsSubstring("after step 3: the parameters differ across "
                                      "ranks (hash of rank 0 0000000000001234, rank 1"));
}

TEST_CASE("dist: the overlapped exchange sums every bucket once, after its last write, like the plain one",
          "[train][dist]") {
  auto& ctx = test::trainCtx();
  train::BigramModel model(ctx, 37, 5);
  const auto& groups = model.parameterGroups();
  const uint32_t lossFloats = 8;
  vk::Buffer losses = ctx.buffer(4 * lossFloats, "test losses");
  std::vector<vk::Buffer> finals; // each group's final gradient, random
  std::vector<std::vector<float>> finalValues;
  graph::GraphExecutor g(ctx);
  for (const auto& gr : groups) {
    finals.push_back(ctx.buffer(4ull * gr.elements, "final gradient"));
    finalValues.push_back(test::randomFloats(gr.elements, -1.0f, 1.0f));
    write(g, finals.back().range(), finalValues.back());
  }
  const std::vector<float> myLosses = test::randomFloats(lossFloats, 0.0f, 6.0f);

  for (const bool overlapped : {true, false}) {
    INFO((overlapped ? "overlapped" : "after the backward"));
    DoublingPeer comm;
    dist::DataParallel dp(ctx, comm, groups, 64, lossFloats); // 64-byte buckets: many of them
    const std::vector<vk::BufferRange> buckets = dp.bucketRanges();
    REQUIRE(buckets.size() >= 4);
    // A stand-in backward: every gradient first gets a wrong value, then each bucket its final one, the
    // buckets in a random order (a cut too early would send the wrong value, one too late nothing wrong).
    std::vector<size_t> order(buckets.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::shuffle(order.begin(), order.end(), test::rng());
    const auto backward = [&](ops::Executor& e) {
      for (const auto& gr : groups)
        ops::fill(e, gr.grad, gr.elements, 7.0f);
      for (size_t b : order)
        for (size_t k = 0; k < groups.size(); ++k)
          if (buckets[b].buffer == groups[k].grad.buffer) {
            const VkDeviceSize at = buckets[b].offset - groups[k].grad.offset;
            ops::copy(e, vk::subrange(finals[k].range(), at, buckets[b].size), buckets[b],
                      static_cast<uint32_t>(buckets[b].size / 4));
          }
    };
    write(g, losses.range(), myLosses);
    graph::StepArena arena(ctx);
    if (overlapped) {
      dp.planOverlap(g, graph::findLastWrites(ctx, arena, backward, buckets));
      REQUIRE(dp.cuts().after.size() == buckets.size()); // one bucket per copy: one cut each
      g.replayable(
          "backward", [&] { backward(g); }, &dp.cuts());
      dp.reduceOverlapped(g, losses.range(), 1);
    } else {
      backward(g);
      dp.reduceGradients(g, losses.range(), 1);
    }
    g.flush();
    for (size_t k = 0; k < groups.size(); ++k) {
      const auto got = read(g, groups[k].grad, groups[k].elements);
      for (uint32_t i = 0; i < groups[k].elements; ++i) {
        const float x = finalValues[k][i];
        REQUIRE(got[i] == DoublingPeer::peerOf(x) + x);
      }
    }
    const auto gotLosses = read(g, losses.range(), lossFloats);
    for (uint32_t i = 0; i < lossFloats; ++i) { // ours weighted by our half of the batch, then summed
      const float x = 0.5f * myLosses[i];
      CHECK(gotLosses[i] == DoublingPeer::peerOf(x) + x);
    }
    CHECK(comm.exchanges.size() == buckets.size() + 1); // every bucket once, then the losses
  }
}

TEST_CASE("dist: a rank's losses count by its part of the batch; unlike devices take rank 0's control and "
          "state",
          "[train][dist]") {
  PeerRank rank(4);
  auto& [ctx, model, groups, g, comm, lossFloats, losses] = rank;
  // This rank trains 3 of 8 rows: its losses count 3/8 (a power-of-two denominator: exact).
  dist::DataParallel dp(ctx, comm, groups, 1 << 20, lossFloats, {0.375, false});
  CHECK_FALSE(dp.alike());
  std::vector<float> zeros;
  for (const auto& gr : groups) // gradients are not what this case checks: zero from both ranks
    zeros.resize(zeros.size() + gr.elements, 0.0f);
  comm.peer = zeros;
  const std::vector<float> myLosses = test::randomFloats(lossFloats, 0.0f, 6.0f);
  const std::vector<float> peerLosses = test::randomFloats(lossFloats, 0.0f, 6.0f);
  comm.peer.insert(comm.peer.end(), peerLosses.begin(), peerLosses.end());
  write(g, losses.range(), myLosses);
  dp.reduceGradients(g, losses.range(), 1);
  g.flush();
  const auto gotLosses = read(g, losses.range(), lossFloats);
  for (uint32_t i = 0; i < lossFloats; ++i)
    CHECK(gotLosses[i] == peerLosses[i] + 0.375f * myLosses[i]);

  // Rank 0's optimizer control and step record replace ours (two ranges, of 4 and 8 floats).
  vk::Buffer control = ctx.buffer(4 * 4, "test control"), record = ctx.buffer(4 * 8, "test record");
  write(g, control.range(), test::randomFloats(4, -1.0f, 1.0f));
  write(g, record.range(), test::randomFloats(8, -1.0f, 1.0f));
  const std::vector<float> rootControl = test::randomFloats(4, -1.0f, 1.0f);
  const std::vector<float> rootRecord = test::randomFloats(8, -1.0f, 1.0f);
  const uint32_t align = uint32_t(ctx.allocator().alignment() / 4);
  comm.rewind();
  comm.root = rootControl;
  comm.root.resize((4 + align - 1) / align * align, 0.0f); // each range starts on an aligned float
  comm.root.insert(comm.root.end(), rootRecord.begin(), rootRecord.end());
  comm.root.resize(comm.root.size() + (8 + align - 1) / align * align - 8, 0.0f);
  const vk::BufferRange ranges[] = {control.range(), record.range()};
  dp.adoptRankZero(g, ranges);
  g.flush();
  CHECK(read(g, control.range(), 4) == rootControl);
  CHECK(read(g, record.range(), 8) == rootRecord);

  // Hashes that differ: rank 0's parameters and moments replace ours when they differ by rounding only...
  std::vector<std::vector<float>> mine, rootState;
  comm.rewind();
  comm.root.clear();
  for (const auto& gr : groups) {
    mine.push_back(test::randomFloats(gr.elements, -2.0f, 2.0f));
    write(g, gr.data, mine.back());
    for (int kind = 0; kind < 3; ++kind) {
      rootState.push_back(kind == 0 ? mine.back() : test::randomFloats(gr.elements, 0.0f, 1.0f));
      if (kind == 0) rootState.back()[0] = std::nextafter(rootState.back()[0], 3.0f); // one ulp apart
      comm.root.insert(comm.root.end(), rootState.back().begin(), rootState.back().end());
    }
  }
  comm.peerHash = 0x1234;
  CHECK_NOTHROW(dp.checkIdentical(g, 5));
  size_t k = 0;
  for (const auto& gr : groups)
    for (const vk::BufferRange* range : {&gr.data, &gr.m, &gr.v})
      CHECK(read(g, *range, gr.elements) == rootState[k++]);
  // ... and the check fails, naming the rank, when they differ by more.
  comm.rewind();
  for (float& v : comm.root)
    v += 1.0f;
  CHECK_THROWS_WITH(dp.checkIdentical(g, 6), ContainsSubstring("after step 6: rank 1") &&
                                                 ContainsSubstring("more than rounding on unlike devices"));
}
