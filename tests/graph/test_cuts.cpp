// Cut recordings (graph/cut_plan.hpp, GraphExecutor::replayable with Cuts): a dry run finds each watched
// range's last writer in random programs, and a recording cut there submits every part on its own, copies
// each range at its cut with its final value, and gives the same bits as running the program at once,
// recorded and replayed.
#include "engine/graph/cut_plan.hpp"
#include "engine/graph/graph_executor.hpp"
#include "engine/ops/elementwise.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstring>

using namespace helios;

namespace {

vk::Context& ctx() {
  static auto context = vk::Context::create({.persistentPipelineCache = false});
  return *context;
}

constexpr uint32_t kElems = 517;       // odd on purpose
constexpr uint32_t kStageStride = 576; // each buffer's copy starts descriptor-aligned (256 bytes)
constexpr uint32_t kBuffers = 6;

struct Op {
  uint32_t src, dst;
  float factor;
  bool accumulate; // axpy (read-write) instead of scale (write)
};

std::vector<Op> randomOps(size_t n) {
  std::uniform_int_distribution<uint32_t> pick(0, kBuffers - 2); // the last buffer is never written
  std::uniform_real_distribution<float> factor(-1.5f, 1.5f);
  std::vector<Op> ops;
  for (size_t i = 0; i < n; ++i) {
    Op op{pick(test::rng()), pick(test::rng()), factor(test::rng()), (test::rng()() & 1) != 0};
    if (op.src == op.dst) op.dst = (op.dst + 1) % (kBuffers - 1);
    ops.push_back(op);
  }
  return ops;
}

void run(ops::Executor& e, const std::vector<Op>& prog, std::vector<vk::Buffer>& bufs) {
  for (const Op& op : prog)
    if (op.accumulate)
      ops::axpy(e, op.factor, bufs[op.src].range(), bufs[op.dst].range(), kElems);
    else
      ops::scale(e, bufs[op.src].range(), bufs[op.dst].range(), kElems, op.factor);
}

struct Buffers {
  std::vector<vk::Buffer> bufs;
  std::vector<std::vector<float>> initial;
  Buffers() {
    for (uint32_t i = 0; i < kBuffers; ++i) {
      bufs.push_back(ctx().buffer(4 * kElems, "cut test buffer"));
      initial.push_back(test::randomFloats(kElems));
    }
  }
  void reset() {
    for (uint32_t i = 0; i < kBuffers; ++i)
      ctx().uploadVector(bufs[i], initial[i]);
  }
  std::vector<std::vector<float>> read() {
    std::vector<std::vector<float>> out;
    for (auto& b : bufs)
      out.push_back(ctx().downloadVector<float>(b, kElems));
    return out;
  }
};

} // namespace

TEST_CASE("planCuts groups ranges by their last write; ranges never written join the first cut") {
  const std::vector<uint64_t> last{5, 0, 3, 5, 9, 1};
  const graph::CutPlan p = graph::planCuts(last);
  CHECK(p.after == std::vector<uint64_t>{1, 3, 5, 9});
  CHECK(p.members == std::vector<std::vector<uint32_t>>{{1, 5}, {2}, {0, 3}, {4}});
  CHECK(graph::planCuts(std::vector<uint64_t>{}).after.empty());
}

TEST_CASE("findLastWrites finds each range's last writer in random programs") {
  Buffers b;
  graph::StepArena arena(ctx());
  for (int trial = 0; trial < 4; ++trial) {
    const auto prog = randomOps(30);
    std::vector<vk::BufferRange> ranges;
    for (auto& buf : b.bufs)
      ranges.push_back(buf.range());
    ranges.push_back(vk::subrange(b.bufs[0].range(), 4 * 100, 4 * 7)); // a part of a buffer
    std::vector<uint64_t> expected(ranges.size(), 0);
    for (size_t i = 0; i < prog.size(); ++i)
      expected[prog[i].dst] = i + 1;
    expected.back() = expected[0];
    const auto got = graph::findLastWrites(
        ctx(), arena, [&](ops::Executor& e) { run(e, prog, b.bufs); }, ranges);
    CHECK(got == expected);
    CHECK(got[kBuffers - 1] == 0);
  }
}

