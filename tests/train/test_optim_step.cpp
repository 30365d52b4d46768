// The optimizer-step kernels against host arithmetic: sums of squares per tensor (grid-stride included), the
// control dispatch (norm, clip factor, overflow flag, AdamW step counter, bias corrections, record), and
// AdamW reading the control buffer (update, gradient zeroing, skip).
#include "codegen/kernels/optim_step.hpp"
#include "codegen/spirv/tools.hpp"
#include "engine/core/half.hpp"
#include "engine/ops/optim_step.hpp"
#include "support/random.hpp"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstring>
#include <limits>

using namespace helios;
using Catch::Approx;

namespace {

vk::Context& ctx() {
  static auto context = vk::Context::create({.persistentPipelineCache = false});
  return *context;
}

struct Tensor {
  uint32_t n;
  std::vector<float> g;
  vk::Buffer buf;
};

} // namespace

TEST_CASE("optim_step: every kernel of the sweep passes spirv-val (scalar, four-wide and bf16 AdamW)",
          "[train][optim]") {
  codegen::KernelRegistry reg;
  codegen::registerOptimStep(reg);
  const auto ks = reg.find("optim_step")->all();
  CHECK(ks.size() == 11);
  for (const auto& k : ks) {
    INFO(k.name);
    const auto r = helios::spv::validate(k.spirv);
    CHECK(r.ok);
    if (!r.ok) UNSCOPED_INFO(r.message);
  }
}

