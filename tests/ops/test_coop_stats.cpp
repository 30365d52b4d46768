// The coop dispatch counters (coop_stats.hpp): counts per decision, hit rate and the one-line summary.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "engine/ops/coop_stats.hpp"
#include "matmul_policy_fixtures.hpp"

using namespace helios;
using namespace helios::ops;
using namespace helios::policy_test;
using Catch::Matchers::ContainsSubstring;

TEST_CASE("coop stats: counters, hit rate and the one-line summary", "[coop_stats]") {
  coopStats().reset();
  CHECK(coopStatsLine() == "coop_matmul: 0/0 coop (0.0%) direct=0 padded=0 padded_batched=0 "
                           "transposed_a_direct=0 rewrite=0 bounded=0 fallback=0");
  for (int i = 0; i < 100; ++i)
    coopStats().record(planMatmul(problem(4096, 4096, 4096), h100()));
  for (int i = 0; i < 18; ++i)
    coopStats().record(planMatmul(problem(1000, 1000, 1000), h100(), padOnly()));
  for (int i = 0; i < 3; ++i)
    coopStats().record(planMatmul(problem(511, 513, 257), h100(), withBounded()));
  tuning::GemmTuning cfg = padOnly();
  cfg.paddingCap.value = 10.0;
  coopStats().record(planMatmul(problem(63, 63, 63), h100(), cfg));
  coopStats().record(planMatmul(problem(60, 60, 60), h100(), cfg));
  const CoopStatsSnapshot s = coopStats().snapshot();
  CHECK(s.total() == 123);
  CHECK(s.coop() == 121);
  CHECK(s.hitRate() == Catch::Approx(121.0 / 123.0));
  CHECK(coopStatsLine() == "coop_matmul: 121/123 coop (98.4%) direct=100 padded=18 padded_batched=0 "
                           "transposed_a_direct=0 rewrite=0 bounded=3 fallback=2 [too small: 2]");
  coopStats().record(planMatmul(problem(4096, 4096, 4096), noCoop()));
  CHECK_THAT(coopStatsLine(), ContainsSubstring("[too small: 2, no cooperative matrices on this device: 1]"));
  coopStats().reset();
  CHECK(coopStats().snapshot().total() == 0);
}

// ---- the padded path end to end on the local device, tiled kernel standing in for the coop kernel ----
