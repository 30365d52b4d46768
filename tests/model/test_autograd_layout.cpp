// Autograd ops that move data, against references: permute (full and partial views, to f16, the
// scatter-accumulate backward), the packed-projection split into views, and RoPE (the transposed backward).
#include "autograd_test_util.hpp"
#include "engine/autograd/ops.hpp"
#include "engine/ops/rope.hpp"
#include "gpt_reference.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

using namespace helios;
using namespace helios::autograd_test;
using autograd::Tape;
using autograd::Tensor;

TEST_CASE("autograd permute: [B,T,H,D] <-> [B,H,T,D], full and partial views", "[model][permute]") {
  // D = 8: every offset and stride divides by 4, so ops::permute takes its 4-vector kernel; D = 5: scalar.
  const uint32_t D = GENERATE(5u, 8u);
  const uint32_t B = 2, T = 3, H = 4, W = 3 * H * D; // a packed [B*T, 3*H*D] source
  const auto x = test::randomFloats(size_t(B) * T * W);
  const auto dy = test::randomFloats(size_t(B) * H * T * D);
  const uint32_t part = GENERATE(0u, 1u, 2u), col = part * H * D;
  vk::Buffer xb = upload(x, "x"), gb = upload(std::vector<float>(x.size(), 7.0f), "grad"),
             dyb = upload(dy, "dy");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  autograd::Workspace ws(arena);
  Tape tape(exec, ws);
  // A non-persistent slot that starts empty: the partial backward must zero the rest, not keep the 7s.
  Tensor xt = Tensor::constant(xb.range(), {B * T, W});
  xt.gradSlot = std::make_shared<autograd::GradSlot>();
  xt.gradSlot->range = gb.range();
  const Tensor y = autograd::permute(tape, xt, {B, H, T, D}, col, {T * W, D, W, 1});
  tape.seedGrad(y, dyb.range());
  tape.backward();
  exec.flush();
  // y lives in the workspace: copy it into a buffer of its own to read it back.
  vk::Buffer yHost = ctx().buffer(y.bytes(), "y");
  ops::copy(exec, y.data, yHost.range(), y.count());
  exec.flush();
  const auto yv = download(yHost, y.elements());
  const auto g = download(gb, x.size());
  ref::Vec yRef(yv.size()), gRef(x.size(), 0.0);
  for (uint32_t b = 0; b < B; ++b)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t t = 0; t < T; ++t)
        for (uint32_t d = 0; d < D; ++d) {
          const size_t src = size_t(b) * T * W + size_t(t) * W + col + h * D + d;
          const size_t dst = ((size_t(b) * H + h) * T + t) * D + d;
          yRef[dst] = x[src];
          gRef[src] = dy[dst];
        }
  CHECK(ref::maxAbsError(yv, yRef) == 0.0);
  CHECK(ref::maxAbsError(g, gRef) == 0.0);
}

