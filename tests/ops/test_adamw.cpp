// In-place AdamW (engine/ops/adamw.hpp) over several steps against ref::adamw (float64 state), with weight
// decay, a gradient scale, changing hyperparameters on one pipeline, and size validation.
#include "engine/ops/adamw.hpp"
#include "support/guarded.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

using namespace helios;
using Catch::Matchers::ContainsSubstring;

namespace {

using test::ctx;
using test::head;

constexpr float kGuardValue = -98765.f;

vk::Buffer deviceBuffer(std::vector<float> data, const char* what) {
  return test::guardedBuffer(std::move(data), kGuardValue, what);
}

std::vector<float> read(const vk::Buffer& b, size_t n) {
  return test::readGuarded(b, n, kGuardValue);
}

} // namespace

// The GPU keeps p, m, v in f32, the reference in f64; each step adds a few f32 roundings to each.
// m is a signed sum of gradients (|g| <= 2) that can cancel to near zero, and so can p at n = 1: both are
// held to an absolute bound (a few f32 ulps of the terms, over 6 steps); v is a sum of squares, so relative.
TEST_CASE("adamw over several steps matches ref::adamw") {
  INFO("seed " << test::testSeed());
  const uint32_t n = GENERATE(1u, 7u, 33u, 127u, 513u, 64u, 1024u);
  INFO("n " << n);
  const auto p0 = test::randomFloats(n);
  std::vector<float> zeros(n, 0.0f);
  auto dp = deviceBuffer(p0, "p"), dm = deviceBuffer(zeros, "m"), dv = deviceBuffer(zeros, "v");
  auto dg = deviceBuffer(zeros, "g");
  ref::Vec p(p0.begin(), p0.end()), m(n, 0.0), v(n, 0.0);
  const uint64_t createdBefore = ctx().pipelines().stats().created;
  for (uint32_t step = 1; step <= 6; ++step) {
    // Vary everything a schedule would: lr, weight decay, betas, and the gradient scale.
    ops::AdamWHyper h;
    h.lr = 1e-2f / float(step);
    h.beta1 = step < 4 ? 0.9f : 0.85f;
    h.beta2 = 0.999f;
    h.eps = 1e-8f;
    h.weightDecay = step % 2 ? 0.1f : 0.0f;
    h.step = step;
    h.gradScale = step == 3 ? 0.25f : 1.0f;
    auto g = test::randomFloats(n, -2, 2);
    if (n > 3) g[3] = 0.0f; // a zero gradient: the update is driven by m, v and weight decay
    ctx().uploadVector(dg, g);
    {
      ops::ImmediateExecutor e(ctx());
      ops::adamw(e, head(dp, n), head(dm, n), head(dv, n), head(dg, n), n, h);
      e.flush();
    }
    std::vector<float> scaled(n);
    for (size_t i = 0; i < n; ++i)
      scaled[i] = g[i] * h.gradScale; // exact: power-of-two scale
    ref::adamw({h.lr, h.beta1, h.beta2, h.eps, h.weightDecay, h.step}, p, m, v, scaled);
  }
  CHECK(ctx().pipelines().stats().created - createdBefore <= 1); // one pipeline for every step
  CHECK(ref::maxAbsError(read(dp, n), p) < 2e-6);
  CHECK(ref::maxAbsError(read(dm, n), m) < 2e-6);
  CHECK(ref::relError(read(dv, n), v) < 1e-6);
  read(dg, n); // guard of the read-only gradient untouched too
}

TEST_CASE("adamw rejects short buffers and step 0") {
  const uint32_t n = 50;
  auto ok = ctx().buffer(4 * n, "ok"), shortBuf = ctx().buffer(4 * n - 4, "short");
  ops::ImmediateExecutor e(ctx());
  ops::AdamWHyper h;
  CHECK_THROWS_WITH(ops::adamw(e, ok.range(), ok.range(), shortBuf.range(), ok.range(), n, h),
                    ContainsSubstring("v holds 196 bytes"));
  CHECK_THROWS_WITH(ops::adamw(e, ok.range(), ok.range(), ok.range(), shortBuf.range(), n, h),
                    ContainsSubstring("g holds"));
  h.step = 0;
  CHECK_THROWS_WITH(ops::adamw(e, ok.range(), ok.range(), ok.range(), ok.range(), n, h),
                    ContainsSubstring("step"));
  CHECK(e.dispatches() == 0);
}
