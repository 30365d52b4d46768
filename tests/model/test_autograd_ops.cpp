// Per-op autograd tests for the pieces the GPT adds: permute (full and partial views, forward and the
// scatter-accumulate backward), RoPE (forward and the transposed backward) and the matmul backward for every
// transpose combination, each against float64 references.
#include "engine/autograd/ops.hpp"
#include "engine/core/half.hpp"
#include "engine/ops/rope.hpp"
#include "gpt_reference.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <random>

using namespace helios;
using autograd::Tape;
using autograd::Tensor;

namespace {

vk::Context& ctx() {
  static auto context = vk::Context::create({.persistentPipelineCache = false});
  return *context;
}

vk::Buffer upload(const std::vector<float>& v, const char* what) {
  vk::Buffer b = ctx().buffer(v.size() * 4, what);
  ctx().uploadVector(b, v);
  return b;
}

std::vector<float> download(const vk::Buffer& b, size_t n) {
  return ctx().downloadVector<float>(b, n);
}

ref::Vec toVec(const std::vector<float>& v) {
  return ref::Vec(v.begin(), v.end());
}

} // namespace

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
  const Tensor y16 = autograd::permute(tape, leaf(g16), shape, 0, strides, true);
  CHECK(y16.dtype == autograd::DType::F16);
  tape.seedGrad(y32, dyb.range());
  tape.seedGrad(y16, dyb.range());
  tape.backward();
  exec.flush();
  vk::Buffer cast = ctx().buffer(n * 2, "cast"), got = ctx().buffer(n * 2, "y16");
  ops::castF32ToF16(exec, y32.data, cast.range(), static_cast<uint32_t>(n));
  ops::copy(exec, y16.data, got.range(), static_cast<uint32_t>(n), ops::EwType::F16);
  exec.flush();
  CHECK(ctx().downloadVector<uint16_t>(got, n) == ctx().downloadVector<uint16_t>(cast, n));
  CHECK(download(g16, n) == download(g32, n));
  CHECK(download(g32, n)[T * D] ==
        dy[D]); // x[0, h=1, 0, 0] went to y[0, 0, h=1, 0]: the scatter's spot check
  CHECK_THROWS_WITH(autograd::permute(tape, y16, shape, 0, strides, true),
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

TEST_CASE("autograd matmul: dA, dB and dbias for every transpose combination", "[model][matmul]") {
  const bool transA = GENERATE(false, true), transB = GENERATE(false, true);
  const uint32_t M = 5, N = 7, K = 6, batch = 2;
  const float alpha = 0.75f;
  const auto a = test::randomFloats(size_t(batch) * M * K), b = test::randomFloats(size_t(batch) * K * N);
  const auto dc = test::randomFloats(size_t(batch) * M * N);
  vk::Buffer ab = upload(a, "a"), bb = upload(b, "b"), dcb = upload(dc, "dc");
  vk::Buffer gab = upload(std::vector<float>(a.size(), 0.0f), "ga"),
             gbb = upload(std::vector<float>(b.size(), 0.0f), "gb");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  autograd::Workspace ws(arena);
  Tape tape(exec, ws);
  const Tensor at = Tensor::parameter(ab.range(), gab.range(), {batch * M * K});
  const Tensor bt = Tensor::parameter(bb.range(), gbb.range(), {batch * K * N});
  autograd::MatmulSpec s;
  s.M = M;
  s.N = N;
  s.K = K;
  s.batch = batch;
  s.transA = transA;
  s.transB = transB;
  s.alpha = alpha;
  const Tensor c = autograd::matmul(tape, at, bt, s);
  tape.seedGrad(c, dcb.range());
  tape.backward();
  exec.flush();
  const auto ga = download(gab, a.size()), gb = download(gbb, b.size());
  ref::Vec gaRef(a.size(), 0.0), gbRef(b.size(), 0.0);
  for (uint32_t q = 0; q < batch; ++q)
    for (uint32_t m = 0; m < M; ++m)
      for (uint32_t n = 0; n < N; ++n)
        for (uint32_t k = 0; k < K; ++k) {
          const size_t ia = size_t(q) * M * K + (transA ? size_t(k) * M + m : size_t(m) * K + k);
          const size_t ib = size_t(q) * K * N + (transB ? size_t(n) * K + k : size_t(k) * N + n);
          const double d = alpha * double(dc[(size_t(q) * M + m) * N + n]);
          gaRef[ia] += d * b[ib];
          gbRef[ib] += d * a[ia];
        }
  CHECK(ref::relError(ga, gaRef) < 1e-5);
  CHECK(ref::relError(gb, gbRef) < 1e-5);
}

TEST_CASE("autograd linear: bias gradient by column sums (one and two stages), accumulated",
          "[model][matmul]") {
  const uint32_t rows = GENERATE(12u, 512u, 1000u), in = 9, out = 13; // 512: 8 partial sums of 64 rows
  const auto x = test::randomFloats(size_t(rows) * in), w = test::randomFloats(size_t(out) * in);
  const auto bias = test::randomFloats(out), dy = test::randomFloats(size_t(rows) * out);
  vk::Buffer xb = upload(x, "x"), wb = upload(w, "w"), bb = upload(bias, "b"), dyb = upload(dy, "dy");
  vk::Buffer gw = upload(std::vector<float>(w.size(), 0.0f), "gw"),
             gbias = upload(std::vector<float>(out, 1.0f), "gb");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  autograd::Workspace ws(arena);
  Tape tape(exec, ws);
  const Tensor xt = Tensor::constant(xb.range(), {rows, in});
  const Tensor wt = Tensor::parameter(wb.range(), gw.range(), {out, in});
  const Tensor bt = Tensor::parameter(bb.range(), gbias.range(), {out});
  const Tensor y = autograd::linear(tape, xt, wt, &bt);
  tape.seedGrad(y, dyb.range());
  tape.backward();
  vk::Buffer yHost = ctx().buffer(y.bytes(), "y");
  ops::copy(exec, y.data, yHost.range(), y.count());
  exec.flush();
  ref::Vec yRef(size_t(rows) * out), gwRef(w.size(), 0.0), gbRef(out, 1.0);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t o = 0; o < out; ++o) {
      double s = bias[o];
      for (uint32_t i = 0; i < in; ++i) {
        s += double(x[size_t(r) * in + i]) * w[size_t(o) * in + i];
        gwRef[size_t(o) * in + i] += double(dy[size_t(r) * out + o]) * x[size_t(r) * in + i];
      }
      yRef[size_t(r) * out + o] = s;
      gbRef[o] += dy[size_t(r) * out + o];
    }
  CHECK(ref::relError(download(yHost, yRef.size()), yRef) < 1e-5);
  CHECK(ref::relError(download(gw, w.size()), gwRef) < 1e-5);
  CHECK(ref::relError(download(gbias, out), gbRef) < 1e-5);
}