TEST_CASE("autograd permute to f16: the f32 permute rounded, same f32 gradient", "[model][permute]") {
  const auto& f = ctx().device().features();
  if (!(f.shaderFloat16 && f.storageBuffer16BitAccess)) SKIP("device lacks 16-bit storage");
  const uint32_t D = GENERATE(33u, 64u); // 64: the 4-vector kernels (f32 -> f16 forward, f32 backward)
  const uint32_t B = 2, T = 7, H = 3;    // [B, H, T, D] -> [B, T, H, D], as the head merge
  const size_t n = size_t(B) * H * T * D;
  const auto x = test::randomFloats(n, -70000, 70000); // past f16's range too: inf, as a cast gives
  const auto dy = test::randomFloats(n);
  vk::Buffer xb = upload(x, "x"), dyb = upload(dy, "dy");
  vk::Buffer g32 = upload(std::vector<float>(n, 7.0f), "g32"),
             g16 = upload(std::vector<float>(n, 7.0f), "g16");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  autograd::Workspace ws(arena);
  Tape tape(exec, ws);
  const auto leaf = [&](const vk::Buffer& grad) {
    Tensor t = Tensor::constant(xb.range(), {B, H, T, D});
    t.gradSlot = std::make_shared<autograd::GradSlot>();
    t.gradSlot->range = grad.range();
    return t;
  };
  const std::array<uint32_t, 4> shape{B, T, H, D}, strides{H * T * D, D, T * D, 1};
  const Tensor y32 = autograd::permute(tape, leaf(g32), shape, 0, strides);
  const Tensor y16 = autograd::permute(tape, leaf(g16), shape, 0, strides, autograd::DType::F16);
  CHECK(y16.dtype == autograd::DType::F16);
  tape.seedGrad(y32, dyb.range());
  tape.seedGrad(y16, dyb.range());
  tape.backward();
  exec.flush();
  vk::Buffer cast = ctx().buffer(n * 2, "cast"), got = ctx().buffer(n * 2, "y16");
  ops::cast(exec, y32.data, cast.range(), static_cast<uint32_t>(n), ops::Elem::F32, ops::Elem::F16);
  ops::copy(exec, y16.data, got.range(), static_cast<uint32_t>(n), ops::Elem::F16);
  exec.flush();
  CHECK(ctx().downloadVector<uint16_t>(got, n) == ctx().downloadVector<uint16_t>(cast, n));
  CHECK(download(g16, n) == download(g32, n));
  CHECK(download(g32, n)[T * D] ==
        dy[D]); // x[0, h=1, 0, 0] went to y[0, 0, h=1, 0]: the scatter's spot check
  CHECK_THROWS_WITH(autograd::permute(tape, y16, shape, 0, strides, autograd::DType::F16),
                    Catch::Matchers::ContainsSubstring("expects f32 tensors"));
}

TEST_CASE("autograd permute: a full permutation overwrites, then accumulates", "[model][permute]") {
  const uint32_t B = 2, H = 3, T = 4, D = 6;
  const auto o = test::randomFloats(size_t(B) * H * T * D);
  const auto dy = test::randomFloats(o.size());
  vk::Buffer ob = upload(o, "o"), gb = upload(std::vector<float>(o.size(), 0.5f), "grad"),
             dyb = upload(dy, "dy");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  autograd::Workspace ws(arena);
  Tape tape(exec, ws);
  Tensor ot = Tensor::parameter(ob.range(), gb.range(), {B * H * T, D}); // persistent: accumulates onto 0.5
  const Tensor y = autograd::permute(tape, ot, {B, T, H, D}, 0, {H * T * D, D, T * D, 1});
  tape.seedGrad(y, dyb.range());
  tape.backward();
  exec.flush();
  const auto g = download(gb, o.size());
  ref::Vec gRef(o.size());
  for (uint32_t b = 0; b < B; ++b)
    for (uint32_t t = 0; t < T; ++t)
      for (uint32_t h = 0; h < H; ++h)
        for (uint32_t d = 0; d < D; ++d)
          gRef[((size_t(b) * H + h) * T + t) * D + d] =
              0.5 + double(dy[((size_t(b) * T + t) * H + h) * D + d]);
  CHECK(ref::maxAbsError(g, gRef) < 1e-6);
}

TEST_CASE("autograd rope: forward and transposed backward", "[model][rope]") {
  const uint32_t rows = 2 * 3 * 7, D = GENERATE(2u, 8u, 16u), T = 7;
  const auto x = test::randomFloats(size_t(rows) * D);
  const auto dy = test::randomFloats(x.size());
  const auto tab = ops::ropeTable(T, D);
  vk::Buffer xb = upload(x, "x"), gb = upload(std::vector<float>(x.size(), 0.0f), "grad"),
             dyb = upload(dy, "dy");
  vk::Buffer tb = upload(tab, "table");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  autograd::Workspace ws(arena);
  Tape tape(exec, ws);
  const Tensor xt = Tensor::parameter(xb.range(), gb.range(), {rows, D});
  const Tensor y = autograd::rope(tape, xt, tb.range(), D, T);
  tape.seedGrad(y, dyb.range());
  tape.backward();
  vk::Buffer yHost = ctx().buffer(y.bytes(), "y");
  ops::copy(exec, y.data, yHost.range(), y.count());
  exec.flush();
  const auto yv = download(yHost, x.size()), g = download(gb, x.size());
  ref::Vec yRef = toVec(x), gRef = toVec(dy);
  for (uint32_t r = 0; r < rows; ++r) {
    test::ropeReference(&yRef[size_t(r) * D], D, r % T);
    test::ropeReference(&gRef[size_t(r) * D], D, r % T, true);
  }
  CHECK(ref::maxAbsError(yv, yRef) < 1e-6);
  CHECK(ref::maxAbsError(g, gRef) < 1e-6);
  // The inverse undoes the forward.
  ref::Vec round = yRef;
  for (uint32_t r = 0; r < rows; ++r)
    test::ropeReference(&round[size_t(r) * D], D, r % T, true);
  CHECK(ref::maxAbsError(x, round) < 1e-6);
}

