// LayerNorm and RMSNorm (forward and backward) on the engine's device against the float64 references,
// finite differences of the reference forward, and the glslang-compiled LayerNorm oracle.
// Thresholds (relative Frobenius error): forward y, rstd <= 1e-5, mean: absolute
// error <= 1e-5 (inputs in [-2, 2]); backward dx <= 1e-4 relative to
// the larger of ||dx|| and ||dy*gamma*rstd|| (see dxError), dgamma/dbeta <= 1e-5 relative to the larger of
// their norm and the norm of the summed terms (see termNorms); finite differences <= 1e-3;
// GLSL oracle <= 2e-6. The backward's dgamma/dbeta come from a two-stage block reduction and must be
// bit-identical run to run.
#include "engine/core/half.hpp"
#include "engine/ops/elem_support.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/norm.hpp"
#include "support/device_io.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"
#include "support/spirv_file.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
using codegen::NormKind;
using codegen::ReduceStrategy;

namespace {

using test::ctx;
using test::input;
using test::output;
using test::result;
inline std::vector<std::pair<uint32_t, uint32_t>> shapes() {
  return test::rowShapes();
}

constexpr float kEps = 1e-5f;

struct Inputs {
  uint32_t rows, cols;
  std::vector<float> x, gamma, beta, dy;
  Inputs(uint32_t r, uint32_t c)
      : rows(r), cols(c), x(test::randomFloats(size_t(r) * c, -2.0f, 2.0f)),
        gamma(test::randomFloats(c, 0.5f, 1.5f)), beta(test::randomFloats(c)),
        dy(test::randomFloats(size_t(r) * c)) {}
  size_t n() const { return size_t(rows) * cols; }
};

struct Outputs {
  std::vector<float> y, mean, rstd, dx, dgamma, dbeta;
};

// Forward then backward (from the forward's saved statistics) in one submission.
Outputs run(NormKind kind, const Inputs& in, ops::RowKernelChoice choice = {}) {
  const size_t n = in.n();
  const bool ln = kind == NormKind::LayerNorm;
  auto bx = input(in.x, "x"), bg = input(in.gamma, "gamma"), bb = input(in.beta, "beta"),
       bdy = input(in.dy, "dy");
  auto by = output(n, "y"), bm = output(in.rows, "mean"), br = output(in.rows, "rstd");
  auto bdx = output(n, "dx"), bdg = output(in.cols, "dgamma"), bdb = output(in.cols, "dbeta");
  auto scratch = ctx().buffer(ops::normBackwardScratchBytes(kind, in.rows, in.cols), "scratch");
  ops::ImmediateExecutor exec(ctx());
  if (ln) {
    ops::layerNorm(exec, bx.range(), bg.range(), bb.range(), by.range(), bm.range(), br.range(), in.rows,
                   in.cols, kEps, choice);
    ops::layerNormBackward(exec, bx.range(), bg.range(), bdy.range(), bm.range(), br.range(), bdx.range(),
                           bdg.range(), bdb.range(), scratch.range(), in.rows, in.cols, choice);
  } else {
    ops::rmsNorm(exec, bx.range(), bg.range(), by.range(), br.range(), in.rows, in.cols, kEps, choice);
    ops::rmsNormBackward(exec, bx.range(), bg.range(), bdy.range(), br.range(), bdx.range(), bdg.range(),
                         scratch.range(), in.rows, in.cols, choice);
  }
  exec.flush();
  Outputs o;
  o.y = result(by, n);
  if (ln) o.mean = result(bm, in.rows);
  o.rstd = result(br, in.rows);
  o.dx = result(bdx, n);
  o.dgamma = result(bdg, in.cols);
  if (ln) o.dbeta = result(bdb, in.cols);
  return o;
}

// Relative Frobenius error with the denominator floored at `floor`.
double flooredRelError(const std::vector<float>& out, const ref::Vec& expect, double floor) {
  double num = 0, den = 0;
  for (size_t i = 0; i < expect.size(); ++i) {
    if (!std::isfinite(out[i])) return 1e30;
    num += (out[i] - expect[i]) * (out[i] - expect[i]);
    den += expect[i] * expect[i];
  }
  return std::sqrt(num) / std::max({std::sqrt(den), floor, 1e-30});
}

// dx is a difference of terms of size |dy * gamma * rstd|; when they nearly cancel (RMSNorm with 1 column:
// dx = dy*gamma*rstd*eps/(x^2+eps)) f32 rounding is relative to those terms, not to dx, so the error is
// measured against the larger of ||dx|| and ||dy * gamma * rstd||.
double dxError(const std::vector<float>& dx, const ref::Vec& expect, const Inputs& in,
               const std::vector<float>& rstd) {
  double terms = 0;
  for (size_t i = 0; i < expect.size(); ++i) {
    const double t = double(in.dy[i]) * in.gamma[i % in.cols] * rstd[i / in.cols];
    terms += t * t;
  }
  return flooredRelError(dx, expect, std::sqrt(terms));
}

// dgamma and dbeta are column sums over rows of the terms dy * xhat and dy (xhat = (x - mean) * rstd, mean
// 0 for RMSNorm); a sum near 0 has no relative accuracy, so the floor is the Frobenius norm of the terms.
std::pair<double, double> termNorms(const Inputs& in, const ref::Vec& mean, const ref::Vec& rstd) {
  double g = 0, b = 0;
  for (size_t i = 0; i < in.n(); ++i) {
    const size_t r = i / in.cols;
    const double t = in.dy[i] * (in.x[i] - (mean.empty() ? 0.0 : mean[r])) * rstd[r];
    g += t * t;
    b += double(in.dy[i]) * in.dy[i];
  }
  return {std::sqrt(g), std::sqrt(b)};
}

void checkAgainstReference(NormKind kind, const Inputs& in, const Outputs& o) {
  if (kind == NormKind::LayerNorm) {
    const auto f = ref::layerNorm(in.x, in.gamma, in.beta, in.rows, in.cols, kEps);
    CHECK(ref::relError(o.y, f.y) <= 1e-5);
    CHECK(ref::maxAbsError(o.mean, f.mean) <= 1e-5); // a mean near 0 has no relative accuracy
    CHECK(ref::relError(o.rstd, f.rstd) <= 1e-5);
    const auto g = ref::layerNormBackward(in.x, in.gamma, in.dy, in.rows, in.cols, kEps);
    CHECK(dxError(o.dx, g.dx, in, o.rstd) <= 1e-4);
    const auto [gammaTerms, betaTerms] = termNorms(in, f.mean, f.rstd);
    CHECK(flooredRelError(o.dgamma, g.dgamma, gammaTerms) <= 1e-5);
    CHECK(flooredRelError(o.dbeta, g.dbeta, betaTerms) <= 1e-5);
  } else {
    const auto f = ref::rmsNorm(in.x, in.gamma, in.rows, in.cols, kEps);
    CHECK(ref::relError(o.y, f.y) <= 1e-5);
    CHECK(ref::relError(o.rstd, f.rstd) <= 1e-5);
    const auto g = ref::rmsNormBackward(in.x, in.gamma, in.dy, in.rows, in.cols, kEps);
    CHECK(dxError(o.dx, g.dx, in, o.rstd) <= 1e-4);
    CHECK(flooredRelError(o.dgamma, g.dgamma, termNorms(in, {}, f.rstd).first) <= 1e-5);
  }
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// Central differences of L = sum dy * forward(...) with respect to every element of `v`, using the step
// actually representable in float.
ref::Vec finiteDifferences(std::vector<float>& v, const std::function<double()>& loss) {
  ref::Vec fd(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const float v0 = v[i];
    v[i] = v0 + 1e-3f;
    const double up = loss(), hUp = double(v[i]) - v0;
    v[i] = v0 - 1e-3f;
    const double down = loss(), hDown = double(v0) - v[i];
    v[i] = v0;
    fd[i] = (up - down) / (hUp + hDown);
  }
  return fd;
}

double dot(const std::vector<float>& a, const ref::Vec& b) {
  double s = 0;
  for (size_t i = 0; i < b.size(); ++i)
    s += a[i] * b[i];
  return s;
}

} // namespace

TEST_CASE("LayerNorm and RMSNorm forward and backward match the float64 references", "[norm]") {
  const auto [rows, cols] = GENERATE(from_range(shapes()));
  const auto kind = GENERATE(NormKind::LayerNorm, NormKind::RmsNorm);
  const auto strategy = GENERATE(ReduceStrategy::Subgroup, ReduceStrategy::SharedTree);
  INFO(codegen::toString(kind) << " rows " << rows << " cols " << cols << " strategy "
                               << codegen::toString(strategy) << " seed " << test::testSeed());
  const Inputs in(rows, cols);
  checkAgainstReference(kind, in, run(kind, in, {0, strategy}));
}

TEST_CASE("norms work for every workgroup size and strategy", "[norm]") {
  const uint32_t wg = GENERATE(32u, 64u, 128u, 256u, 512u, 1024u);
  const auto strategy = GENERATE(ReduceStrategy::Subgroup, ReduceStrategy::SharedTree);
  const auto kind = GENERATE(NormKind::LayerNorm, NormKind::RmsNorm);
  INFO(codegen::toString(kind) << " wg " << wg << " strategy " << codegen::toString(strategy) << " seed "
                               << test::testSeed());
  const Inputs in(300, 1500);
  checkAgainstReference(kind, in, run(kind, in, {wg, strategy}));
}

TEST_CASE("norm backward matches finite differences of the reference forward", "[norm]") {
  const auto [rows, cols] = GENERATE(std::pair{3u, 7u}, std::pair{4u, 33u});
  const auto kind = GENERATE(NormKind::LayerNorm, NormKind::RmsNorm);
  INFO(codegen::toString(kind) << " rows " << rows << " cols " << cols << " seed " << test::testSeed());
  Inputs in(rows, cols);
  const auto o = run(kind, in);
  const auto loss = [&] {
    return kind == NormKind::LayerNorm
               ? dot(in.dy, ref::layerNorm(in.x, in.gamma, in.beta, rows, cols, kEps).y)
               : dot(in.dy, ref::rmsNorm(in.x, in.gamma, rows, cols, kEps).y);
  };
  CHECK(ref::relError(o.dx, finiteDifferences(in.x, loss)) <= 1e-3);
  CHECK(ref::relError(o.dgamma, finiteDifferences(in.gamma, loss)) <= 1e-3);
  if (kind == NormKind::LayerNorm) CHECK(ref::relError(o.dbeta, finiteDifferences(in.beta, loss)) <= 1e-3);
}

TEST_CASE("generated LayerNorm agrees with the GLSL oracle", "[norm][oracle]") {
  const auto [rows, cols] =
      GENERATE(std::pair{1u, 1u}, std::pair{7u, 33u}, std::pair{33u, 513u}, std::pair{64u, 1024u});
  INFO("rows " << rows << " cols " << cols << " seed " << test::testSeed());
  const Inputs in(rows, cols);
  auto bx = input(in.x, "x"), bg = input(in.gamma, "gamma"), bb = input(in.beta, "beta");
  auto by = output(in.n(), "y"), bo = output(in.n(), "oracle y"), bm = output(rows, "mean"),
       br = output(rows, "rstd");
  ops::ImmediateExecutor exec(ctx());
  ops::layerNorm(exec, bx.range(), bg.range(), bb.range(), by.range(), bm.range(), br.range(), rows, cols,
                 kEps, {128, ReduceStrategy::Subgroup});
  const auto& oracle = ctx().pipelines().get(test::glslOracle("layernorm", 4, 12, {128, 1, 1}));
  struct {
    uint32_t rows, cols;
    float eps;
  } push{rows, cols, kEps};
  static_cast<ops::Executor&>(exec).dispatch(oracle,
                                             {{bx.range(), ops::Access::Read},
                                              {bg.range(), ops::Access::Read},
                                              {bb.range(), ops::Access::Read},
                                              {bo.range(), ops::Access::Write}},
                                             push, {rows, 1, 1});
  exec.flush();
  const auto y = result(by, in.n()), o = result(bo, in.n());
  result(bm, rows);
  result(br, rows);
  CHECK(ref::relError(y, ref::Vec(o.begin(), o.end())) <= 2e-6);
}

TEST_CASE("norm backward is deterministic: dx, dgamma, dbeta bit-identical across runs",
          "[norm][determinism]") {
  const auto kind = GENERATE(NormKind::LayerNorm, NormKind::RmsNorm);
  INFO(codegen::toString(kind) << " seed " << test::testSeed());
  const Inputs in(1000, 256); // 250 blocks of 4 rows
  const auto a = run(kind, in), b = run(kind, in);
  CHECK(sameBits(a.y, b.y));
  CHECK(sameBits(a.rstd, b.rstd));
  CHECK(sameBits(a.dx, b.dx));
  CHECK(sameBits(a.dgamma, b.dgamma));
  CHECK(sameBits(a.dbeta, b.dbeta));
}

TEST_CASE("the backward plan bounds the block count and covers every row", "[norm]") {
  for (uint32_t rows : {1u, 7u, 255u, 256u, 257u, 1000u, 65536u, 1000003u}) {
    const auto p = ops::normBackwardPlan(rows);
    INFO("rows " << rows);
    CHECK(p.numBlocks >= 1);
    CHECK(p.numBlocks <= 1024);
    CHECK(uint64_t(p.numBlocks) * p.blockRows >= rows);
    CHECK(uint64_t(p.numBlocks - 1) * p.blockRows < rows); // every block has at least one row
  }
  // One plane of block partials per output (the finish pass sums them in place).
  CHECK(ops::normBackwardScratchBytes(NormKind::LayerNorm, 1000, 256) == 2ull * 1000 * 256 * 4);
  CHECK(ops::normBackwardScratchBytes(NormKind::LayerNorm, 16384, 384) == 2ull * 1024 * 384 * 4);
  CHECK(ops::normBackwardScratchBytes(NormKind::RmsNorm, 3, 5) == 1ull * 3 * 5 * 4);
}

TEST_CASE("norms reject mismatched sizes", "[norm][errors]") {
  auto s = ctx().buffer(4 * 10, "small"), b = ctx().buffer(4 * 12, "big"), c = ctx().buffer(4 * 4, "cols");
  auto r = ctx().buffer(4 * 3, "rows");
  ops::ImmediateExecutor exec(ctx());
  CHECK_THROWS_WITH(
      ops::layerNorm(exec, b.range(), c.range(), r.range(), b.range(), r.range(), r.range(), 3, 4, kEps),
      ContainsSubstring("layerNorm: beta holds 3"));
  CHECK_THROWS_WITH(
      ops::layerNorm(exec, b.range(), c.range(), c.range(), s.range(), r.range(), r.range(), 3, 4, kEps),
      ContainsSubstring("layerNorm: y holds 10"));
  CHECK_THROWS_WITH(
      ops::layerNorm(exec, b.range(), c.range(), c.range(), b.range(), r.range(), r.range(), 3, 5, kEps),
      ContainsSubstring("layerNorm: x holds 12 elements (48 bytes) but needs 15"));
  CHECK_THROWS_WITH(ops::rmsNorm(exec, b.range(), r.range(), b.range(), c.range(), 3, 4, kEps),
                    ContainsSubstring("rmsNorm: gamma holds 3"));
  CHECK_THROWS_WITH(ops::rmsNorm(exec, b.range(), c.range(), b.range(), r.range(), 4, 3, kEps),
                    ContainsSubstring("rmsNorm: rstd holds 3"));
  CHECK_THROWS_WITH(ops::layerNormBackward(exec, b.range(), c.range(), b.range(), r.range(), r.range(),
                                           b.range(), c.range(), c.range(), s.range(), 3, 4),
                    ContainsSubstring("layerNormBackward: scratch holds 10"));
  CHECK_THROWS_WITH(ops::rmsNormBackward(exec, b.range(), c.range(), b.range(), r.range(), b.range(),
                                         c.range(), b.range(), 0, 4),
                    ContainsSubstring("rmsNormBackward: rows is 0"));
  CHECK_THROWS_WITH(ops::rmsNormBackward(exec, b.range(), s.range(), b.range(), r.range(), b.range(),
                                         r.range(), b.range(), 3, 4),
                    ContainsSubstring("rmsNormBackward: dgamma holds 3"));
  CHECK(exec.dispatches() == 0);
}

// The forward written straight to f16 or bf16 (a GEMM operand): the f32 result rounded once, so the same bits
// as the f32 forward followed by the cast kernel, on every shape; mean and rstd unchanged.
TEST_CASE("norm forward with a 16-bit y equals the f32 forward rounded, bit for bit", "[norm]") {
  const codegen::Elem type = GENERATE(codegen::Elem::F16, codegen::Elem::BF16);
  if (!ops::supportsElem(ctx().device().features(), type)) SKIP("device lacks 16-bit storage");
  INFO(codegen::elemName(type) << " seed " << test::testSeed());
  const auto kind = GENERATE(NormKind::LayerNorm, NormKind::RmsNorm);
  for (auto [rows, cols] : shapes()) {
    INFO((kind == NormKind::LayerNorm ? "layernorm " : "rmsnorm ") << rows << "x" << cols);
    const Inputs in(rows, cols);
    const size_t n = in.n();
    auto bx = input(in.x, "x"), bg = input(in.gamma, "gamma"), bb = input(in.beta, "beta");
    auto by = output(n, "y"), bm = output(rows, "mean"), br = output(rows, "rstd");
    auto bm16 = output(rows, "mean16"), br16 = output(rows, "rstd16");
    constexpr uint16_t kPoison16 = 0x7e5b;
    auto by16 = input(std::vector<uint16_t>(n + 1, kPoison16), "y16");
    auto bcast = input(std::vector<uint16_t>(n, kPoison16), "cast16");
    vk::BufferRange y16 = by16.range();
    y16.size = n * 2;
    ops::ImmediateExecutor exec(ctx());
    if (kind == NormKind::LayerNorm) {
      ops::layerNorm(exec, bx.range(), bg.range(), bb.range(), by.range(), bm.range(), br.range(), rows, cols,
                     kEps);
      ops::layerNorm(exec, bx.range(), bg.range(), bb.range(), y16, bm16.range(), br16.range(), rows, cols,
                     kEps, {}, type);
    } else {
      ops::rmsNorm(exec, bx.range(), bg.range(), by.range(), br.range(), rows, cols, kEps);
      ops::rmsNorm(exec, bx.range(), bg.range(), y16, br16.range(), rows, cols, kEps, {}, type);
    }
    exec.flush(); // y complete before the cast reads it
    ops::cast(exec, by.range(), bcast.range(), static_cast<uint32_t>(n), codegen::Elem::F32, type);
    exec.flush();
    const auto y = result(by, n);
    const auto half = ctx().downloadVector<uint16_t>(by16, n + 1);
    const auto cast = ctx().downloadVector<uint16_t>(bcast, n);
    CHECK(half[n] == kPoison16);                   // the guard past the end
    size_t mismatched = 0, unwritten = 0, far = 0; // far: more than half a 16-bit ulp from y
    const bool bf16 = type == codegen::Elem::BF16;
    for (size_t i = 0; i < n; ++i) {
      mismatched += half[i] != cast[i];
      unwritten += half[i] == kPoison16;
      const float back = bf16 ? bf16ToFloat(half[i]) : halfToFloat(half[i]);
      far += std::fabs(back - y[i]) > std::fabs(y[i]) * (bf16 ? 3.91e-3 : 4.9e-4) + (bf16 ? 0 : 6e-8);
    }
    CHECK(mismatched == 0);
    CHECK(unwritten == 0);
    CHECK(far == 0);
    CHECK(result(br16, rows) == result(br, rows));
    if (kind == NormKind::LayerNorm) CHECK(result(bm16, rows) == result(bm, rows));
  }
  auto small = output(4, "small");
  ops::ImmediateExecutor exec(ctx());
  auto x = input(std::vector<float>(12, 1.0f), "x"), g = input(std::vector<float>(4, 1.0f), "g");
  auto r = output(3, "r");
  vk::BufferRange y = small.range();
  y.size = 20; // 10 halves for 12 elements
  CHECK_THROWS_WITH(
      ops::rmsNorm(exec, x.range(), g.range(), y, r.range(), 3, 4, kEps, {}, codegen::Elem::F16),
      ContainsSubstring("rmsNorm: y holds 10 f16 elements, needs 12"));
}

// The backward adding into a dx that already holds a gradient (the residual stream's) gives the f32 sum of
// that gradient and the plain backward's dx, for both norms: exactly, or within an ulp or two of the larger
// term where the driver contracts the multiply and the add into one FMA (NVIDIA does).
TEST_CASE("norm backward accumulates into dx when asked", "[norm]") {
  INFO("seed " << test::testSeed());
  const auto kind = GENERATE(NormKind::LayerNorm, NormKind::RmsNorm);
  for (auto [rows, cols] : {std::pair{1u, 7u}, {33u, 127u}, {127u, 513u}}) {
    INFO((kind == NormKind::LayerNorm ? "layernorm " : "rmsnorm ") << rows << "x" << cols);
    const Inputs in(rows, cols);
    const size_t n = in.n();
    const auto prior = test::randomFloats(n);
    const bool ln = kind == NormKind::LayerNorm;
    auto bx = input(in.x, "x"), bg = input(in.gamma, "gamma"), bb = input(in.beta, "beta"),
         bdy = input(in.dy, "dy");
    auto by = output(n, "y"), bm = output(rows, "mean"), br = output(rows, "rstd");
    auto plain = output(n, "dx"), acc = input(prior, "dx+");
    auto bdg = output(cols, "dgamma"), bdb = output(cols, "dbeta");
    auto scratch = ctx().buffer(ops::normBackwardScratchBytes(kind, rows, cols), "scratch");
    ops::ImmediateExecutor exec(ctx());
    for (bool accumulate : {false, true}) {
      const vk::BufferRange dx = accumulate ? acc.range() : plain.range();
      if (ln) {
        ops::layerNorm(exec, bx.range(), bg.range(), bb.range(), by.range(), bm.range(), br.range(), rows,
                       cols, kEps);
        ops::layerNormBackward(exec, bx.range(), bg.range(), bdy.range(), bm.range(), br.range(), dx,
                               bdg.range(), bdb.range(), scratch.range(), rows, cols, {}, accumulate);
      } else {
        ops::rmsNorm(exec, bx.range(), bg.range(), by.range(), br.range(), rows, cols, kEps);
        ops::rmsNormBackward(exec, bx.range(), bg.range(), bdy.range(), br.range(), dx, bdg.range(),
                             scratch.range(), rows, cols, {}, accumulate);
      }
    }
    exec.flush();
    const auto d = result(plain, n);
    const auto summed = ctx().downloadVector<float>(acc, n);
    size_t mismatched = 0;
    for (size_t i = 0; i < n; ++i) {
      const double scale = std::max(std::fabs(double(prior[i])), std::fabs(double(d[i])));
      mismatched += std::fabs(double(summed[i]) - (double(prior[i]) + d[i])) > scale * 2.5e-7 + 1e-30;
    }
    CHECK(mismatched == 0);
  }
}

// Rows whose length divides by 4 run the 4-vector kernels, but only on 16-byte-aligned bindings: x placed 4
// bytes into its buffer takes the scalar kernels, and both give the same results.
TEST_CASE("norm on a binding that is not 16-byte aligned takes the scalar kernels, same results", "[norm]") {
  INFO("seed " << test::testSeed());
  const uint32_t rows = 33, cols = 64;
  const Inputs in(rows, cols);
  const size_t n = in.n();
  std::vector<float> shifted(n + 1, 0.0f);
  std::copy(in.x.begin(), in.x.end(), shifted.begin() + 1);
  auto bx = input(in.x, "x"), bxs = input(shifted, "x+4"), bg = input(in.gamma, "gamma"),
       bb = input(in.beta, "beta"), bdy = input(in.dy, "dy");
  vk::BufferRange xs = vk::subrange(bxs.range(), 4, n * 4);
  const auto run = [&](vk::BufferRange x) {
    auto by = output(n, "y"), bm = output(rows, "mean"), br = output(rows, "rstd"), bdx = output(n, "dx"),
         bdg = output(cols, "dgamma"), bdb = output(cols, "dbeta");
    auto scratch = ctx().buffer(ops::normBackwardScratchBytes(NormKind::LayerNorm, rows, cols), "scratch");
    ops::ImmediateExecutor exec(ctx());
    ops::layerNorm(exec, x, bg.range(), bb.range(), by.range(), bm.range(), br.range(), rows, cols, kEps);
    exec.flush();
    ops::layerNormBackward(exec, x, bg.range(), bdy.range(), bm.range(), br.range(), bdx.range(), bdg.range(),
                           bdb.range(), scratch.range(), rows, cols);
    exec.flush();
    return std::array{result(by, n), result(bdx, n), result(bdg, cols)};
  };
  const auto aligned = run(bx.range()), unaligned = run(xs);
  const auto ref = ref::layerNorm(in.x, in.gamma, in.beta, rows, cols, kEps);
  for (const auto& [got, want] :
       {std::pair{&unaligned[0], &aligned[0]}, std::pair{&unaligned[1], &aligned[1]},
        std::pair{&unaligned[2], &aligned[2]}})
    CHECK(ref::relError(*got, ref::Vec(want->begin(), want->end())) < 1e-5);
  CHECK(ref::relError(aligned[0], ref.y) < 1e-5);
}