// The mixed-precision head: logits = x W^T stored as f16, the cross-entropy reads them and hands back its
// gradient in f16, and the backward GEMMs take it without a cast. Against float64 on the f16 inputs: the
// loss within the logits' f16 rounding, dX and dW within 5e-3 (relative Frobenius); one more f32 gradient on
// the logits afterwards is added to the widened f16 one.
TEST_CASE("autograd f16 logits: matmul to f16, cross-entropy hands back an f16 gradient", "[model][matmul]") {
  const auto& f = ctx().device().features();
  if (!(f.shaderFloat16 && f.storageBuffer16BitAccess)) SKIP("device lacks 16-bit storage");
  const uint32_t M = 33, N = 127, K = 24; // rows, vocab, width
  std::vector<uint16_t> xh(size_t(M) * K), wh(size_t(N) * K);
  std::vector<double> x(xh.size()), w(wh.size());
  for (size_t i = 0; i < xh.size(); ++i)
    x[i] = halfToFloat(xh[i] = floatToHalf(test::randomFloats(1, -2, 2)[0]));
  for (size_t i = 0; i < wh.size(); ++i)
    w[i] = halfToFloat(wh[i] = floatToHalf(test::randomFloats(1, -1, 1)[0]));
  std::uniform_int_distribution<int32_t> pick(0, int32_t(N) - 1);
  std::vector<int32_t> targets(M);
  for (auto& t : targets)
    t = pick(test::rng());
  vk::Buffer xb = ctx().buffer(xh.size() * 2, "x16"), wb = ctx().buffer(wh.size() * 2, "w16");
  ctx().uploadVector(xb, xh);
  ctx().uploadVector(wb, wh);
  vk::Buffer tb = ctx().buffer(M * 4, "targets");
  ctx().uploadVector(tb, targets);
  vk::Buffer gx = upload(std::vector<float>(x.size(), 0.0f), "gx"),
             gw = upload(std::vector<float>(w.size(), 0.0f), "gw");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  autograd::Workspace ws(arena);
  Tape tape(exec, ws);
  Tensor xt = Tensor::parameter(xb.range(), gx.range(), {M, K});
  Tensor wt = Tensor::parameter(wb.range(), gw.range(), {N, K});
  xt.dtype = wt.dtype = autograd::DType::F16;
  autograd::MatmulSpec s;
  s.M = M;
  s.N = N;
  s.K = K;
  s.transB = true;
  s.outF16 = true;
  const Tensor logits = autograd::matmul(tape, xt, wt, s);
  CHECK(logits.dtype == autograd::DType::F16);
  const float scale = 1.0f / M;
  const Tensor loss = autograd::crossEntropy(tape, logits, tb.range(), scale);
  tape.backward();
  vk::Buffer lossHost = ctx().buffer(M * 4, "loss");
  ops::copy(exec, loss.data, lossHost.range(), M);
  exec.flush();
  // float64 reference on the f16 inputs.
  ref::Vec dl(size_t(M) * N), lossRef(M), dx(x.size(), 0.0), dw(w.size(), 0.0);
  for (uint32_t r = 0; r < M; ++r) {
    std::vector<double> z(N);
    double mx = -1e300;
    for (uint32_t c = 0; c < N; ++c) {
      for (uint32_t k = 0; k < K; ++k)
        z[c] += x[size_t(r) * K + k] * w[size_t(c) * K + k];
      mx = std::max(mx, z[c]);
    }
    double sum = 0;
    for (double v : z)
      sum += std::exp(v - mx);
    lossRef[r] = mx + std::log(sum) - z[targets[r]];
    for (uint32_t c = 0; c < N; ++c)
      dl[size_t(r) * N + c] = (std::exp(z[c] - mx) / sum - (int32_t(c) == targets[r])) * scale;
  }
  for (uint32_t r = 0; r < M; ++r)
    for (uint32_t c = 0; c < N; ++c)
      for (uint32_t k = 0; k < K; ++k) {
        dx[size_t(r) * K + k] += dl[size_t(r) * N + c] * w[size_t(c) * K + k];
        dw[size_t(c) * K + k] += dl[size_t(r) * N + c] * x[size_t(r) * K + k];
      }
  CHECK(ref::maxAbsError(download(lossHost, M), lossRef) < 2e-2); // logits rounded to f16 (|z| < 8)
  CHECK(ref::relError(download(gx, x.size()), dx) < 5e-3);
  CHECK(ref::relError(download(gw, w.size()), dw) < 5e-3);
}

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
  tape.passGradF16(t, hb.range());
  const auto same = [](vk::BufferRange a, vk::BufferRange b) {
    return a.buffer == b.buffer && a.offset == b.offset;
  };
  CHECK(same(tape.gradOfF16(t), hb.range()));  // handed back as it is: no cast
  const vk::BufferRange wide = tape.gradOf(t); // widened for an f32 reader
  vk::Buffer wideHost = ctx().buffer(n * 4, "wide");
  ops::copy(exec, wide, wideHost.range(), n);
  tape.passGrad(t, mb.range(), false); // an f32 write: the f16 form is stale now
  const vk::BufferRange again = tape.gradOfF16(t);
  CHECK_FALSE(same(again, hb.range()));
  vk::Buffer againHost = ctx().buffer(n * 2, "again");
  ops::copy(exec, again, againHost.range(), n, ops::EwType::F16);
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

namespace {

// A leaf with an empty, non-persistent gradient slot (so its gradient can be shared, not only accumulated).
Tensor leaf(const vk::Buffer& b, std::vector<uint32_t> shape) {
  Tensor t = Tensor::constant(b.range(), std::move(shape));
  t.gradSlot = std::make_shared<autograd::GradSlot>();
  return t;
}

std::vector<float> gradOfLeaf(ops::Executor& exec, const Tensor& t) {
  vk::Buffer host = ctx().buffer(t.elements() * 4, "grad");
  ops::copy(exec, t.gradSlot->range, host.range(), t.count());
  exec.flush();
  return download(host, t.elements());
}

} // namespace

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
