// The tape's gradient slots: f16 forms (widened for f32 readers, recast after f32 writes) and add()'s shared
// gradients with copy-on-write, against float64 references.
#include "autograd_test_util.hpp"
#include "engine/autograd/ops.hpp"
#include "engine/core/half.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

#include <catch2/catch_test_macros.hpp>
#include <cmath>

using namespace helios;
using namespace helios::autograd_test;
using autograd::Tape;
using autograd::Tensor;

TEST_CASE("tape: an f16 gradient is widened for f32 readers and recast after f32 writes", "[model]") {
  const auto& f = ctx().device().features();
  if (!(f.shaderFloat16 && f.storageBuffer16BitAccess)) SKIP("device lacks 16-bit storage");
  const uint32_t n = 513;
  std::vector<uint16_t> g16(n);
  std::vector<float> g(n), more = test::randomFloats(n);
  for (uint32_t i = 0; i < n; ++i)
    g[i] = halfToFloat(g16[i] = floatToHalf(test::randomFloats(1)[0]));
  vk::Buffer hb = ctx().buffer(n * 2, "g16"), mb = upload(more, "more"), xb = upload(g, "x");
  ctx().uploadVector(hb, g16);
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  autograd::Workspace ws(arena);
  Tape tape(exec, ws);
  Tensor t = tape.empty({n}, autograd::DType::F32, true, "t");
  tape.passGradHalf(t, hb.range(), autograd::DType::F16);
  const auto same = [](vk::BufferRange a, vk::BufferRange b) {
    return a.buffer == b.buffer && a.offset == b.offset;
  };
  CHECK(same(tape.gradOfHalf(t, autograd::DType::F16), hb.range())); // handed back as it is: no cast
  const vk::BufferRange wide = tape.gradOf(t);                       // widened for an f32 reader
  vk::Buffer wideHost = ctx().buffer(n * 4, "wide");
  ops::copy(exec, wide, wideHost.range(), n);
  tape.passGrad(t, mb.range(), false); // an f32 write: the f16 form is stale now
  const vk::BufferRange again = tape.gradOfHalf(t, autograd::DType::F16);
  CHECK_FALSE(same(again, hb.range()));
  vk::Buffer againHost = ctx().buffer(n * 2, "again");
  ops::copy(exec, again, againHost.range(), n, ops::Elem::F16);
  exec.flush();
  CHECK(download(wideHost, n) == g);
  const auto sum = ctx().downloadVector<uint16_t>(againHost, n);
  size_t far = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const double want = double(g[i]) + more[i];
    far += std::fabs(halfToFloat(sum[i]) - want) > std::fabs(want) * 1e-3 + 1e-4;
  }
  CHECK(far == 0);
}

// add() hands its output gradient to both inputs without a copy; whichever is written first while the other
// may still be read takes a private copy. Three patterns, each against a float64 reference.
TEST_CASE("autograd add shares its gradient: y = a + a W (the writer copies first)", "[model][add]") {
  const uint32_t M = 5, K = 6;
  const auto a = test::randomFloats(size_t(M) * K), w = test::randomFloats(size_t(K) * K),
             dy = test::randomFloats(size_t(M) * K);
  vk::Buffer ab = upload(a, "a"), wb = upload(w, "w"), dyb = upload(dy, "dy");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  autograd::Workspace ws(arena);
  Tape tape(exec, ws);
  const Tensor at = leaf(ab, {M, K});
  autograd::MatmulSpec s;
  s.M = M;
  s.N = K;
  s.K = K;
  const Tensor y =
      autograd::add(tape, at, autograd::matmul(tape, at, Tensor::constant(wb.range(), {K, K}), s));
  tape.seedGrad(y, dyb.range());
  tape.backward();
  // da = dy + dy W^T: the matmul's backward reads dy (its output's gradient) while it writes da, which
  // started as that same dy.
  ref::Vec want(a.size());
  for (uint32_t m = 0; m < M; ++m)
    for (uint32_t k = 0; k < K; ++k) {
      double v = dy[size_t(m) * K + k];
      for (uint32_t j = 0; j < K; ++j)
        v += double(dy[size_t(m) * K + j]) * w[size_t(k) * K + j];
      want[size_t(m) * K + k] = v;
    }
  CHECK(ref::maxAbsError(gradOfLeaf(exec, at), want) < 1e-5);
  CHECK(download(dyb, dy.size()) == dy); // the seed itself is never written
}

TEST_CASE("autograd add shares its gradient: an input used again before the add", "[model][add]") {
  const uint32_t n = 33;
  const auto a = test::randomFloats(n), b = test::randomFloats(n), dz = test::randomFloats(n);
  vk::Buffer ab = upload(a, "a"), bb = upload(b, "b"), dzb = upload(dz, "dz");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  autograd::Workspace ws(arena);
  Tape tape(exec, ws);
  const Tensor at = leaf(ab, {n}), bt = leaf(bb, {n});
  const Tensor c = autograd::mul(tape, bt, bt); // b's other use, recorded before the add
  const Tensor y = autograd::add(tape, at, bt);
  const Tensor z = autograd::add(tape, y, c);
  tape.seedGrad(z, dzb.range());
  tape.backward();
  // a, b, y and c all start on dz; b's second contribution (2 b dz) must not reach a.
  ref::Vec da(n), db(n);
  for (uint32_t i = 0; i < n; ++i) {
    da[i] = dz[i];
    db[i] = dz[i] + 2.0 * double(b[i]) * dz[i];
  }
  CHECK(ref::maxAbsError(gradOfLeaf(exec, at), da) == 0.0);
  CHECK(ref::maxAbsError(gradOfLeaf(exec, bt), db) < 1e-6);
}

TEST_CASE("autograd add shares its gradient along a residual chain", "[model][add]") {
  const uint32_t n = 127;
  const auto x = test::randomFloats(n), g = test::randomFloats(n), h = test::randomFloats(n),
             dy = test::randomFloats(n);
  vk::Buffer xb = upload(x, "x"), gb = upload(g, "g"), hb = upload(h, "h"), dyb = upload(dy, "dy");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  autograd::Workspace ws(arena);
  Tape tape(exec, ws);
  const Tensor x0 = leaf(xb, {n});
  // x1 = x0 + g * x0, x2 = x1 + h * x1: dx0 = dy (1 + h)(1 + g).
  const Tensor x1 = autograd::add(tape, x0, autograd::mul(tape, Tensor::constant(gb.range(), {n}), x0));
  const Tensor x2 = autograd::add(tape, x1, autograd::mul(tape, Tensor::constant(hb.range(), {n}), x1));
  tape.seedGrad(x2, dyb.range());
  tape.backward();
  ref::Vec want(n);
  for (uint32_t i = 0; i < n; ++i)
    want[i] = double(dy[i]) * (1.0 + h[i]) * (1.0 + g[i]);
  CHECK(ref::maxAbsError(gradOfLeaf(exec, x0), want) < 1e-5);
}