TEST_CASE("optim_step: norm, control and AdamW match the host", "[train][optim]") {
  ops::ImmediateExecutor exec(ctx());
  const float scale = 8.0f, maxNorm = 1.0f;
  std::vector<Tensor> ts;
  for (uint32_t n : {7u, 1000u, 300001u}) { // the last one needs the grid-stride loop (1024 groups max)
    Tensor t{n, test::randomFloats(n, -0.05f, 0.05f), ctx().buffer(4ull * n, "g")};
    ctx().uploadVector(t.buf, t.g);
    ts.push_back(std::move(t));
  }
  const uint32_t align = static_cast<uint32_t>(ctx().allocator().alignment() / 4);
  std::vector<uint32_t> slot;
  uint32_t count = 0;
  for (auto& t : ts) {
    slot.push_back(count);
    count += (ops::gradSumsqSlots(t.n) + align - 1) / align * align;
  }
  vk::Buffer partials = ctx().buffer(4ull * count, "partials");
  ctx().uploadVector(partials, std::vector<float>(count, 0.0f));
  for (size_t i = 0; i < ts.size(); ++i) {
    vk::BufferRange r = partials.range();
    r.offset += 4ull * slot[i];
    r.size = 4ull * ops::gradSumsqSlots(ts[i].n);
    ops::gradSumsq(exec, ts[i].buf.range(), ts[i].n, r, 0);
  }
  vk::Buffer losses = ctx().buffer(16, "losses"), state = ctx().buffer(16, "state"),
             control = ctx().buffer(16, "c");
  vk::Buffer records = ctx().buffer(64, "records");
  ctx().uploadVector(losses, std::vector<float>{2.0f, 0.0f, 4.0f, 0.0f});
  ctx().uploadVector(state, std::vector<float>{4.0f, 0, 0, 0}); // four updates already taken
  ops::OptimControlArgs c{partials.range(), losses.range(), state.range(), control.range(), records.range()};
  c.count = count;
  c.lossCount = 4;
  c.lossMul = 0.5f;
  c.slot = 1;
  c.scale = scale;
  c.maxNorm = maxNorm;
  c.beta1 = 0.9f;
  c.beta2 = 0.95f;
  ops::optimControl(exec, c);
  exec.flush();

  double sumsq = 0;
  for (auto& t : ts)
    for (float v : t.g)
      sumsq += double(v) * v;
  const double norm = std::sqrt(sumsq) / scale;
  REQUIRE(norm > maxNorm); // so that clipping is exercised
  const double clip = maxNorm / (norm + 1e-6);
  const auto ctrl = ctx().downloadVector<float>(control, 4);
  const auto rec = ctx().downloadVector<float>(records, 16);
  CHECK(ctrl[0] == Approx(clip / scale).epsilon(1e-5));
  CHECK(ctrl[1] == 0.0f);
  CHECK(ctrl[2] == Approx(1.0 / (1.0 - std::pow(0.9, 5))).epsilon(1e-5));
  CHECK(ctrl[3] == Approx(1.0 / (1.0 - std::pow(0.95, 5))).epsilon(1e-5));
  CHECK(rec[8 + 0] == 3.0f); // mean loss (2 + 4) * 0.5
  CHECK(rec[8 + 1] == Approx(norm).epsilon(1e-5));
  CHECK(rec[8 + 2] == 1.0f);
  CHECK(rec[8 + 3] == 5.0f);
  CHECK(ctx().downloadVector<float>(state, 1)[0] == 5.0f);

  // AdamW with the control buffer, on the largest tensor.
  Tensor& t = ts[2];
  const auto p0 = test::randomFloats(t.n, -1, 1), m0 = test::randomFloats(t.n, -0.01f, 0.01f);
  auto v0 = test::randomFloats(t.n, 0, 1e-4f);
  vk::Buffer p = ctx().buffer(4ull * t.n, "p"), m = ctx().buffer(4ull * t.n, "m"),
             v = ctx().buffer(4ull * t.n, "v");
  ctx().uploadVector(p, p0);
  ctx().uploadVector(m, m0);
  ctx().uploadVector(v, v0);
  const ops::AdamWCtrlHyper h{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f};
  // 300000 elements take the four-wide kernel, 300001 the scalar one; the element past n stays as it was.
  for (uint32_t n : {t.n - 1, t.n}) {
    INFO("AdamW over " << n << " elements");
    ctx().uploadVector(p, p0);
    ctx().uploadVector(m, m0);
    ctx().uploadVector(v, v0);
    ctx().uploadVector(t.buf, t.g);
    ops::adamwCtrl(exec, p.range(), m.range(), v.range(), t.buf.range(), control.range(), n, h);
    exec.flush();
    const auto p1 = ctx().downloadVector<float>(p, t.n);
    const auto g1 = ctx().downloadVector<float>(t.buf, t.n);
    double maxErr = 0;
    for (uint32_t i = 0; i < n; i += 97) {
      const double g = double(t.g[i]) * ctrl[0];
      const double mm = 0.9 * m0[i] + 0.1 * g, vv = 0.95 * v0[i] + 0.05 * g * g;
      const double upd = (mm * ctrl[2]) / (std::sqrt(vv * ctrl[3]) + 1e-8) + 0.1 * p0[i];
      maxErr = std::max(maxErr, std::fabs(p1[i] - (p0[i] - 1e-2 * upd)));
    }
    CHECK(maxErr < 1e-5);
    for (uint32_t i = 0; i < n; ++i)
      REQUIRE(g1[i] == 0.0f); // zeroed for the next step's accumulation
    if (n < t.n) {
      CHECK(p1[n] == p0[n]);
      CHECK(g1[n] == t.g[n]);
    }
  }

  SECTION("an inf gradient skips the update") {
    std::vector<float> bad(ts[0].n, 1.0f);
    bad[3] = std::numeric_limits<float>::infinity();
    ctx().uploadVector(ts[0].buf, bad);
    vk::BufferRange r = partials.range();
    r.offset += 4ull * slot[0];
    r.size = 4ull * ops::gradSumsqSlots(ts[0].n);
    ops::gradSumsq(exec, ts[0].buf.range(), ts[0].n, r, 0);
    c.slot = 0;
    ops::optimControl(exec, c);
    ctx().uploadVector(p, p0);
    exec.flush();
    ops::adamwCtrl(exec, p.range(), m.range(), v.range(), ts[0].buf.range(), control.range(), ts[0].n, h);
    exec.flush();
    const auto ctrl2 = ctx().downloadVector<float>(control, 4);
    CHECK(ctrl2[0] == 0.0f);
    CHECK(ctrl2[1] == 1.0f);
    CHECK(ctx().downloadVector<float>(records, 8)[2] == 0.0f);
    CHECK(ctx().downloadVector<float>(state, 1)[0] == 5.0f); // the counter did not advance
    CHECK(ctx().downloadVector<float>(p, t.n) == p0);        // nothing moved
    for (float g : ctx().downloadVector<float>(ts[0].buf, ts[0].n))
      CHECK(g == 0.0f);
  }
}

