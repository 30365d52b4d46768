// The autograd GEMMs against float64 references: dA, dB and dbias for every transpose combination, bias
// column sums, the f16-logits head whose cross-entropy hands back an f16 gradient, and the f16 hidden layer.
#include "autograd_test_util.hpp"
#include "engine/autograd/ops.hpp"
#include "engine/core/half.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <random>

using namespace helios;
using namespace helios::autograd_test;
using autograd::Tape;
using autograd::Tensor;

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
  s.out = autograd::DType::F16;
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

// The MLP's f16 hidden layer (GptConfig::f16Hidden): fc1 writes f16 with an f16 copy of its f32 bias, GELU
// runs on f16, fc2 hands its input gradient back in f16 (MatmulSpec::halfGradA). Against float64 on the f16
// inputs: every gradient within 1e-2 (max norm), the f16 roundings of h, GELU(h) and the two gradients.
TEST_CASE("autograd f16 hidden layer: f16 output with an f16 bias, GELU on f16, dA in f16",
          "[model][matmul]") {
  const auto& f = ctx().device().features();
  if (!(f.shaderFloat16 && f.storageBuffer16BitAccess)) SKIP("device lacks 16-bit storage");
  const uint32_t M = 33, K = 24, H = 40, N = 7; // rows, in, hidden, out
  const auto halfValued = [](size_t n, float lo, float hi) {
    std::vector<uint16_t> h(n);
    for (auto& e : h)
      e = floatToHalf(test::randomFloats(1, lo, hi)[0]);
    return h;
  };
  const auto widen = [](const std::vector<uint16_t>& h) {
    std::vector<double> d(h.size());
    for (size_t i = 0; i < h.size(); ++i)
      d[i] = halfToFloat(h[i]);
    return d;
  };
  const auto xh = halfValued(size_t(M) * K, -1, 1), w1h = halfValued(size_t(H) * K, -0.5f, 0.5f),
             w2h = halfValued(size_t(N) * H, -0.5f, 0.5f);
  const auto b1 = test::randomFloats(H, -0.5f, 0.5f), b2 = test::randomFloats(N, -0.5f, 0.5f),
             dy = test::randomFloats(size_t(M) * N);
  const auto halfBuffer = [](const std::vector<uint16_t>& h, const char* what) {
    vk::Buffer b = ctx().buffer(h.size() * 2, what);
    ctx().uploadVector(b, h);
    return b;
  };
  vk::Buffer xb = halfBuffer(xh, "x16"), w1b = halfBuffer(w1h, "w1"), w2b = halfBuffer(w2h, "w2"),
             b1b = upload(b1, "b1"), b2b = upload(b2, "b2"), dyb = upload(dy, "dy");
  const auto zeros = [](size_t n, const char* what) { return upload(std::vector<float>(n, 0.0f), what); };
  vk::Buffer gx = zeros(xh.size(), "gx"), gw1 = zeros(w1h.size(), "gw1"), gw2 = zeros(w2h.size(), "gw2"),
             gb1 = zeros(H, "gb1"), gb2 = zeros(N, "gb2");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  autograd::Workspace ws(arena);
  Tape tape(exec, ws);
  Tensor xt = Tensor::parameter(xb.range(), gx.range(), {M, K}),
         w1t = Tensor::parameter(w1b.range(), gw1.range(), {H, K}),
         w2t = Tensor::parameter(w2b.range(), gw2.range(), {N, H});
  xt.dtype = w1t.dtype = w2t.dtype = autograd::DType::F16;
  const Tensor b1t = Tensor::parameter(b1b.range(), gb1.range(), {H}),
               b2t = Tensor::parameter(b2b.range(), gb2.range(), {N});
  autograd::MatmulSpec fc1{M, H, K, 1, false, true};
  fc1.out = autograd::DType::F16;
  const Tensor b1h = autograd::cast(tape, b1t, autograd::DType::F16);
  CHECK_THROWS_WITH(autograd::matmul(tape, xt, w1t, fc1, &b1t),
                    Catch::Matchers::ContainsSubstring("stored like C"));
  const Tensor h = autograd::matmul(tape, xt, w1t, fc1, &b1h);
  const Tensor act = autograd::activation(tape, ops::Activation::Gelu, h, autograd::DType::F16);
  CHECK(act.dtype == autograd::DType::F16);
  autograd::MatmulSpec fc2{M, N, H, 1, false, true};
  fc2.halfGradA = true;
  const Tensor y = autograd::matmul(tape, act, w2t, fc2, &b2t);
  tape.seedGrad(y, dyb.range());
  tape.backward();
  exec.flush();
  const auto x = widen(xh), w1 = widen(w1h), w2 = widen(w2h);
  ref::Vec dx(x.size(), 0.0), dw1(w1.size(), 0.0), dw2(w2.size(), 0.0), db1(H, 0.0), db2(N, 0.0);
  for (uint32_t r = 0; r < M; ++r) {
    std::vector<double> pre(H), a(H), da(H, 0.0);
    for (uint32_t j = 0; j < H; ++j) {
      pre[j] = b1[j];
      for (uint32_t k = 0; k < K; ++k)
        pre[j] += x[size_t(r) * K + k] * w1[size_t(j) * K + k];
      a[j] = ref::gelu(pre[j]);
    }
    for (uint32_t n = 0; n < N; ++n) {
      const double g = dy[size_t(r) * N + n];
      db2[n] += g;
      for (uint32_t j = 0; j < H; ++j) {
        dw2[size_t(n) * H + j] += g * a[j];
        da[j] += g * w2[size_t(n) * H + j];
      }
    }
    for (uint32_t j = 0; j < H; ++j) {
      const double dh = da[j] * ref::geluGrad(pre[j]);
      db1[j] += dh;
      for (uint32_t k = 0; k < K; ++k) {
        dw1[size_t(j) * K + k] += dh * x[size_t(r) * K + k];
        dx[size_t(r) * K + k] += dh * w1[size_t(j) * K + k];
      }
    }
  }
  CHECK(ref::relError(download(gx, x.size()), dx) < 1e-2);
  CHECK(ref::relError(download(gw1, w1.size()), dw1) < 1e-2);
  CHECK(ref::relError(download(gb1, H), db1) < 1e-2);
  CHECK(ref::relError(download(gw2, w2.size()), dw2) < 1e-2);
  CHECK(ref::relError(download(gb2, N), db2) < 1e-2);
}
