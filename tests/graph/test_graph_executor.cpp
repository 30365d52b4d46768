// The graph submitter against the immediate executor (a full barrier after every dispatch): random DAGs of
// real kernels agree bit for bit, replays equal fresh recordings, steady steps allocate nothing and submit
// at most twice, barriers are fewer than dispatches, and a failing op leaves the graph usable.
#include "engine/graph/arena.hpp"
#include "engine/graph/graph_executor.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/matmul.hpp"
#include "engine/ops/reduce.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstring>
#include <functional>

using namespace helios;

namespace {

vk::Context& ctx() {
  static auto context = vk::Context::create({.persistentPipelineCache = false});
  return *context;
}

constexpr uint32_t kSide = 33; // buffers hold kSide x kSide floats (odd on purpose)
constexpr uint32_t kElems = kSide * kSide;
constexpr uint32_t kBuffers = 8;

struct Pool {
  std::vector<vk::Buffer> buffers;
  std::vector<std::vector<float>> initial;
  Pool() {
    for (uint32_t i = 0; i < kBuffers; ++i) {
      buffers.push_back(ctx().buffer(kElems * 4, "dag buffer"));
      initial.push_back(test::randomFloats(kElems, -0.5f, 0.5f));
    }
  }
  void reset() {
    for (uint32_t i = 0; i < kBuffers; ++i)
      ctx().uploadVector(buffers[i], initial[i]);
  }
  std::vector<std::vector<float>> read() {
    std::vector<std::vector<float>> out;
    for (auto& b : buffers)
      out.push_back(ctx().downloadVector<float>(b, kElems));
    return out;
  }
};

// A random program over the pool: elementwise ops, GEMMs and row reductions with random operands.
using Program = std::vector<std::function<void(ops::Executor&, Pool&)>>;

Program randomProgram(size_t length) {
  Program prog;
  std::uniform_int_distribution<uint32_t> pick(0, kBuffers - 1), kind(0, 5);
  for (size_t i = 0; i < length; ++i) {
    uint32_t a = pick(test::rng()), b = pick(test::rng()), out = pick(test::rng());
    while (out == a || out == b)
      out = (out + 1) % kBuffers;
    switch (kind(test::rng())) {
    case 0:
      prog.push_back([=](ops::Executor& e, Pool& p) {
        ops::add(e, p.buffers[a].range(), p.buffers[b].range(), p.buffers[out].range(), kElems);
      });
      break;
    case 1:
      prog.push_back([=](ops::Executor& e, Pool& p) {
        ops::activation(e, ops::Activation::Gelu, p.buffers[a].range(), p.buffers[out].range(), kElems);
      });
      break;
    case 2: // in place: read-write
      prog.push_back([=](ops::Executor& e, Pool& p) {
        ops::axpy(e, 0.25f, p.buffers[a].range(), p.buffers[out].range(), kElems);
      });
      break;
    case 3:
      prog.push_back([=](ops::Executor& e, Pool& p) {
        ops::MatmulArgs m;
        m.a = p.buffers[a].range();
        m.b = p.buffers[b].range();
        m.c = p.buffers[out].range();
        m.M = m.N = m.K = kSide;
        m.alpha = 0.1f;
        ops::matmul(e, m);
      });
      break;
    case 4: // a row reduction into the first kSide elements of `out`
      prog.push_back([=](ops::Executor& e, Pool& p) {
        vk::BufferRange dst = p.buffers[out].range();
        dst.size = kSide * 4;
        ops::reduceRows(e, p.buffers[a].range(), dst, kSide, kSide, codegen::RowReduceOp::Max);
      });
      break;
    default:
      prog.push_back([=](ops::Executor& e, Pool& p) {
        ops::scale(e, p.buffers[a].range(), p.buffers[out].range(), kElems, -1.5f);
      });
    }
  }
  return prog;
}

std::vector<std::vector<float>> runImmediate(Pool& pool, const Program& prog) {
  pool.reset();
  ops::ImmediateExecutor exec(ctx());
  for (const auto& op : prog)
    op(exec, pool);
  exec.flush();
  return pool.read();
}

bool bitEqual(const std::vector<std::vector<float>>& x, const std::vector<std::vector<float>>& y) {
  for (size_t i = 0; i < x.size(); ++i)
    if (std::memcmp(x[i].data(), y[i].data(), x[i].size() * 4) != 0) return false;
  return true;
}

} // namespace

TEST_CASE("random DAGs through the graph agree bit for bit with one-at-a-time execution") {
  for (int trial = 0; trial < 4; ++trial) {
    Pool pool;
    auto prog = randomProgram(40);
    auto expected = runImmediate(pool, prog);

    pool.reset();
    graph::GraphExecutor g(ctx());
    g.beginStep();
    for (const auto& op : prog)
      op(g, pool);
    auto stats = g.endStep();
    g.flush();
    CHECK(bitEqual(pool.read(), expected));
    CHECK(stats.dispatches == prog.size());
    CHECK(stats.submits == 1);
    CHECK(stats.barriers < stats.dispatches); // fewer than the naive one per dispatch
  }
}

