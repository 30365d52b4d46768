// The GEMM search's axes beyond the tiling menu (each part of the tiling, copy subgroups, A and B padding,
// the workgroup-scope NV2 kernel with its unrolling and tensor layouts) and the attention backward's: the
// plan honours a choice on each, the search can pick each, and a candidate planted on one to compute wrong
// results is rejected by the error gate. Planned for a synthetic H100 (no coop device needed); the planted
// runs execute on the live device's tiled kernel.
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <functional>
#include <map>

#include "codegen/kernels/gemm_coop_nv2.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "engine/tuning/values.hpp"
#include "engine/vk/context.hpp"
#include "tools/helios_tune/attention_tuner.hpp"
#include "tools/helios_tune/gemm_tuner.hpp"
#include "tools/helios_tune/tune.hpp"

using namespace helios;

namespace {

vk::Context& ctx() {
  static auto c = vk::Context::create();
  return *c;
}

// An H100 as the policy sees it: 16x16x16 f16 coop matrices on 32 lanes, 227 KiB of shared memory, 132 SMs
// and the 580 driver's workgroup-scope granularities (off by default, as gemm.coop2 leaves them).
ops::CoopDeviceInfo h100() {
  ops::CoopDeviceInfo d;
  d.coopMatrix = true;
  d.coopM = d.coopN = d.coopK = 16;
  d.subgroupSize = 32;
  d.maxSharedBytes = 232448;
  d.computeUnits = 132;
  d.nv2Shapes = codegen::h100WorkgroupCoopShapes();
  return d;
}

codegen::GemmCoopParams planned(const tuning::GemmChoice& c, const ops::CoopDeviceInfo& dev = h100()) {
  tuning::Tuning t;
  tuning::putGemm(t, c, tuning::Source::File);
  const ops::MatmulArgs a = tune::shapeArgs(c.shape);
  const ops::CoopPlan plan = ops::planMatmulCoop(a, dev, &t);
  REQUIRE(ops::isCoop(plan.decision));
  return ops::coopKernelParams(plan, a);
}

const tuning::GemmShape kSquare{2048, 2048, 2048, 1, false, false, false};

// What a choice says on `axis`, as the search's value (-1: nothing).
int64_t onAxis(const tuning::GemmChoice& c, const std::string& axis) {
  const std::map<std::string, std::function<int64_t()>> read{
      {"bm", [&] { return c.tile ? int64_t(c.tile->bm) : -1; }},
      {"bn", [&] { return c.tile ? int64_t(c.tile->bn) : -1; }},
      {"bk", [&] { return c.tile ? int64_t(c.tile->bk) : -1; }},
      {"sgRows", [&] { return c.tile ? int64_t(c.tile->rows) : -1; }},
      {"sgCols", [&] { return c.tile ? int64_t(c.tile->cols) : -1; }},
      {"stages", [&] { return c.tile ? int64_t(c.tile->stages) : -1; }},
      {"producers", [&] { return c.producers ? int64_t(*c.producers) : -1; }},
      {"padA", [&] { return c.pad ? int64_t(c.pad->a) : -1; }},
      {"padB", [&] { return c.pad ? int64_t(c.pad->b) : -1; }},
      {"coop2", [&] { return c.coop2 ? int64_t(*c.coop2) : -1; }},
      {"unroll", [&] { return c.unroll ? int64_t(*c.unroll) : -1; }},
      {"tensorLayouts", [&] { return c.tensorLayouts ? int64_t(*c.tensorLayouts) : -1; }},
  };
  return read.at(axis)();
}

} // namespace

TEST_CASE("tuner axes: the plan honours a choice on each new axis", "[tuning][tuner]") {
  tuning::GemmChoice c;
  c.shape = kSquare;
  c.tile = tuning::CoopTile{128, 64, 32, 2, 2, 2};
  c.producers = 1;
  c.pad = tuning::SharedPad{0, 16};
  codegen::GemmCoopParams p = planned(c);
  CHECK(p.BM == 128);
  CHECK(p.BN == 64);
  CHECK(p.BK == 32);
  CHECK(p.stages == 2);
  CHECK(p.producers == 1);
  CHECK(p.padA == 0);
  CHECK(p.padB == 16);
  CHECK_FALSE(p.workgroupScope);

  tuning::GemmChoice w;
  w.shape = kSquare;
  w.coop2 = true;
  w.unroll = 2;
  w.tensorLayouts = false;
  w.tile = tuning::CoopTile{128, 128, 64, 0, 0, 0};
  p = planned(w);
  CHECK(p.workgroupScope);
  CHECK(p.unroll == 2);
  CHECK_FALSE(p.tensorLayouts);
  CHECK(p.BM == 128);
  CHECK(p.BK == 64);

  // The other way: NV2 on for the device (gemm.coop2), off for this shape.
  ops::CoopDeviceInfo on = h100();
  on.workgroupShapes = on.nv2Shapes;
  tuning::GemmChoice off;
  off.shape = kSquare;
  CHECK(planned(off, on).workgroupScope);
  off.coop2 = false;
  CHECK_FALSE(planned(off, on).workgroupScope);
  // A choice the kernel cannot take (copy subgroups on one stage) is left out, not an error.
  tuning::GemmChoice bad = c;
  bad.tile = tuning::CoopTile{128, 64, 32, 2, 2, 1};
  CHECK(planned(bad).producers == 0);
}

