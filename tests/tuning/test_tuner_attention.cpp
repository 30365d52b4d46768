// The attention search on the live device: the policy's own choice passes every gate, forward and backward,
// on a small causal shape, where the sampled rows include the first query's, whose dQ cancels to 0 (its one
// probability is 1), so the gradients' error scale must come from their terms before the cancellation. Where
// coop attention does not run it skips; the coop-emulated entry runs it lowered.
#include <catch2/catch_test_macros.hpp>

#include <string>

#include "engine/ops/attention.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/vk/context.hpp"
#include "tools/helios_tune/attention_tuner.hpp"

using namespace helios;

namespace {

vk::Context& ctx() {
  static auto c = vk::Context::create();
  return *c;
}

} // namespace

TEST_CASE("tuner: the attention policy's choice passes the gates, forward and backward",
          "[tuner_attention]") {
  if (!ops::attentionCoopAvailable(ctx().device(), 16))
    SKIP("no coop attention here (the coop-emulated entry runs this case lowered)");
  const tune::AttentionTarget target{1, 2, 48, 16, true};
  for (const auto stage : {tune::AttentionStage::Forward, tune::AttentionStage::Backward}) {
    tune::AttentionTuneOptions o;
    o.maxEvaluations = 1; // the policy's choice alone
    o.samples = 48;       // every row of the sampled head is likely drawn
    o.timing = {2, 2, 0};
    const tune::AttentionTuneResult r =
        tune::tuneAttention(ctx(), target, stage, ops::deviceTuning(ctx().device()), o);
    std::string why = tune::stageName(stage);
    for (const std::string& x : r.rejections)
      why += "\n" + x;
    INFO(why);
    REQUIRE(r.available);
    CHECK(r.evaluated == 1);
    CHECK(r.rejected == 0);
    CHECK(r.defaultUs > 0);
  }
}