TEST_CASE("a replayed step equals a freshly recorded one and allocates nothing") {
  Pool pool;
  auto prog = randomProgram(30);
  auto expected = runImmediate(pool, prog);

  graph::GraphExecutor g(ctx());
  graph::StepArena arena(ctx());
  std::vector<std::vector<float>> tmpSeen;
  for (int step = 0; step < 3; ++step) {
    pool.reset();
    g.beginStep();
    arena.reset();
    g.replayable("dag", [&] {
      // A temporary from the arena, used inside the replayed segment.
      auto tmp = arena.allocate(kElems * 4, "dag temporary");
      ops::copy(g, pool.buffers[0].range(), tmp, kElems);
      for (const auto& op : prog)
        op(g, pool);
      ops::copy(g, tmp, pool.buffers[0].range(), kElems); // restore buffer 0 from the temporary
    });
    auto stats = g.endStep();
    g.flush();
    auto got = pool.read();
    // Buffer 0 was restored, so compare it to its initial contents and the rest to the immediate run.
    CHECK(std::memcmp(got[0].data(), pool.initial[0].data(), kElems * 4) == 0);
    for (uint32_t i = 1; i < kBuffers; ++i)
      CHECK(std::memcmp(got[i].data(), expected[i].data(), kElems * 4) == 0);
    CHECK(stats.submits <= 2);
    CHECK(stats.dispatches == prog.size() + 2);
    if (step > 0) {
      CHECK(stats.replayedSegments == 1);
      CHECK(stats.bytesAllocated == 0);
    }
  }
}

TEST_CASE("host reads wait lazily and uploads wait for readers") {
  graph::GraphExecutor g(ctx());
  auto x = ctx().buffer(kElems * 4, "x"), y = ctx().buffer(kElems * 4, "y");
  auto data = test::randomFloats(kElems);
  g.upload(x, std::as_bytes(std::span<const float>(data)));
  ops::scale(g, x.range(), y.range(), kElems, 2.0f); // recorded, not yet submitted
  std::vector<float> out(kElems);
  g.download(y, std::as_writable_bytes(std::span<float>(out))); // submits and waits for the writer of y
  for (uint32_t i = 0; i < kElems; ++i)
    REQUIRE(out[i] == 2.0f * data[i]);
  CHECK(g.totalSubmits() == 1);
  // Overwrite x while nothing reads it any more, then run again.
  auto data2 = test::randomFloats(kElems);
  g.upload(x, std::as_bytes(std::span<const float>(data2)));
  ops::scale(g, x.range(), y.range(), kElems, 3.0f);
  g.download(y, std::as_writable_bytes(std::span<float>(out)));
  for (uint32_t i = 0; i < kElems; ++i)
    REQUIRE(out[i] == 3.0f * data2[i]);
}

TEST_CASE("long recordings are split into several command buffers under the pending cap") {
  // 100 dispatches with a cap of 16 make 7 command buffers. With a ring of 8 they all go in one
  // vkQueueSubmit2; with a ring of 2 the graph must submit early to reuse a command buffer, and the
  // result must not change.
  for (uint32_t ring : {8u, 2u}) {
    graph::GraphExecutor g(ctx(), {.maxPendingDispatches = 16, .ring = ring});
    auto x = ctx().buffer(kElems * 4, "x"), one = ctx().buffer(kElems * 4, "one");
    ops::fill(g, x.range(), kElems, 0.0f);
    ops::fill(g, one.range(), kElems, 1.0f);
    g.beginStep();
    for (int i = 0; i < 100; ++i)
      ops::axpy(g, 1.0f, one.range(), x.range(), kElems);
    auto stats = g.endStep();
    if (ring == 8)
      CHECK(stats.submits == 1);
    else
      CHECK(stats.submits > 1);
    CHECK(stats.dispatches == 100);
    auto out = std::vector<float>(kElems);
    g.download(x, std::as_writable_bytes(std::span<float>(out)));
    for (float v : out)
      REQUIRE(v == 100.0f);
  }
}

TEST_CASE("an op that fails mid-recording leaves the graph usable and names the op") {
  graph::GraphExecutor g(ctx());
  auto x = ctx().buffer(kElems * 4, "x"), y = ctx().buffer(kElems * 4, "y");
  auto data = test::randomFloats(kElems);
  g.upload(x, std::as_bytes(std::span<const float>(data)));
  g.beginStep();
  ops::scale(g, x.range(), y.range(), kElems, 2.0f);
  ops::MatmulArgs bad;
  bad.a = x.range();
  bad.b = x.range();
  bad.c = y.range();
  bad.M = bad.N = bad.K = 1000; // far more than the buffers hold
  CHECK_THROWS_WITH(ops::matmul(g, bad), Catch::Matchers::ContainsSubstring("matmul"));
  CHECK_THROWS(g.replayable("broken", [&] { ops::matmul(g, bad); }));
  ops::scale(g, y.range(), y.range(), kElems, 0.5f);
  g.endStep();
  std::vector<float> out(kElems);
  g.download(y, std::as_writable_bytes(std::span<float>(out)));
  for (uint32_t i = 0; i < kElems; ++i)
    REQUIRE(out[i] == data[i]);
}

TEST_CASE("profiling aggregates GPU time per kernel") {
  if (ctx().device().timestampPeriodNs() <= 0) SKIP("no timestamps on this queue");
  graph::GraphExecutor g(ctx(), {.profile = true});
  auto x = ctx().buffer(kElems * 4, "x"), y = ctx().buffer(kElems * 4, "y");
  ops::fill(g, x.range(), kElems, 1.0f);
  for (int i = 0; i < 5; ++i)
    ops::activation(g, ops::Activation::Gelu, x.range(), y.range(), kElems);
  g.flush();
  auto table = g.profile();
  REQUIRE(table.size() >= 2);
  uint64_t calls = 0;
  for (const auto& k : table)
    calls += k.calls;
  CHECK(calls == 6);
  CHECK(table[0].totalUs >= 0.0);
}
