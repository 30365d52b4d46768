// The norm kernels' fused variants against their unfused counterparts and the float64 references:
// - the forward with the residual add (ops::ResidualAdd): s = x + r written bit for bit as the f32 add, y
//   within 1e-5 (relative Frobenius) of the float64 norm of s, and a 16-bit y equal to the 16-bit forward of
//   s; every output poisoned first, odd shapes beside aligned ones;
// - the backward writing dx's 16-bit copy (ops::HalfDx): the round-to-nearest-even of its own f32 dx (the
//   cast kernel's result), bit for bit, with and without accumulation; dx itself unchanged bit for bit.
#include "engine/ops/elem_support.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/norm.hpp"
#include "support/device_io.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstring>
#include <vector>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
using codegen::Elem;
using codegen::NormKind;

namespace {

using test::ctx;
using test::input;
using test::output;
using test::result;

constexpr float kEps = 1e-5f;

std::vector<std::pair<uint32_t, uint32_t>> shapes() {
  return {{1, 1}, {7, 33}, {33, 127}, {127, 513}, {64, 64}, {256, 1024}};
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// body(rows, cols, rows * cols) for every shape, labelled with the norm's kind.
template <class Body> void eachShape(NormKind kind, Body&& body) {
  for (auto [rows, cols] : shapes()) {
    INFO((kind == NormKind::LayerNorm ? "layernorm " : "rmsnorm ") << rows << "x" << cols);
    body(rows, cols, size_t(rows) * cols);
  }
}

uint16_t poisonOf(Elem t) {
  return t == Elem::BF16 ? test::kPoisonBF16 : test::kPoisonF16;
}

struct Norm {
  NormKind kind;
  vk::BufferRange gamma, beta;
  uint32_t rows, cols;
  // y (of yType), mean and rstd of x (+ residual).
  void forward(ops::Executor& exec, vk::BufferRange x, vk::BufferRange y, vk::BufferRange mean,
               vk::BufferRange rstd, Elem yType, const ops::ResidualAdd& residual = {}) const {
    if (kind == NormKind::LayerNorm)
      ops::layerNorm(exec, x, gamma, beta, y, mean, rstd, rows, cols, kEps, {}, yType, residual);
    else
      ops::rmsNorm(exec, x, gamma, y, rstd, rows, cols, kEps, {}, yType, residual);
  }
  void backward(ops::Executor& exec, vk::BufferRange x, vk::BufferRange dy, vk::BufferRange mean,
                vk::BufferRange rstd, vk::BufferRange dx, vk::BufferRange dgamma, vk::BufferRange dbeta,
                vk::BufferRange scratch, bool accumulate, const ops::HalfDx& h = {}) const {
    if (kind == NormKind::LayerNorm)
      ops::layerNormBackward(exec, x, gamma, dy, mean, rstd, dx, dgamma, dbeta, scratch, rows, cols, {},
                             accumulate, h);
    else
      ops::rmsNormBackward(exec, x, gamma, dy, rstd, dx, dgamma, scratch, rows, cols, {}, accumulate, h);
  }
};

} // namespace

TEST_CASE("norm forward with the residual add: the f32 sum bit for bit, y as the float64 norm of it",
          "[norm][fused]") {
  INFO("seed " << test::testSeed());
  const auto kind = GENERATE(NormKind::LayerNorm, NormKind::RmsNorm);
  const bool ln = kind == NormKind::LayerNorm;
  eachShape(kind, [&](uint32_t rows, uint32_t cols, size_t n) {
    const auto x = test::randomFloats(n, -2.0f, 2.0f), r = test::randomFloats(n, -2.0f, 2.0f);
    const auto gamma = test::randomFloats(cols, 0.5f, 1.5f), beta = test::randomFloats(cols);
    auto bx = input(x, "x"), br = input(r, "r"), bg = input(gamma, "gamma"), bb = input(beta, "beta");
    auto bs = output(n, "sum"), by = output(n, "y"), bm = output(rows, "mean"), brs = output(rows, "rstd");
    const Norm norm{kind, bg.range(), bb.range(), rows, cols};
    ops::ImmediateExecutor exec(ctx());
    norm.forward(exec, bx.range(), by.range(), bm.range(), brs.range(), Elem::F32, {br.range(), bs.range()});
    exec.flush();
    std::vector<float> sum(n);
    for (size_t i = 0; i < n; ++i)
      sum[i] = x[i] + r[i];
    CHECK(sameBits(result(bs, n), sum));
    const auto f =
        ln ? ref::layerNorm(sum, gamma, beta, rows, cols, kEps) : ref::rmsNorm(sum, gamma, rows, cols, kEps);
    CHECK(ref::relError(result(by, n), f.y) <= 1e-5);
    CHECK(ref::relError(result(brs, rows), f.rstd) <= 1e-5);
    if (ln) CHECK(ref::maxAbsError(result(bm, rows), f.mean) <= 1e-5);
  });
}

TEST_CASE("norm forward with the residual add and a 16-bit y equals the 16-bit forward of the sum",
          "[norm][fused]") {
  const Elem type = GENERATE(Elem::F16, Elem::BF16);
  if (!ops::supportsElem(ctx().device().features(), type)) SKIP("device lacks 16-bit storage");
  INFO(codegen::elemName(type) << " seed " << test::testSeed());
  const auto kind = GENERATE(NormKind::LayerNorm, NormKind::RmsNorm);
  for (auto [rows, cols] : shapes()) {
    INFO((kind == NormKind::LayerNorm ? "layernorm " : "rmsnorm ") << rows << "x" << cols);
    const size_t n = size_t(rows) * cols;
    const auto x = test::randomFloats(n, -2.0f, 2.0f), r = test::randomFloats(n, -2.0f, 2.0f);
    auto bx = input(x, "x"), br = input(r, "r"), bg = input(test::randomFloats(cols, 0.5f, 1.5f), "gamma"),
         bb = input(test::randomFloats(cols), "beta");
    auto bs = output(n, "sum"), bm = output(rows, "mean"), brs = output(rows, "rstd");
    auto bm2 = output(rows, "mean2"), brs2 = output(rows, "rstd2");
    auto fused = test::outputHalf(n, "y16 fused", poisonOf(type));
    auto plain = test::outputHalf(n, "y16 of the sum", poisonOf(type));
    const Norm norm{kind, bg.range(), bb.range(), rows, cols};
    ops::ImmediateExecutor exec(ctx());
    norm.forward(exec, bx.range(), vk::subrange(fused.range(), 0, n * 2), bm.range(), brs.range(), type,
                 {br.range(), bs.range()});
    exec.flush(); // the sum complete before the plain forward reads it
    norm.forward(exec, vk::subrange(bs.range(), 0, n * 4), vk::subrange(plain.range(), 0, n * 2), bm2.range(),
                 brs2.range(), type);
    exec.flush();
    CHECK(test::resultHalf(fused, n, poisonOf(type)) == test::resultHalf(plain, n, poisonOf(type)));
    CHECK(sameBits(result(brs, rows), result(brs2, rows)));
  }
}

TEST_CASE("norm backward writes dx's 16-bit copy: its own f32 dx rounded, bit for bit", "[norm][fused]") {
  const Elem type = GENERATE(Elem::F16, Elem::BF16);
  if (!ops::supportsElem(ctx().device().features(), type)) SKIP("device lacks 16-bit storage");
  INFO(codegen::elemName(type) << " seed " << test::testSeed());
  const auto kind = GENERATE(NormKind::LayerNorm, NormKind::RmsNorm);
  const bool accumulate = GENERATE(false, true);
  for (auto [rows, cols] : shapes()) {
    INFO((kind == NormKind::LayerNorm ? "layernorm " : "rmsnorm ")
         << rows << "x" << cols << (accumulate ? " accumulating" : ""));
    const size_t n = size_t(rows) * cols;
    const auto prior = test::randomFloats(n);
    auto bx = input(test::randomFloats(n, -2.0f, 2.0f), "x"), bdy = input(test::randomFloats(n), "dy");
    auto bg = input(test::randomFloats(cols, 0.5f, 1.5f), "gamma"),
         bb = input(test::randomFloats(cols), "beta");
    auto by = output(n, "y"), bm = output(rows, "mean"), brs = output(rows, "rstd");
    auto dxFused = input(prior, "dx fused"), dxPlain = input(prior, "dx plain");
    auto dg = output(cols, "dgamma"), db = output(cols, "dbeta");
    auto scratch = ctx().buffer(ops::normBackwardScratchBytes(kind, rows, cols), "scratch");
    auto dx16 = test::outputHalf(n, "dx16", poisonOf(type)),
         cast = test::outputHalf(n, "cast", poisonOf(type));
    const Norm norm{kind, bg.range(), bb.range(), rows, cols};
    ops::ImmediateExecutor exec(ctx());
    norm.forward(exec, bx.range(), by.range(), bm.range(), brs.range(), Elem::F32);
    norm.backward(exec, bx.range(), bdy.range(), bm.range(), brs.range(), dxPlain.range(), dg.range(),
                  db.range(), scratch.range(), accumulate);
    norm.backward(exec, bx.range(), bdy.range(), bm.range(), brs.range(), dxFused.range(), dg.range(),
                  db.range(), scratch.range(), accumulate, {vk::subrange(dx16.range(), 0, n * 2), type});
    exec.flush(); // dx complete before the cast reads it
    ops::cast(exec, dxPlain.range(), vk::subrange(cast.range(), 0, n * 2), uint32_t(n), Elem::F32, type);
    exec.flush();
    const auto fused = ctx().downloadVector<float>(dxFused, n),
               plain = ctx().downloadVector<float>(dxPlain, n);
    CHECK(sameBits(fused, plain));
    CHECK(test::resultHalf(dx16, n, poisonOf(type)) == test::resultHalf(cast, n, poisonOf(type)));
  }
}

TEST_CASE("fused norm variants refuse short bindings by name", "[norm][fused][errors]") {
  ops::ImmediateExecutor exec(ctx());
  auto x = input(std::vector<float>(12, 1.0f), "x"), g = input(std::vector<float>(4, 1.0f), "g");
  auto y = output(12, "y"), rstd = output(3, "rstd"), shortSum = output(8, "sum");
  CHECK_THROWS_WITH(ops::rmsNorm(exec, x.range(), g.range(), y.range(), rstd.range(), 3, 4, kEps, {},
                                 Elem::F32, {x.range(), vk::subrange(shortSum.range(), 0, 32)}),
                    ContainsSubstring("residual sum"));
  auto dy = input(std::vector<float>(12, 1.0f), "dy"), dx = output(12, "dx"), dg = output(4, "dg");
  auto scratch = ctx().buffer(ops::normBackwardScratchBytes(NormKind::RmsNorm, 3, 4), "scratch");
  auto dx16 = test::outputHalf(12, "dx16");
  CHECK_THROWS_WITH(ops::rmsNormBackward(exec, x.range(), g.range(), dy.range(), rstd.range(), dx.range(),
                                         dg.range(), scratch.range(), 3, 4, {}, false,
                                         {vk::subrange(dx16.range(), 0, 20), Elem::F16}),
                    ContainsSubstring("dx16"));
}

// A parameter's gradient accumulating: the finish pass adds dgamma (and dbeta) to what the buffers hold, the
// same f32 sums as writing them fresh and adding with the add kernel (the step did that before).
TEST_CASE("norm backward adds dgamma and dbeta into their buffers when asked, as an add pass would",
          "[norm][fused]") {
  INFO("seed " << test::testSeed());
  const auto kind = GENERATE(NormKind::LayerNorm, NormKind::RmsNorm);
  const bool ln = kind == NormKind::LayerNorm;
  eachShape(kind, [&](uint32_t rows, uint32_t cols, size_t n) {
    const auto priorG = test::randomFloats(cols), priorB = test::randomFloats(cols);
    auto bx = input(test::randomFloats(n, -2.0f, 2.0f), "x"), bdy = input(test::randomFloats(n), "dy");
    auto bg = input(test::randomFloats(cols, 0.5f, 1.5f), "gamma"),
         bb = input(test::randomFloats(cols), "beta");
    auto by = output(n, "y"), bm = output(rows, "mean"), brs = output(rows, "rstd"), dx = output(n, "dx");
    auto freshG = output(cols, "dgamma"), freshB = output(cols, "dbeta");
    auto accG = input(priorG, "dgamma+"), accB = input(priorB, "dbeta+");
    auto scratch = ctx().buffer(ops::normBackwardScratchBytes(kind, rows, cols), "scratch");
    const Norm norm{kind, bg.range(), bb.range(), rows, cols};
    ops::ImmediateExecutor exec(ctx());
    norm.forward(exec, bx.range(), by.range(), bm.range(), brs.range(), Elem::F32);
    norm.backward(exec, bx.range(), bdy.range(), bm.range(), brs.range(), dx.range(), freshG.range(),
                  freshB.range(), scratch.range(), false);
    if (ln)
      ops::layerNormBackward(exec, bx.range(), bg.range(), bdy.range(), bm.range(), brs.range(), dx.range(),
                             accG.range(), accB.range(), scratch.range(), rows, cols, {}, false, {},
                             {true, true});
    else
      ops::rmsNormBackward(exec, bx.range(), bg.range(), bdy.range(), brs.range(), dx.range(), accG.range(),
                           scratch.range(), rows, cols, {}, false, {}, {true});
    exec.flush();
    const auto g = result(freshG, cols);
    std::vector<float> sumG(cols), sumB(cols);
    for (uint32_t j = 0; j < cols; ++j)
      sumG[j] = priorG[j] + g[j];
    CHECK(sameBits(ctx().downloadVector<float>(accG, cols), sumG));
    if (ln) {
      const auto b = result(freshB, cols);
      for (uint32_t j = 0; j < cols; ++j)
        sumB[j] = priorB[j] + b[j];
      CHECK(sameBits(ctx().downloadVector<float>(accB, cols), sumB));
    }
  });
}

// dgamma and dbeta side by side in one buffer (a norm's parameters' gradients in the flat gradient buffer,
// padding between): one finish dispatch over both planes, the same bits as one per buffer, the padding
// untouched.
TEST_CASE("LayerNorm backward finishes side-by-side dgamma and dbeta in one dispatch, same bits",
          "[norm][fused]") {
  INFO("seed " << test::testSeed());
  const bool accumulate = GENERATE(false, true);
  for (auto [rows, cols] : shapes()) {
    INFO(rows << "x" << cols << (accumulate ? " accumulating" : ""));
    const size_t n = size_t(rows) * cols, gap = 13; // floats of padding between dgamma and dbeta
    auto bx = input(test::randomFloats(n, -2.0f, 2.0f), "x"), bdy = input(test::randomFloats(n), "dy");
    auto bg = input(test::randomFloats(cols, 0.5f, 1.5f), "gamma"),
         bb = input(test::randomFloats(cols), "beta");
    auto by = output(n, "y"), bm = output(rows, "mean"), brs = output(rows, "rstd"), dx = output(n, "dx");
    const auto prior = test::randomFloats(2 * cols + gap);
    // reversed: dbeta first, then dgamma (not in dgamma-then-dbeta order: one finish each).
    std::vector<float> swapped(prior.begin() + cols + gap, prior.end());
    swapped.insert(swapped.end(), prior.begin() + cols, prior.begin() + cols + gap);
    swapped.insert(swapped.end(), prior.begin(), prior.begin() + cols);
    auto reversed = input(swapped, "reversed"), together = input(prior, "together");
    auto scratch = ctx().buffer(ops::normBackwardScratchBytes(NormKind::LayerNorm, rows, cols), "scratch");
    ops::ImmediateExecutor exec(ctx());
    ops::layerNorm(exec, bx.range(), bg.range(), bb.range(), by.range(), bm.range(), brs.range(), rows, cols,
                   kEps);
    const auto backward = [&](vk::BufferRange dgamma, vk::BufferRange dbeta) {
      const uint32_t before = exec.dispatches();
      ops::layerNormBackward(exec, bx.range(), bg.range(), bdy.range(), bm.range(), brs.range(), dx.range(),
                             dgamma, dbeta, scratch.range(), rows, cols, {}, false, {},
                             {accumulate, accumulate});
      exec.flush();
      return exec.dispatches() - before;
    };
    const auto first = [&](const vk::Buffer& buf) { return vk::subrange(buf.range(), 0, cols * 4); };
    const auto second = [&](const vk::Buffer& buf) {
      return vk::subrange(buf.range(), (cols + gap) * 4, cols * 4);
    };
    CHECK(backward(second(reversed), first(reversed)) == 3);
    CHECK(backward(first(together), second(together)) == 2);
    const auto t = ctx().downloadVector<float>(together, 2 * cols + gap);
    const auto r = ctx().downloadVector<float>(reversed, 2 * cols + gap);
    CHECK(sameBits(std::vector<float>(t.begin(), t.begin() + cols),
                   std::vector<float>(r.begin() + cols + gap, r.end()))); // dgamma
    CHECK(sameBits(std::vector<float>(t.begin() + cols + gap, t.end()),
                   std::vector<float>(r.begin(), r.begin() + cols))); // dbeta
    CHECK(sameBits(std::vector<float>(t.begin() + cols, t.begin() + cols + gap),
                   std::vector<float>(prior.begin() + cols, prior.begin() + cols + gap)));
  }
}
