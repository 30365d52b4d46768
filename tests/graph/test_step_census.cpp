// The step census on made-up dispatches: families from pipeline names, barriers where the hazard tracker puts
// them (charged to the dispatch that needs one), bound bytes summed per family.
#include "engine/graph/graph_executor.hpp"
#include "engine/graph/step_census.hpp"
#include "engine/graph/step_plan.hpp"
#include "engine/ops/elementwise.hpp"

#include <catch2/catch_test_macros.hpp>

using namespace helios;
using ops::Access;

namespace {
ops::Binding bind(uintptr_t b, VkDeviceSize offset, VkDeviceSize size, Access a) {
  return {{reinterpret_cast<VkBuffer>(b), offset, size}, a};
}
const graph::FamilyCount* find(const graph::StepCensus& c, const std::string& family) {
  for (const auto& f : c.families)
    if (f.family == family) return &f;
  return nullptr;
}
} // namespace

TEST_CASE("kernel families are the names' words before the first one with a digit") {
  CHECK(graph::kernelFamily("gemm_coop_nt_f16_32x32x32_sg2x2") == "gemm_coop_nt");
  CHECK(graph::kernelFamily("column_sum_blocks_f32_wg256") == "column_sum_blocks");
  CHECK(graph::kernelFamily("ew_add_f32_v4_wg256") == "ew_add");
  CHECK(graph::kernelFamily("norm_layernorm_fwd_f32_f16out_v4") == "norm_layernorm_fwd");
  CHECK(graph::kernelFamily("plain") == "plain");
  CHECK(graph::kernelFamily("f32_first") == "f32_first"); // nothing before the parameters: the whole name
}

TEST_CASE("the census counts dispatches, barriers and bound bytes per family") {
  std::vector<graph::DispatchRecord> d;
  d.push_back({"ew_cast_f32_f16", {bind(1, 0, 100, Access::Read), bind(2, 0, 50, Access::Write)}});
  d.push_back({"ew_cast_f32_f16", {bind(3, 0, 100, Access::Read), bind(4, 0, 50, Access::Write)}});
  d.push_back({"gemm_coop_nt_f16_64", {bind(2, 0, 50, Access::Read), bind(5, 0, 200, Access::Write)}}); // RAW
  d.push_back({"gemm_coop_nt_f32_64", {bind(4, 0, 50, Access::Read), bind(6, 0, 200, Access::Write)}});
  d.push_back(
      {"column_sum_finish_f32", {bind(5, 0, 200, Access::Read), bind(1, 0, 4, Access::Write)}}); // RAW
  d.push_back({"ew_cast_f32_f16", {bind(6, 0, 100, Access::Read), bind(7, 0, 50, Access::Write)}});
  const graph::StepCensus c = graph::takeCensus(d);
  CHECK(c.dispatches == 6);
  CHECK(c.barriers == 2);
  CHECK(c.boundBytes == 150 + 150 + 250 + 250 + 204 + 150);
  REQUIRE(c.families.size() == 3);
  CHECK(c.families[0].family == "ew_cast"); // most dispatches first
  const auto* cast = find(c, "ew_cast");
  const auto* gemm = find(c, "gemm_coop_nt");
  const auto* sum = find(c, "column_sum_finish");
  REQUIRE((cast && gemm && sum));
  CHECK(cast->dispatches == 3);
  CHECK(cast->barriers == 0); // its third dispatch reads 6 after the finish's barrier already covered it
  CHECK(cast->kernels == 1);
  CHECK(gemm->dispatches == 2);
  CHECK(gemm->barriers == 1);
  CHECK(gemm->kernels == 2);
  CHECK(sum->barriers == 1);
}

TEST_CASE("a plan's census has the dispatches and barriers the graph records for the planned step") {
  auto ctx = vk::Context::create({.persistentPipelineCache = false});
  constexpr uint32_t n = 1001;
  vk::Buffer in = ctx->buffer(4 * n, "in"), out = ctx->buffer(4 * n, "out"),
             side = ctx->buffer(4 * n, "side");
  graph::StepArena arena(*ctx);
  // Temporaries whose lifetimes end early, so the plan reuses their bytes (write-after-read barriers).
  const graph::StepRecording record = [&](ops::Executor& e) {
    const vk::BufferRange t0 = arena.allocate(4 * n, "t0"), t1 = arena.allocate(4 * n, "t1");
    ops::fill(e, t0, n, 1.0f);
    ops::add(e, in.range(), t0, t1, n);
    const vk::BufferRange t2 = arena.allocate(4 * n, "t2");
    ops::activation(e, ops::Activation::Gelu, t1, t2, n);
    ops::fill(e, side.range(), n, 2.0f); // independent of the chain
    const vk::BufferRange t3 = arena.allocate(4 * n, "t3");
    ops::add(e, t2, t0, t3, n);
    const vk::BufferRange t4 = arena.allocate(4 * n, "t4");
    ops::add(e, t3, side.range(), t4, n);
    ops::copy(e, t4, out.range(), n);
  };
  const graph::StepPlan plan = graph::planStep(*ctx, arena, record);
  CHECK(plan.plan.totalBytes() < plan.unplannedBytes()); // something is reused
  arena.provideBins(plan.plan);
  graph::GraphExecutor g(*ctx);
  g.beginStep();
  graph::recordPlanned(g, arena, plan, record);
  const graph::StepStats stats = g.endStep();
  g.flush();
  CHECK(plan.census.dispatches == 7);
  CHECK(stats.dispatches == plan.census.dispatches);
  CHECK(stats.barriers == plan.census.barriers);
}