TEST_CASE(
    "a cut recording submits each part, copies every range final at its cut, and replays the same bits") {
  Buffers b;
  const auto prog = randomOps(40);
  b.reset();
  {
    ops::ImmediateExecutor once(ctx());
    run(once, prog, b.bufs);
    once.flush();
  }
  const auto expected = b.read();

  std::vector<vk::BufferRange> ranges;
  for (auto& buf : b.bufs)
    ranges.push_back(buf.range());
  graph::StepArena arena(ctx());
  const graph::CutPlan plan = graph::planCuts(graph::findLastWrites(
      ctx(), arena, [&](ops::Executor& e) { run(e, prog, b.bufs); }, ranges));
  REQUIRE(plan.after.size() >= 2);

  graph::GraphExecutor g(ctx());
  vk::Buffer stage = ctx().buffer(4ull * kStageStride * kBuffers, "cut staging", vk::MemoryKind::Readback);
  std::vector<uint64_t> valueAtCut;
  graph::Cuts cuts;
  cuts.after = plan.after;
  cuts.atCut = [&](size_t cut) {
    for (uint32_t i : plan.members[cut])
      ops::copy(g, b.bufs[i].range(), vk::subrange(stage.range(), 4ull * kStageStride * i, 4ull * kElems),
                kElems);
  };
  for (int step = 0; step < 3; ++step) {
    INFO("step " << step);
    b.reset();
    std::memset(stage.mapped(), 0xff, 4ull * kStageStride * kBuffers); // poison: NaN everywhere
    const uint64_t before = g.submittedValue();
    g.beginStep();
    g.replayable(
        "cut", [&] { run(g, prog, b.bufs); }, &cuts);
    const uint64_t afterReplay = g.submittedValue();
    const auto stats = g.endStep();
    g.flush();
    CHECK(afterReplay - before == plan.after.size() + 1); // every part submitted at once, on its own
    CHECK(stats.submits == plan.after.size() + 1);
    if (step > 0) CHECK(stats.replayedSegments == plan.after.size() + 1);
    CHECK(stats.dispatches == prog.size() + kBuffers);
    const auto got = b.read();
    const float* staged = reinterpret_cast<const float*>(stage.mapped());
    for (uint32_t i = 0; i < kBuffers; ++i) {
      INFO("buffer " << i);
      CHECK(std::memcmp(got[i].data(), expected[i].data(), 4 * kElems) == 0);
      CHECK(std::memcmp(staged + size_t(i) * kStageStride, expected[i].data(), 4 * kElems) == 0);
    }
  }
}

TEST_CASE(
    "a cut recording that makes fewer dispatches than its cuts is refused and leaves the graph usable") {
  Buffers b;
  b.reset();
  graph::GraphExecutor g(ctx());
  graph::Cuts cuts{{2, 50}, [](size_t) {}};
  const auto prog = randomOps(10);
  CHECK_THROWS_AS(g.replayable(
                      "short", [&] { run(g, prog, b.bufs); }, &cuts),
                  std::logic_error);
  CHECK_FALSE(g.hasReplay("short"));
  g.flush(); // the first part was submitted and ran
  const auto x = ctx().downloadVector<float>(b.bufs[0], kElems);
  ops::scale(g, b.bufs[0].range(), b.bufs[1].range(), kElems, 2.0f);
  g.flush();
  const auto got = ctx().downloadVector<float>(b.bufs[1], kElems);
  for (uint32_t i = 0; i < kElems; ++i)
    REQUIRE(got[i] == 2.0f * x[i]);
}

TEST_CASE("a write to a range after the cut that made it final is refused") {
  Buffers b;
  b.reset();
  graph::GraphExecutor g(ctx());
  // Buffer 1 is written by dispatches 1 and 3; a plan claiming it final after dispatch 1 is wrong.
  const std::vector<Op> prog{{0, 1, 2.0f, false}, {0, 2, 2.0f, false}, {2, 1, 1.0f, true}};
  graph::Cuts cuts{{1}, [](size_t) {}, {{b.bufs[1].range()}}};
  try {
    g.replayable(
        "wrong", [&] { run(g, prog, b.bufs); }, &cuts);
    FAIL("the wrong plan was accepted");
  } catch (const std::logic_error& e) {
    CHECK_THAT(e.what(), Catch::Matchers::ContainsSubstring(
                             "(dispatch 3 of the recording) writes a range final since cut 0"));
  }
  CHECK_FALSE(g.hasReplay("wrong"));
  cuts.final = {{b.bufs[2].range()}}; // claimed final after dispatch 1, written by dispatch 2
  CHECK_THROWS_AS(g.replayable(
                      "wrong2", [&] { run(g, prog, b.bufs); }, &cuts),
                  std::logic_error);
  cuts.after = {2};
  g.replayable(
      "right", [&] { run(g, prog, b.bufs); }, &cuts); // buffer 2: last written by dispatch 2
  g.flush();
  CHECK(g.hasReplay("right"));
}