// Q, K and V views of a packed [B*T, 3*H*D] projection: the same values as three permutes; the backward
// writes each part of dx once (no fill), zeroes a part without a gradient, and adds when dx already holds
// one.
TEST_CASE("autograd permuteSplit: the views partition x, one backward writes every part",
          "[model][permute]") {
  const uint32_t D = GENERATE(5u, 16u); // 16: the 4-vector kernels
  const uint32_t B = 2, T = 3, H = 4, W = 3 * H * D;
  const auto x = test::randomFloats(size_t(B) * T * W);
  const size_t part = size_t(B) * H * T * D;
  const auto dy = test::randomFloats(3 * part);
  const int present = GENERATE(3, 2); // parts that receive a gradient
  const bool preWritten = GENERATE(false, true);
  INFO("parts with a gradient " << present << ", dx already written " << preWritten);
  vk::Buffer xb = upload(x, "x"), dyb = upload(dy, "dy"),
             pre = upload(std::vector<float>(x.size(), 0.5f), "pre");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  autograd::Workspace ws(arena);
  Tape tape(exec, ws);
  Tensor xt = leaf(xb, {B * T, W});
  if (preWritten) {
    xt.gradSlot->range = pre.range();
    xt.gradSlot->written = true;
  }
  std::vector<autograd::PermuteView> views;
  for (uint32_t s = 0; s < 3; ++s)
    views.push_back({{B, H, T, D}, s * H * D, {T * W, D, W, 1}});
  const auto ys = autograd::permuteSplit(tape, xt, views);
  REQUIRE(ys.size() == 3);
  for (int s = 0; s < present; ++s)
    tape.seedGrad(ys[size_t(s)], vk::subrange(dyb.range(), s * part * 4, part * 4));
  tape.backward();
  exec.flush();
  ref::Vec yRef(3 * part), gRef(x.size(), preWritten ? 0.5 : 0.0);
  for (uint32_t s = 0; s < 3; ++s)
    for (uint32_t b = 0; b < B; ++b)
      for (uint32_t h = 0; h < H; ++h)
        for (uint32_t t = 0; t < T; ++t)
          for (uint32_t d = 0; d < D; ++d) {
            const size_t src = size_t(b) * T * W + size_t(t) * W + s * H * D + h * D + d;
            const size_t dst = s * part + ((size_t(b) * H + h) * T + t) * D + d;
            yRef[dst] = x[src];
            if (int(s) < present) gRef[src] += dy[dst];
          }
  std::vector<float> yv;
  for (const Tensor& y : ys) {
    vk::Buffer host = ctx().buffer(y.bytes(), "y");
    ops::copy(exec, y.data, host.range(), y.count());
    exec.flush();
    const auto v = download(host, y.elements());
    yv.insert(yv.end(), v.begin(), v.end());
  }
  CHECK(ref::maxAbsError(yv, yRef) == 0.0);
  CHECK(ref::maxAbsError(gradOfLeaf(exec, xt), gRef) < 1e-6);
  views.pop_back();
  CHECK_THROWS_WITH(autograd::permuteSplit(tape, xt, views),
                    Catch::Matchers::ContainsSubstring("must partition x"));
}
