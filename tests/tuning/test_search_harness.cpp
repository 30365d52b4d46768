// The search harness both tuners run (tools/helios_tune/search_harness), on the live device with a small
// matmul as every candidate's op: each gate rejects what it should and names it (the tuner's parameters and
// its own gate, a kernel already timed, pipeline creation, the error gate against float64, determinism), an
// honest candidate is timed, and the policy's choice stays unless a winner beats it by minGain.
#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <stdexcept>

#include "engine/ops/matmul.hpp"
#include "engine/vk/context.hpp"
#include "support/random.hpp"
#include "tools/helios_tune/search_harness.hpp"

using namespace helios;

namespace {

vk::Context& ctx() {
  static auto c = vk::Context::create();
  return *c;
}

// Candidate i of a one-axis space: what each is planted to do.
enum Plant : int64_t { Honest, Throws, OwnGate, SameKernel, NoPipeline, Wrong, Flaky, Plants };

bool contains(const std::vector<std::string>& lines, const std::string& a, const std::string& b) {
  for (const std::string& l : lines)
    if (l.find(a) != std::string::npos && l.find(b) != std::string::npos) return true;
  return false;
}

} // namespace

TEST_CASE("tuner harness: every gate rejects its planted candidate, by name", "[tuning][tuner]") {
  INFO("HELIOS_TEST_SEED=" << test::testSeed());
  const uint32_t M = 19, N = 23, K = 29;
  const std::vector<float> ha = test::randomFloats(M * K), hb = test::randomFloats(K * N);
  vk::Buffer a = ctx().buffer(ha.size() * 4, "A"), b = ctx().buffer(hb.size() * 4, "B"),
             c = ctx().buffer(M * N * 4, "C");
  ctx().uploadVector(a, ha);
  ctx().uploadVector(b, hb);
  std::vector<double> ref(M * N, 0.0), mag(M * N, 0.0);
  for (uint32_t i = 0; i < M; ++i)
    for (uint32_t j = 0; j < N; ++j)
      for (uint32_t k = 0; k < K; ++k) {
        ref[i * N + j] += double(ha[i * K + k]) * hb[k * N + j];
        mag[i * N + j] += std::fabs(double(ha[i * K + k]) * hb[k * N + j]);
      }
  tune::GatedOutputs outputs;
  outputs.poison = [&] { ctx().uploadVector(c, std::vector<float>(M * N, test::poisonF32())); };
  outputs.read = [&] { return std::vector<std::vector<float>>{ctx().downloadVector<float>(c, M * N)}; };
  outputs.error = [&](const std::vector<std::vector<float>>& got) {
    double worst = 0;
    for (size_t i = 0; i < ref.size(); ++i)
      worst = std::max(worst, std::isfinite(got[0][i]) ? std::fabs(got[0][i] - ref[i]) / mag[i] : INFINITY);
    return worst;
  };
  outputs.maxError = 1e-5;

  tuning::SearchSpace space;
  space.dims = {{"plant", {Honest, Throws, OwnGate, SameKernel, NoPipeline, Wrong, Flaky}}};
  int flakyRuns = 0, honestRuns = 0;
  const tune::TrialMaker trial = [&](const tuning::Candidate& cand,
                                     const std::function<double(const tune::Trial&)>& body) {
    const int64_t plant = space.dims[0].values[cand[0]];
    tune::Trial t;
    t.name = "plant" + std::to_string(plant);
    t.check = [plant]() -> tune::Checked {
      if (plant == Throws) throw std::invalid_argument("no such tiling");
      if (plant == OwnGate) return {"spirv-val", "planted", ""};
      return {"", "", plant == SameKernel ? "kernel0" : "kernel" + std::to_string(plant)};
    };
    t.run = [&, plant](ops::Executor& e) {
      if (plant == NoPipeline) throw std::runtime_error("vkCreateComputePipelines failed");
      ops::MatmulArgs args;
      args.a = a.range(), args.b = b.range(), args.c = c.range();
      args.M = M, args.N = N, args.K = K;
      args.kernel = ops::MatmulKernel::Tiled;
      if (plant == Wrong) args.alpha = 1.001f;
      if (plant == Flaky) args.alpha = ++flakyRuns % 2 ? 1.0f : -1.0f;
      if (plant == Honest) ++honestRuns;
      ops::matmul(e, args);
    };
    return body(t);
  };
  tune::HarnessOptions o;
  o.timing = {1, 1, 0};
  o.maxEvaluations = 100;
  o.minGain = 0.02;
  uint32_t progressCalls = 0;
  o.progress = [&](uint32_t, double) { ++progressCalls; };
  const tune::HarnessResult r = tune::searchCandidates(ctx(), space, trial, outputs, o);
  std::string all;
  for (const std::string& x : r.rejections)
    all += x + "\n";
  INFO(all);
  CHECK(r.evaluated == Plants);
  CHECK(progressCalls == Plants);
  CHECK(r.duplicates == 1);
  CHECK(r.rejected == Plants - 2); // all but Honest and SameKernel (a duplicate, not a rejection)
  CHECK(contains(r.rejections, "plant1", "parameters: no such tiling"));
  CHECK(contains(r.rejections, "plant2", "spirv-val: planted"));
  CHECK(contains(r.rejections, "plant4", "pipeline: vkCreateComputePipelines failed"));
  CHECK(contains(r.rejections, "plant5", "max error"));
  CHECK(contains(r.rejections, "plant6", "determinism: run 2 differs from run 1"));
  CHECK_FALSE(contains(r.rejections, "plant3", ":"));
  REQUIRE(r.chosen);
  CHECK(*r.chosen == tuning::Candidate{0});
  CHECK(r.defaultUs > 0);
  CHECK(r.bestUs == r.defaultUs); // only the policy's choice passed: it stands, not timed again
  CHECK(honestRuns >= 4);         // three gated runs and the timing
}

TEST_CASE("tuner harness: nothing passing leaves no choice", "[tuning][tuner]") {
  tune::GatedOutputs outputs;
  outputs.poison = [] {};
  outputs.read = [] { return std::vector<std::vector<float>>{{0.0f}}; };
  outputs.error = [](const std::vector<std::vector<float>>&) { return 0.0; };
  outputs.maxError = 1;
  tuning::SearchSpace space;
  space.dims = {{"x", {0, 1, 2}}};
  const tune::TrialMaker trial = [](const tuning::Candidate& c,
                                    const std::function<double(const tune::Trial&)>& body) {
    return body({"x" + std::to_string(c[0]),
                 [] {
                   return tune::Checked{"parameters", "never fits", ""};
                 },
                 [](ops::Executor&) {}});
  };
  tune::HarnessOptions o;
  const tune::HarnessResult r = tune::searchCandidates(ctx(), space, trial, outputs, o);
  CHECK(r.evaluated == 3);
  CHECK(r.rejected == 3);
  CHECK_FALSE(r.chosen);
  CHECK(r.defaultUs == 0);
  CHECK(r.bestUs == 0);
}