// AdamW on bf16 parameters (f32 m, v, g): the update is computed in f32 and rounded stochastically with the
// host-visible hash (codegen::adamwRoundingBits). Every result lies within a bf16 ulp of the
// float64 update, almost all equal the host's emulation bit for bit (the GPU's division and square root may
// differ from the host's in the last f32 bit), the element past n stays, and steps smaller than half a bf16
// ulp still move the weights by their expected total (round to nearest would leave them all unchanged).
TEST_CASE("optim_step: AdamW on bf16 parameters rounds stochastically and without bias",
          "[train][optim][bf16]") {
  ops::ImmediateExecutor exec(ctx());
  const uint32_t n = 100001; // odd: the last bf16 shares a 32-bit word with the sentinel
  const auto pHost = test::randomFloats(n + 1, 0.5f, 1.0f);
  std::vector<uint16_t> p0(n + 1);
  for (uint32_t i = 0; i <= n; ++i)
    p0[i] = floatToBf16(pHost[i]);
  const std::vector<float> g0(n, 0.01f), zeros(n, 0.0f);
  vk::Buffer p = ctx().buffer(2ull * (n + 1), "p"), m = ctx().buffer(4ull * n, "m"),
             v = ctx().buffer(4ull * n, "v"), g = ctx().buffer(4ull * n, "g"),
             control = ctx().buffer(16, "c");
  // The first step (t = 1): gradMul 1, no skip, 1/(1-0.9), 1/(1-0.95): every update is 1 (+ decay).
  const std::vector<float> ctrl{1.0f, 0.0f, 10.0f, 20.0f};
  ctx().uploadVector(control, ctrl);
  const uint32_t seed = 0x1234567u;
  for (float lr : {1e-2f, 1e-4f}) {
    INFO("lr " << lr);
    ctx().uploadVector(p, p0);
    ctx().uploadVector(m, zeros);
    ctx().uploadVector(v, zeros);
    ctx().uploadVector(g, g0);
    const ops::AdamWCtrlHyper h{lr, 0.9f, 0.95f, 1e-8f, 0.1f};
    ops::adamwCtrl(exec, p.range(), m.range(), v.range(), g.range(), control.range(), n, h,
                   codegen::Elem::BF16, seed);
    exec.flush();
    const auto p1 = ctx().downloadVector<uint16_t>(p, n + 1);
    CHECK(p1[n] == p0[n]);
    CHECK(ctx().downloadVector<float>(g, n) == zeros);
    uint32_t exact = 0, outside = 0;
    double moved = 0, expected = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const float pOld = bf16ToFloat(p0[i]);
      // The kernel's f32 arithmetic, in its order.
      const float gg = g0[i] * ctrl[0], mNew = gg * (1.0f - 0.9f), vNew = gg * gg * (1.0f - 0.95f);
      const float update = mNew * ctrl[2] / (std::sqrt(vNew * ctrl[3]) + 1e-8f) + pOld * 0.1f;
      const float pNew = pOld - update * lr;
      uint32_t bits;
      std::memcpy(&bits, &pNew, 4);
      const uint16_t emulated = static_cast<uint16_t>((bits + codegen::adamwRoundingBits(seed, i)) >> 16);
      exact += p1[i] == emulated;
      const double exactNew = pOld - double(lr) * (1.0 + 0.1 * double(pOld));
      outside += std::abs(bf16ToFloat(p1[i]) - exactNew) >= 1.0 / 256; // a bf16 ulp in [0.5, 1)
      moved += bf16ToFloat(p1[i]) - pOld;
      expected += exactNew - pOld;
    }
    CHECK(outside == 0);
    CHECK(exact >= n - n / 100);
    // ulp 2^-8 in [0.5, 1): the rounding's noise on the sum is ~0.5; the expected total ~ -n * lr * 1.08.
    CHECK(std::abs(moved - expected) < 0.05 * std::abs(expected) + 3.0);
    if (lr < 1e-3f) CHECK(std::abs(expected) > 10.0); // well beyond the noise, and RNE would move nothing
  }
}