TEST_CASE("tuner axes: the GEMM search can pick each new axis", "[tuning][tuner]") {
  const tune::GemmSpace g = tune::gemmSpace(h100(), kSquare, tuning::Tuning{});
  REQUIRE(g.workgroupBase);
  for (const char* axis : {"bm", "bn", "bk", "sgRows", "sgCols", "stages", "producers", "padA", "padB",
                           "coop2", "unroll", "tensorLayouts"}) {
    INFO(axis);
    const tuning::Dimension* dim = nullptr;
    for (const tuning::Dimension& d : g.space.dims)
      if (d.name == axis) dim = &d;
    REQUIRE(dim);
    REQUIRE(dim->values.size() >= 3);
    const int64_t planted = dim->values.back(); // a synthetic cost that only this value lowers
    tuning::SearchOptions o;
    o.maxEvaluations = 400;
    o.seed = 5;
    const auto all = tuning::evolve(
        g.space, tuning::Candidate(g.space.dims.size(), 0),
        [&](const tuning::Candidate& c) { return g.space.value(c, axis) == planted ? 1.0 : 2.0; }, o);
    REQUIRE_FALSE(all.empty());
    REQUIRE(all.front().cost == 1.0);
    const tuning::GemmChoice choice = tune::gemmChoice(g, all.front().candidate, kSquare);
    CHECK(onAxis(choice, axis) == planted);
  }
}

TEST_CASE("tuner axes: a candidate planted wrong on a new axis is rejected", "[tuning][tuner]") {
  const tuning::GemmShape shape{64, 64, 64, 1, false, false, false};
  tune::GemmTuneOptions o;
  o.timing = {1, 1, 0};
  o.maxEvaluations = 48;
  o.seed = 3;
  o.minGain = 0;
  o.device = h100();
  int wrongRuns = 0;
  // Every candidate runs the live device's tiled kernel; those with copy subgroups compute 10% off and run
  // half the work (so they would win on time alone); the others run the product twice.
  o.runner = [&](ops::Executor& e, const ops::MatmulArgs& base, const tuning::Tuning& record) {
    ops::MatmulArgs a = base;
    a.kernel = ops::MatmulKernel::Tiled;
    const tuning::GemmChoice* c = tuning::findGemm(record, shape);
    const bool wrong = c && c->producers && *c->producers > 0;
    if (wrong) {
      a.alpha = 1.1f;
      ++wrongRuns;
    } else {
      ops::matmul(e, a);
    }
    ops::matmul(e, a);
  };
  const tune::GemmTuneResult r = tune::tuneGemm(ctx(), shape, ops::deviceTuning(ctx().device()), o);
  INFO([&] {
    std::string s;
    for (const auto& x : r.rejections)
      s += x + "\n";
    return s;
  }());
  REQUIRE(wrongRuns > 0); // the search tried copy subgroups
  bool sawWrong = false;
  for (const std::string& x : r.rejections)
    sawWrong = sawWrong || (x.find(" w") != std::string::npos && x.find("max error") != std::string::npos);
  CHECK(sawWrong);
  REQUIRE(r.bestUs > 0);
  CHECK_FALSE((r.best.producers && *r.best.producers > 0));
}

TEST_CASE("tuner axes: the attention backward searches both passes", "[tuning][tuner]") {
  const tuning::SearchSpace s = tune::attentionSpace(tune::AttentionStage::Backward);
  REQUIRE(s.dims.size() == 8);
  const tune::AttentionTarget t{1, 2, 64, 64, true};
  tuning::Candidate c(s.dims.size(), 0);
  c[0] = 2; // dq.tile 64
  c[5] = 1; // dkv.subgroups 1
  const auto choices = tune::attentionChoices(s, c, tune::AttentionStage::Backward, t);
  REQUIRE(choices.size() == 2);
  CHECK(choices[0].pass == tuning::AttentionPassId::QueryGrad);
  CHECK(choices[0].tile == 64u);
  CHECK_FALSE(choices[0].subgroups);
  CHECK(choices[1].pass == tuning::AttentionPassId::KeyValueGrad);
  CHECK(choices[1].subgroups == 1u);
  CHECK(choices[1].headDim == 64);
  CHECK(choices[1].causal);
  // The search reaches a planted value on each pass's axes.
  for (const char* axis : {"dq.tile", "dq.prefetch", "dkv.tile", "dkv.pad"}) {
    INFO(axis);
    int64_t planted = 0;
    for (const tuning::Dimension& d : s.dims)
      if (d.name == axis) planted = d.values.back();
    tuning::SearchOptions o;
    o.maxEvaluations = 300;
    const auto all = tuning::evolve(
        s, tuning::Candidate(s.dims.size(), 0),
        [&](const tuning::Candidate& x) { return s.value(x, axis) == planted ? 1.0 : 2.0; }, o);
    REQUIRE(all.front().cost == 1.0);
  }
}

TEST_CASE("tuner: the budget follows each search's share of the step's FLOPs", "[tuning][tuner]") {
  const std::vector<double> shares = tune::budgetShares({3e9, 1e9, 0});
  REQUIRE(shares.size() == 3);
  CHECK(shares[0] > shares[1]);
  CHECK(shares[1] > shares[2]);
  CHECK(shares[2] > 0); // every search gets some time
  double sum = 0;
  for (double s : shares)
    sum += s;
  CHECK(std::abs(sum - 1.0) < 1e-12);
  train::TrainConfig cfg;
  train::applyPreset(cfg, "gpt2-small");
  const tune::Targets g = tune::trainingTargets(cfg);
  REQUIRE(g.gemmCounts.size() == g.gemms.size());
  CHECK(g.gemmCounts.front() == cfg.gpt.layers); // QKV, once per layer
  CHECK(g.gemmCounts.back() == 1u);              // the head
  CHECK(g.attentionCounts == std::vector<uint32_t>{cfg.gpt.layers});
}
