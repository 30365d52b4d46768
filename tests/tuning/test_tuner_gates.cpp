// The tuner's gates on the live device: a candidate planted to compute wrong results is rejected by the
// error gate, one whose results change from run to run by the determinism gate, and neither is chosen;
// honest candidates pass and the policy's own choice is timed.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "engine/ops/device_tuning.hpp"
#include "engine/ops/gemm_plan.hpp"
#include "engine/ops/gemm_plan_menu.hpp"
#include "engine/tuning/values.hpp"
#include "engine/vk/context.hpp"
#include "tools/helios_tune/compare.hpp"
#include "tools/helios_tune/gemm_tuner.hpp"
#include "tools/helios_tune/targets.hpp"

using namespace helios;
using Catch::Matchers::ContainsSubstring;

namespace {

vk::Context& ctx() {
  static auto c = vk::Context::create();
  return *c;
}

bool usesTile(const tuning::Tuning& record, const ops::MatmulArgs& a, const std::string& tile) {
  const tuning::GemmChoice* c = tuning::findGemm(
      record, ops::gemmShape(a.M, a.N, a.K, a.batch, a.transA, a.transB, a.outType == ops::MatmulDType::F16));
  return c && c->tiled == tile;
}

// The tiled menu's tiles that fit the device for `probe`, other than the chooser's own.
std::vector<std::string> otherTiledTiles(const ops::MatmulArgs& probe) {
  const codegen::GemmTiledParams plan = ops::matmulTiledPlan(probe, ctx().device());
  std::vector<std::string> others;
  for (const codegen::GemmTile& t : ops::gemmTiledCandidates()) {
    codegen::GemmTiledParams p = plan;
    p.tile = t;
    try {
      p.validate(ops::gemmDeviceLimits(ctx().device()));
    } catch (const std::invalid_argument&) {
      continue;
    }
    if (!(t == plan.tile)) others.push_back(t.str());
  }
  return others;
}

} // namespace

TEST_CASE("tuner: wrong and non-deterministic candidates are rejected by their gates", "[tuning][tuner]") {
  const tuning::GemmShape shape{72, 40, 56, 1, false, true, false};
  // Two tiles of the menu that fit the device and are not the chooser's own (that one is the start).
  ops::MatmulArgs probe;
  probe.M = shape.m, probe.N = shape.n, probe.K = shape.k, probe.transB = true;
  const std::vector<std::string> others = otherTiledTiles(probe);
  REQUIRE(others.size() >= 2);
  const std::string wrong = others[0], flaky = others[1];
  int calls = 0;
  tune::GemmTuneOptions o;
  o.timing = {1, 1, 0};
  o.maxEvaluations = 100; // the whole tiled space: the planted candidates are evaluated
  o.allowCoop = false;
  o.seed = 11;
  // Forces the tiled kernel (a coop device's policy would not take the tiled tiles otherwise).
  o.runner = [&](ops::Executor& e, const ops::MatmulArgs& base, const tuning::Tuning& record) {
    ops::MatmulArgs a = base;
    a.kernel = ops::MatmulKernel::Tiled;
    if (const tuning::GemmChoice* c = tuning::findGemm(record, shape); c && c->tiled)
      a.tile = codegen::GemmTile::parse(*c->tiled);
    if (usesTile(record, a, wrong)) a.alpha = 1.1f;                         // 10% off everywhere
    if (usesTile(record, a, flaky)) a.alpha = (++calls % 2) ? 1.0f : -1.0f; // right once, then not
    ops::matmul(e, a);
  };
  const tune::GemmTuneResult r = tune::tuneGemm(ctx(), shape, ops::deviceTuning(ctx().device()), o);
  INFO([&] {
    std::string s;
    for (const auto& x : r.rejections)
      s += x + "\n";
    return s;
  }());
  CHECK(r.evaluated >= 3);
  CHECK(r.defaultUs > 0);
  REQUIRE(r.bestUs > 0);
  CHECK(r.best.tiled != wrong);
  CHECK(r.best.tiled != flaky);
  bool sawWrong = false, sawFlaky = false;
  for (const std::string& x : r.rejections) {
    sawWrong = sawWrong || (x.find(wrong) != std::string::npos && x.find("max error") != std::string::npos);
    sawFlaky = sawFlaky || (x.find(flaky) != std::string::npos && x.find("determinism") != std::string::npos);
  }
  CHECK(sawWrong);
  CHECK(sawFlaky);
}

TEST_CASE("tuner: shape lists and presets give the targets", "[tuning][tuner]") {
  const tune::Targets t =
      tune::parseTargets("gemm:NN:1024x768x3072,gemm:tn:64x48x40_b2_f16,attn:B1H12S1024D64c");
  REQUIRE(t.gemms.size() == 2);
  CHECK(t.gemms[0] == tuning::GemmShape{1024, 768, 3072, 1, false, false, false});
  CHECK(t.gemms[1] == tuning::GemmShape{64, 48, 40, 2, true, false, true});
  REQUIRE(t.attention.size() == 1);
  CHECK(t.attention[0] == tune::AttentionTarget{1, 12, 1024, 64, true});
  for (const char* bad : {"gemm:nx:1x2x3", "gemm:nn:1x2", "attn:B1H12S1024", "attn:B0H1S1D64c", "conv:1"})
    CHECK_THROWS_WITH(tune::parseTargets(bad), ContainsSubstring(bad));
  train::TrainConfig cfg;
  train::applyPreset(cfg, "gpt2-small");
  const tune::Targets g = tune::trainingTargets(cfg);
  CHECK(g.gemms.size() == 15); // 5 projections x (forward, dX, dW)
  REQUIRE(g.attention.size() == 1);
  CHECK(g.attention[0].headDim == 64);
  CHECK(g.attention[0].heads == 12);
}

// The before/after table times a row once where both records run the same pipelines (it reads 1: the same
// kernel's run-to-run spread is not a tuning result), and both sides apart where they do not, whatever the
// device's own record holds.
TEST_CASE("tuner: a before/after row reads 1 where both records run the same kernels", "[tuning][tuner]") {
  const tuning::GemmShape shape{96, 80, 64, 1, false, false, false};
  tune::Targets targets;
  targets.gemms.push_back(shape);
  const tuning::Tuning base = tune::withoutShapes(ops::deviceTuning(ctx().device()));
  tune::CompareOptions o;
  o.timing = {1, 1, 0};
  o.rounds = 1;
  const nlohmann::json same = tune::compareRecords(ctx(), targets, base, base, o)["rows"][0];
  CHECK(same["same_kernels"].get<bool>());
  CHECK(same["speedup"].get<double>() == 1.0);
  // A tiled tile other than the chooser's for the shape.
  ops::MatmulArgs probe;
  probe.M = shape.m, probe.N = shape.n, probe.K = shape.k;
  const std::vector<std::string> others = otherTiledTiles(probe);
  REQUIRE_FALSE(others.empty());
  const std::string other = others.back();
  tuning::Tuning record = base;
  tuning::GemmChoice c;
  c.shape = shape;
  c.kernel = tuning::GemmKernel::Tiled;
  c.tiled = other;
  tuning::putGemm(record, c, tuning::Source::File);
  const nlohmann::json apart = tune::compareRecords(ctx(), targets, base, record, o)["rows"][0];
  INFO(other);
  CHECK_FALSE(apart["same_kernels"].get<bool>());
  CHECK(apart["default_us"].get<double>() > 0);
  CHECK(apart["tuned_us"].get<double>() > 0);
  // The device's own record holding that tile (after a run: the file just written) does not leak into the
  // side whose record has none.
  const tuning::Tuning restore = ops::deviceTuning(ctx().device());
  ops::setDeviceTuning(ctx().device(), record);
  const nlohmann::json leaked = tune::compareRecords(ctx(), targets, base, record, o)["rows"][0];
  ops::setDeviceTuning(ctx().device(), restore);
  CHECK_FALSE(leaked["same_kernels"].get<bool>());
}
