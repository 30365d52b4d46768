// Elementwise ops (engine/ops/elementwise.hpp) against the float64 references: binary with and without
// broadcast, scale, axpy, activations and their backward (also against finite differences), f16 storage,
// casts, fill, copy, in-place use, the grid-stride loop, and size validation.
// Every output buffer is poisoned and has guard elements past the range the op is given: each element in
// range must be written, each guard element must stay untouched.
#include "codegen/kernels/elementwise.hpp"
#include "codegen/spirv/tools.hpp"
#include "engine/core/half.hpp"
#include "engine/ops/elementwise.hpp"
#include "support/guarded.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

using namespace helios;
using Catch::Matchers::ContainsSubstring;

namespace {

using test::bitsOf;
using test::ctx;
using test::head;

bool f16Supported() {
  const auto& f = ctx().device().features();
  return f.shaderFloat16 && f.storageBuffer16BitAccess;
}

constexpr uint16_t kPoisonF16 = 0x7e5b;  // a quiet f16 NaN with a recognisable payload
constexpr uint16_t kPoisonBF16 = 0x7f9b; // a bf16 NaN no kernel writes

vk::Buffer input(const std::vector<float>& v) {
  return test::guardedBuffer(v, 0.0f, "ew input");
}
vk::Buffer poisonedF32(size_t n) {
  return test::guardedBuffer(std::vector<float>(n, test::poisonF32()), test::poisonF32(), "ew out");
}

// The first n floats; the guard past them must still hold `guard`.
std::vector<float> readF32(const vk::Buffer& b, size_t n, float guard = test::poisonF32()) {
  return test::readGuarded(b, n, guard);
}

void flushRun(const std::function<void(ops::Executor&)>& fn) {
  ops::ImmediateExecutor exec(ctx());
  fn(exec);
  exec.flush();
}

// Values exactly representable in f16 (so the reference sees what the GPU sees).
std::vector<float> halfRounded(std::vector<float> v) {
  for (auto& x : v)
    x = halfToFloat(floatToHalf(x));
  return v;
}

std::vector<float> readF16AsF32(const vk::Buffer& b, size_t n, size_t* unwrittenCount) {
  const auto all = test::readGuarded(b, n, kPoisonF16);
  std::vector<float> out(n);
  *unwrittenCount = 0;
  for (size_t i = 0; i < n; ++i) {
    *unwrittenCount += all[i] == kPoisonF16;
    out[i] = halfToFloat(all[i]);
  }
  return out;
}

double act(ops::Activation a, double x) {
  switch (a) {
  case ops::Activation::Gelu:
    return ref::gelu(x);
  case ops::Activation::Silu:
    return ref::silu(x);
  case ops::Activation::Relu:
    return x > 0 ? x : 0.0;
  }
  return 0;
}
double actGrad(ops::Activation a, double x) {
  switch (a) {
  case ops::Activation::Gelu:
    return ref::geluGrad(x);
  case ops::Activation::Silu:
    return ref::siluGrad(x);
  case ops::Activation::Relu:
    return x > 0 ? 1.0 : 0.0;
  }
  return 0;
}
const char* actName(ops::Activation a) {
  return a == ops::Activation::Gelu ? "gelu" : a == ops::Activation::Silu ? "silu" : "relu";
}

double binaryRef(ops::BinaryOp op, double a, double b) {
  return op == ops::BinaryOp::Add ? a + b : op == ops::BinaryOp::Sub ? a - b : a * b;
}

} // namespace

TEST_CASE("every elementwise kernel variant passes spirv-val") {
  codegen::KernelRegistry reg;
  codegen::registerElementwise(reg);
  size_t count = 0;
  for (const auto& k : reg.find("elementwise")->all()) {
    INFO(k.name);
    const auto r = spv::validate(k.spirv);
    CHECK(r.ok);
    if (!r.ok) UNSCOPED_INFO(r.message);
    ++count;
  }
  CHECK(count > 40);
  CHECK_THROWS_AS(codegen::generateElementwise({codegen::EwOp::Gelu, codegen::Elem::F32, true, 256}),
                  std::invalid_argument);
}

// Rounded once from exact inputs: per-element relative error <= 2^-24. Threshold: relError < 1e-7.
TEST_CASE("binary add/sub/mul, flat and broadcast along the last axis (f32)") {
  INFO("seed " << test::testSeed());
  const auto op = GENERATE(ops::BinaryOp::Add, ops::BinaryOp::Sub, ops::BinaryOp::Mul);
  const auto shape =
      GENERATE(std::pair<uint32_t, uint32_t>{1, 1}, std::pair<uint32_t, uint32_t>{1, 7},
               std::pair<uint32_t, uint32_t>{33, 127}, std::pair<uint32_t, uint32_t>{7, 513},
               std::pair<uint32_t, uint32_t>{64, 1024}, std::pair<uint32_t, uint32_t>{127, 33});
  const bool broadcast = GENERATE(false, true);
  const auto [rows, cols] = shape;
  const size_t n = size_t(rows) * cols;
  const size_t nb = broadcast ? cols : n;
  INFO("op " << int(op) << " rows " << rows << " cols " << cols << " broadcast " << broadcast);
  const auto a = test::randomFloats(n), b = test::randomFloats(nb);
  auto da = input(a), db = input(b);
  auto dout = poisonedF32(n);
  flushRun([&](ops::Executor& e) {
    if (broadcast)
      ops::binaryBroadcast(e, op, head(da, n), head(db, nb), head(dout, n), rows, cols);
    else
      ops::binary(e, op, head(da, n), head(db, n), head(dout, n), static_cast<uint32_t>(n));
  });
  const auto out = readF32(dout, n);
  ref::Vec expect(n);
  for (size_t i = 0; i < n; ++i)
    expect[i] = binaryRef(op, a[i], b[broadcast ? i % cols : i]);
  CHECK(test::countPoisoned(out) == 0);
  CHECK(ref::relError(out, expect) < 1e-7);
}

TEST_CASE("in place: out aliases an input (add, bias add, scale, gelu, gelu backward)") {
  INFO("seed " << test::testSeed());
  const uint32_t rows = 33, cols = 127, n = rows * cols;
  const auto a = test::randomFloats(n, -3, 3), b = test::randomFloats(n), bias = test::randomFloats(cols);
  const float guard = 12345.0f;
  SECTION("add: out = a") {
    auto da = test::guardedBuffer(a, guard, "a"), db = input(b);
    flushRun([&](ops::Executor& e) { ops::add(e, head(da, n), head(db, n), head(da, n), n); });
    ref::Vec expect(n);
    for (size_t i = 0; i < n; ++i)
      expect[i] = double(a[i]) + b[i];
    CHECK(ref::relError(readF32(da, n, guard), expect) < 1e-7);
  }
  SECTION("bias add: out = x") {
    auto da = test::guardedBuffer(a, guard, "a"), dbias = input(bias);
    flushRun(
        [&](ops::Executor& e) { ops::biasAdd(e, head(da, n), head(dbias, cols), head(da, n), rows, cols); });
    ref::Vec expect(n);
    for (size_t i = 0; i < n; ++i)
      expect[i] = double(a[i]) + bias[i % cols];
    CHECK(ref::relError(readF32(da, n, guard), expect) < 1e-7);
  }
  SECTION("scale: out = x") {
    auto da = test::guardedBuffer(a, guard, "a");
    flushRun([&](ops::Executor& e) { ops::scale(e, head(da, n), head(da, n), n, -0.375f); });
    ref::Vec expect(n);
    for (size_t i = 0; i < n; ++i)
      expect[i] = -0.375 * a[i];
    CHECK(ref::relError(readF32(da, n, guard), expect) < 1e-7);
  }
  SECTION("gelu: out = x, gelu backward: dx = dy") {
    auto dx = test::guardedBuffer(a, guard, "x"), ddy = test::guardedBuffer(b, guard, "dy");
    flushRun([&](ops::Executor& e) {
      ops::activationBackward(e, ops::Activation::Gelu, head(dx, n), head(ddy, n), head(ddy, n), n);
      ops::activation(e, ops::Activation::Gelu, head(dx, n), head(dx, n), n);
    });
    ref::Vec y(n), g(n);
    for (size_t i = 0; i < n; ++i) {
      y[i] = ref::gelu(a[i]);
      g[i] = b[i] * ref::geluGrad(a[i]);
    }
    CHECK(ref::maxAbsError(readF32(dx, n, guard), y) < 1e-5);
    CHECK(ref::maxAbsError(readF32(ddy, n, guard), g) < 1e-5);
  }
}

TEST_CASE("scale and axpy (f32)") {
  INFO("seed " << test::testSeed());
  const uint32_t n = GENERATE(1u, 7u, 33u, 127u, 513u, 64u, 1024u);
  const float alpha = std::uniform_real_distribution<float>(-2.f, 2.f)(test::rng());
  INFO("n " << n << " alpha " << alpha);
  const auto x = test::randomFloats(n), y = test::randomFloats(n);
  auto dx = input(x), dout = poisonedF32(n);
  const float guard = -7.0f;
  auto dy = test::guardedBuffer(y, guard, "y");
  flushRun([&](ops::Executor& e) {
    ops::scale(e, head(dx, n), head(dout, n), n, alpha);
    ops::axpy(e, alpha, head(dx, n), head(dy, n), n);
  });
  ref::Vec s(n), ax(n);
  for (size_t i = 0; i < n; ++i) {
    s[i] = double(alpha) * x[i];
    ax[i] = y[i] + double(alpha) * x[i];
  }
  const auto out = readF32(dout, n);
  CHECK(test::countPoisoned(out) == 0);
  CHECK(ref::relError(out, s) < 1e-7);
  // axpy: two roundings (product and sum, or one with FMA), with cancellation in y + alpha x: absolute bound.
  CHECK(ref::maxAbsError(readF32(dy, n, guard), ax) < 1e-6);
}

TEST_CASE("axpy over slices folds partial sums into y (split-K's reduction)") {
  INFO("seed " << test::testSeed());
  const uint32_t n = GENERATE(1u, 7u, 33u, 513u, 1024u);
  const uint32_t slices = GENERATE(1u, 2u, 5u, 16u);
  const float alpha = std::uniform_real_distribution<float>(-2.f, 2.f)(test::rng());
  INFO("n " << n << " slices " << slices << " alpha " << alpha);
  const auto x = test::randomFloats(size_t(n) * slices), y = test::randomFloats(n);
  auto dx = input(x);
  const float guard = -7.0f;
  auto dy = test::guardedBuffer(y, guard, "y");
  flushRun([&](ops::Executor& e) {
    ops::axpySlices(e, alpha, head(dx, size_t(n) * slices), slices, head(dy, n), n);
  });
  ref::Vec want(n);
  for (size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (size_t s = 0; s < slices; ++s)
      sum += x[s * n + i];
    want[i] = y[i] + double(alpha) * sum;
  }
  // f32 sum of up to 16 terms in [-1, 1], scaled by |alpha| <= 2, plus y: a few ulp of 33.
  CHECK(ref::maxAbsError(readF32(dy, n, guard), want) < 2e-5);
}

// GELU/SiLU use exp (a few ulp on GPUs) and a division: thresholds maxAbs < 1e-5 on inputs in [-8, 8]
// (|f(x)| <= 8); backward: maxAbs < 1e-5 vs the analytic derivative, < 2e-5 vs central differences.
TEST_CASE("activations and their backward (f32) vs reference and finite differences") {
  INFO("seed " << test::testSeed());
  const auto a = GENERATE(ops::Activation::Gelu, ops::Activation::Silu, ops::Activation::Relu);
  const uint32_t n = GENERATE(1u, 7u, 33u, 127u, 513u, 64u, 1024u);
  INFO(actName(a) << " n " << n);
  auto x = test::randomFloats(n, -8, 8);
  if (n > 8) x[0] = -60.f, x[1] = 60.f, x[2] = 0.f; // tails must not produce NaN
  const auto dy = test::randomFloats(n);
  auto dxIn = input(x), ddy = input(dy), dout = poisonedF32(n), dgrad = poisonedF32(n);
  flushRun([&](ops::Executor& e) {
    ops::activation(e, a, head(dxIn, n), head(dout, n), n);
    ops::activationBackward(e, a, head(dxIn, n), head(ddy, n), head(dgrad, n), n);
  });
  const auto out = readF32(dout, n), grad = readF32(dgrad, n);
  CHECK(test::countPoisoned(out) == 0);
  CHECK(test::countPoisoned(grad) == 0);
  ref::Vec y(n), g(n), fd(n);
  const double h = 1e-4;
  for (size_t i = 0; i < n; ++i) {
    y[i] = act(a, x[i]);
    g[i] = dy[i] * actGrad(a, x[i]);
    fd[i] = dy[i] * (act(a, double(x[i]) + h) - act(a, double(x[i]) - h)) / (2 * h);
    if (a == ops::Activation::Relu && std::fabs(x[i]) < 2 * h) fd[i] = g[i]; // kink: FD is meaningless there
  }
  CHECK(ref::maxAbsError(out, y) < 1e-5);
  CHECK(ref::maxAbsError(grad, g) < 1e-5);
  CHECK(ref::maxAbsError(grad, fd) < 2e-5);
}

// f16 storage, f32 math: outputs rounded to f16 once (relative error <= 2^-11 per element, plus the f32
// math). Thresholds: relError < 1e-3 for the binary ops, maxAbs < 4e-3 (|f| <= 4) for the activations.
TEST_CASE("f16 storage variants of the math ops") {
  if (!f16Supported()) SKIP("device lacks shaderFloat16 / storageBuffer16BitAccess");
  INFO("seed " << test::testSeed());
  const uint32_t rows = 33, cols = 127, n = rows * cols;
  const auto a = halfRounded(test::randomFloats(n, -4, 4)), b = halfRounded(test::randomFloats(n));
  const auto bias = halfRounded(test::randomFloats(cols));
  auto da = test::guardedBuffer(toHalf(a), uint16_t(0), "a16"),
       db = test::guardedBuffer(toHalf(b), uint16_t(0), "b16");
  auto dbias = test::guardedBuffer(toHalf(bias), uint16_t(0), "bias16");
  const auto y = halfRounded(test::randomFloats(n));
  std::vector<vk::Buffer> outs;
  for (int i = 0; i < 6; ++i)
    outs.push_back(
        test::guardedBuffer(i == 4 ? toHalf(y) : std::vector<uint16_t>(n, kPoisonF16), kPoisonF16, "out16"));
  const auto h16 = [&](const vk::Buffer& buf, size_t count) { return head(buf, count, 2); };
  flushRun([&](ops::Executor& e) {
    ops::add(e, h16(da, n), h16(db, n), h16(outs[0], n), n, ops::Elem::F16);
    ops::binaryBroadcast(e, ops::BinaryOp::Mul, h16(da, n), h16(dbias, cols), h16(outs[1], n), rows, cols,
                         ops::Elem::F16);
    ops::activation(e, ops::Activation::Gelu, h16(da, n), h16(outs[2], n), n, ops::Elem::F16);
    ops::activationBackward(e, ops::Activation::Silu, h16(da, n), h16(db, n), h16(outs[3], n), n,
                            ops::Elem::F16);
    ops::axpy(e, 0.5f, h16(db, n), h16(outs[4], n), n, ops::Elem::F16);
    ops::scale(e, h16(da, n), h16(outs[5], n), n, 0.25f, ops::Elem::F16);
  });
  ref::Vec add(n), mul(n), gelu(n), silu(n), axpy(n), scale(n);
  for (size_t i = 0; i < n; ++i) {
    add[i] = double(a[i]) + b[i];
    mul[i] = double(a[i]) * bias[i % cols];
    gelu[i] = ref::gelu(a[i]);
    silu[i] = b[i] * ref::siluGrad(a[i]);
    axpy[i] = y[i] + 0.5 * b[i];
    scale[i] = 0.25 * a[i];
  }
  size_t missing = 0;
  CHECK(ref::relError(readF16AsF32(outs[0], n, &missing), add) < 1e-3);
  CHECK(missing == 0);
  CHECK(ref::relError(readF16AsF32(outs[1], n, &missing), mul) < 1e-3);
  CHECK(missing == 0);
  CHECK(ref::maxAbsError(readF16AsF32(outs[2], n, &missing), gelu) < 4e-3);
  CHECK(missing == 0);
  CHECK(ref::maxAbsError(readF16AsF32(outs[3], n, &missing), silu) < 4e-3);
  CHECK(missing == 0);
  CHECK(ref::maxAbsError(readF16AsF32(outs[4], n, &missing), axpy) < 1e-3);
  CHECK(ref::relError(readF16AsF32(outs[5], n, &missing), scale) < 1e-3); // exact: power-of-two scale
  CHECK(missing == 0);
}

// An activation written straight to f16 (a GEMM operand) is the f32 activation rounded once: the same bits
// as activation() followed by cast, and within half an f16 ulp (plus f32 math) of float64.
TEST_CASE("activations to f16 equal the f32 activation then a cast, bit for bit") {
  if (!f16Supported()) SKIP("device lacks shaderFloat16 / storageBuffer16BitAccess");
  INFO("seed " << test::testSeed());
  const auto a = GENERATE(ops::Activation::Gelu, ops::Activation::Silu, ops::Activation::Relu);
  const uint32_t n = GENERATE(1u, 7u, 33u, 127u, 513u, 4096u);
  INFO(actName(a) << " n " << n);
  auto x = test::randomFloats(n, -8, 8);
  if (n > 8) x[0] = -60.f, x[1] = 60.f, x[2] = 0.f;
  auto dx = input(x), d32 = poisonedF32(n);
  auto fused = test::guardedBuffer(std::vector<uint16_t>(n, kPoisonF16), kPoisonF16, "act16");
  auto cast = test::guardedBuffer(std::vector<uint16_t>(n, kPoisonF16), kPoisonF16, "cast16");
  flushRun([&](ops::Executor& e) {
    ops::activationToHalf(e, a, head(dx, n), head(fused, n, 2), n, ops::Elem::F16);
    ops::activation(e, a, head(dx, n), head(d32, n), n);
    ops::cast(e, head(d32, n), head(cast, n, 2), n, ops::Elem::F32, ops::Elem::F16);
  });
  size_t missing = 0;
  const auto got = readF16AsF32(fused, n, &missing);
  CHECK(missing == 0);
  CHECK(ctx().downloadVector<uint16_t>(fused, n) == ctx().downloadVector<uint16_t>(cast, n));
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const double want = act(a, x[i]);
    const double ulp = std::ldexp(1.0, std::ilogb(std::max(std::fabs(want), 6.2e-5)) - 10);
    bad += std::fabs(got[i] - want) > ulp + 1e-5;
  }
  CHECK(bad == 0);
  CHECK_THROWS_WITH(
      codegen::generateElementwise({codegen::EwOp::Copy, codegen::Elem::F32, false, 256, codegen::Elem::F16}),
      ContainsSubstring("f16 output is for math ops and casts on f32, not copy"));
}

// f16 -> f32 is exact (bit-exact vs the host conversion); f32 -> f16 must be within one f16 ulp
// (round-to-nearest-even on most drivers; the rounding mode of OpFConvert is not pinned down by Vulkan).
TEST_CASE("casts f32 <-> f16, fill and copy") {
  if (!f16Supported()) SKIP("device lacks shaderFloat16 / storageBuffer16BitAccess");
  INFO("seed " << test::testSeed());
  const uint32_t n = GENERATE(1u, 7u, 33u, 127u, 513u, 64u, 1024u);
  INFO("n " << n);
  auto x = test::randomFloats(n, -100, 100);
  const auto xh = toHalf(test::randomFloats(n, -100, 100));
  auto dx = input(x), dxh = test::guardedBuffer(xh, uint16_t(0), "xh");
  auto d16 = test::guardedBuffer(std::vector<uint16_t>(n, kPoisonF16), kPoisonF16, "to16");
  auto d32 = poisonedF32(n), dfill = poisonedF32(n), dcopy = poisonedF32(n);
  auto dfill16 = test::guardedBuffer(std::vector<uint16_t>(n, kPoisonF16), kPoisonF16, "fill16");
  auto dcopy16 = test::guardedBuffer(std::vector<uint16_t>(n, kPoisonF16), kPoisonF16, "copy16");
  flushRun([&](ops::Executor& e) {
    ops::cast(e, head(dx, n), head(d16, n, 2), n, ops::Elem::F32, ops::Elem::F16);
    ops::cast(e, head(dxh, n, 2), head(d32, n), n, ops::Elem::F16, ops::Elem::F32);
    ops::fill(e, head(dfill, n), n, 3.25f);
    ops::fill(e, head(dfill16, n, 2), n, -1.5f, ops::Elem::F16);
    ops::copy(e, head(dx, n), head(dcopy, n), n);
    ops::copy(e, head(dxh, n, 2), head(dcopy16, n, 2), n, ops::Elem::F16);
  });
  size_t missing = 0;
  const auto to16 = readF16AsF32(d16, n, &missing);
  CHECK(missing == 0);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const double ulp = std::ldexp(1.0, std::ilogb(std::max(std::fabs(double(x[i])), 6.2e-5)) - 10);
    bad += std::fabs(to16[i] - double(x[i])) > ulp;
  }
  CHECK(bad == 0);
  const auto to32 = readF32(d32, n);
  size_t mismatched = 0;
  for (size_t i = 0; i < n; ++i)
    mismatched += bitsOf(to32[i]) != bitsOf(halfToFloat(xh[i]));
  CHECK(mismatched == 0);
  const auto filled = readF32(dfill, n);
  CHECK(size_t(std::count(filled.begin(), filled.end(), 3.25f)) == n);
  const auto filled16 = readF16AsF32(dfill16, n, &missing);
  CHECK(size_t(std::count(filled16.begin(), filled16.end(), -1.5f)) == n);
  const auto copied = readF32(dcopy, n);
  CHECK(std::memcmp(copied.data(), x.data(), 4ull * n) == 0);
  auto copied16 = ctx().downloadVector<uint16_t>(dcopy16, n);
  CHECK(copied16 == xh);
}

TEST_CASE("the grid-stride loop covers elements past the dispatched workgroups") {
  INFO("seed " << test::testSeed());
  SECTION("a tiny forced workgroup count") {
    const uint32_t n = 33 * 1024 + 7, maxGroups = GENERATE(1u, 3u);
    const auto x = test::randomFloats(n);
    auto dx = input(x), dout = poisonedF32(n);
    flushRun([&](ops::Executor& e) {
      const ops::Binding b[] = {{head(dx, n), ops::Access::Read}, {head(dout, n), ops::Access::Write}};
      ops::elementwise(e, {codegen::EwOp::Scale, codegen::Elem::F32, false, 64}, b,
                       codegen::ElementwisePush{n, 1, 2.0f, 0}, maxGroups);
    });
    const auto out = readF32(dout, n);
    CHECK(test::countPoisoned(out) == 0);
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i)
      wrong += out[i] != 2.0f * x[i];
    CHECK(wrong == 0);
  }
  SECTION("more elements than 65535 workgroups x 256 invocations") {
    const uint32_t n = 65535u * 256u + 4097u; // 16.8 M floats
    std::vector<float> x(n);
    for (uint32_t i = 0; i < n; ++i)
      x[i] = float(i & 0xffff);
    auto dx = input(x), dout = poisonedF32(n);
    flushRun([&](ops::Executor& e) { ops::scale(e, head(dx, n), head(dout, n), n, 0.5f); });
    const auto out = readF32(dout, n);
    size_t wrong = 0;
    for (uint32_t i = 0; i < n; ++i)
      wrong += out[i] != 0.5f * x[i];
    CHECK(wrong == 0);
  }
}

TEST_CASE("elementwise ops reject buffers smaller than the sizes they are given") {
  const uint32_t n = 100;
  auto big = ctx().buffer(4 * n, "big"), small = ctx().buffer(4 * (n - 1), "small");
  auto halfBuf = ctx().buffer(2 * n, "half");
  ops::ImmediateExecutor e(ctx());
  CHECK_THROWS_WITH(ops::add(e, big.range(), small.range(), big.range(), n),
                    ContainsSubstring("b holds 396 bytes"));
  CHECK_THROWS_WITH(ops::add(e, big.range(), big.range(), small.range(), n), ContainsSubstring("out"));
  CHECK_THROWS_WITH(ops::biasAdd(e, big.range(), small.range(), big.range(), 1, n),
                    ContainsSubstring("b (broadcast"));
  CHECK_THROWS_WITH(ops::axpy(e, 1.f, small.range(), big.range(), n), ContainsSubstring("x holds"));
  CHECK_THROWS_WITH(ops::axpySlices(e, 1.f, big.range(), 2, small.range(), n), ContainsSubstring("x holds"));
  CHECK_THROWS_WITH(
      ops::activationBackward(e, ops::Activation::Gelu, big.range(), small.range(), big.range(), n),
      ContainsSubstring("dy"));
  CHECK_THROWS_WITH(ops::cast(e, halfBuf.range(), halfBuf.range(), n, ops::Elem::F16, ops::Elem::F32),
                    ContainsSubstring("dst"));
  CHECK_THROWS_AS(ops::fill(e, small.range(), n, 0.f), std::invalid_argument);
  CHECK_THROWS_AS(ops::scale(e, big.range(), big.range(), 1u << 31, 1.f), std::invalid_argument);
  CHECK(e.dispatches() == 0);
}

// bf16 (uint16 bits; no bf16 type): f32 -> bf16 rounds to nearest even exactly as the host does, bit for bit,
// on ties both ways, the largest finite values (rounding up to infinity), infinities, NaNs (kept quiet, sign
// and payload top bits kept), zeros of both signs and denormals (kept as their bits say, never flushed);
// bf16 -> f32 is exact. Scalar and 4-vector kernels (odd and whole-vector counts).
TEST_CASE("casts f32 <-> bf16: round to nearest even, bit-exact, special values included", "[bf16]") {
  if (!ops::supportsElem(ctx().device().features(), ops::Elem::BF16))
    SKIP("device lacks shaderInt16 / storageBuffer16BitAccess");
  INFO("seed " << test::testSeed());
  const auto fromBits = [](uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  };
  std::vector<float> x{0.0f,
                       -0.0f,
                       1.0f,
                       -1.0f,
                       3.0f,
                       1e-40f,
                       -1e-40f,
                       1e-45f,
                       std::numeric_limits<float>::max(),
                       -std::numeric_limits<float>::max(),
                       std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity(),
                       fromBits(0x7fc00000u),
                       fromBits(0xffc12345u),
                       fromBits(0x7f800001u), // NaNs (one signalling)
                       fromBits(0x3f808000u),
                       fromBits(0x3f818000u), // ties: to even
                       fromBits(0x3f808001u),
                       fromBits(0x3f807fffu), // just off a tie
                       fromBits(0x00408000u),
                       fromBits(0x00418000u),
                       fromBits(0x807fffffu), // denormal ties
                       fromBits(0x7f7f8000u),
                       fromBits(0x7f7f7fffu)}; // max bf16 +- 1/2 ulp
  const auto random = test::randomFloats(97, -1e4, 1e4);
  x.insert(x.end(), random.begin(), random.end());
  const uint32_t n = GENERATE(123u, 120u); // 123: scalar kernels; 120: whole 4-vectors
  x.resize(n, 0.5f);
  std::vector<uint16_t> bits(n);
  for (size_t i = 0; i < n; ++i)
    bits[i] = floatToBf16(x[i]) ^ uint16_t(i % 2 ? 0 : 0x0001); // any bits, NaN patterns included
  auto dx = input(x), dbits = test::guardedBuffer(bits, uint16_t(0), "bf16 in");
  auto d16 = test::guardedBuffer(std::vector<uint16_t>(n, kPoisonBF16), kPoisonBF16, "to bf16");
  auto d32 = poisonedF32(n);
  flushRun([&](ops::Executor& e) {
    ops::cast(e, head(dx, n), head(d16, n, 2), n, ops::Elem::F32, ops::Elem::BF16);
    ops::cast(e, head(dbits, n, 2), head(d32, n), n, ops::Elem::BF16, ops::Elem::F32);
  });
  const auto rounded = test::readGuarded(d16, n, kPoisonBF16);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i)
    if (rounded[i] != floatToBf16(x[i])) {
      ++bad;
      UNSCOPED_INFO(std::hex << "f32 " << bitsOf(x[i]) << " -> " << rounded[i] << ", expected "
                             << floatToBf16(x[i]));
    }
  CHECK(bad == 0);
  const auto widened = readF32(d32, n);
  size_t mismatched = 0;
  for (size_t i = 0; i < n; ++i)
    mismatched += bitsOf(widened[i]) != uint32_t(bits[i]) << 16;
  CHECK(mismatched == 0);
}

// The math ops on bf16 storage (f32 arithmetic, result rounded to nearest even), and an activation writing a
// bf16 output from f32 input in one pass, against float64 within half a bf16 ulp (plus f32 math).
TEST_CASE("elementwise on bf16 storage: add, gelu, gelu to bf16 from f32, backward to bf16", "[bf16]") {
  if (!ops::supportsElem(ctx().device().features(), ops::Elem::BF16))
    SKIP("device lacks shaderInt16 / storageBuffer16BitAccess");
  INFO("seed " << test::testSeed());
  const uint32_t n = GENERATE(77u, 256u);
  const auto a32 = test::randomFloats(n, -4, 4), b32 = test::randomFloats(n, -4, 4);
  std::vector<uint16_t> a(n), b(n);
  std::vector<float> ar(n), br(n);
  for (size_t i = 0; i < n; ++i) {
    ar[i] = bf16ToFloat(a[i] = floatToBf16(a32[i]));
    br[i] = bf16ToFloat(b[i] = floatToBf16(b32[i]));
  }
  auto da = test::guardedBuffer(a, uint16_t(0), "a"), db = test::guardedBuffer(b, uint16_t(0), "b");
  auto dx = input(a32);
  std::vector<vk::Buffer> outs;
  for (int k = 0; k < 4; ++k)
    outs.push_back(test::guardedBuffer(std::vector<uint16_t>(n, kPoisonBF16), kPoisonBF16, "bf16 out"));
  const auto B = ops::Elem::BF16;
  flushRun([&](ops::Executor& e) {
    ops::add(e, head(da, n, 2), head(db, n, 2), head(outs[0], n, 2), n, B);
    ops::activation(e, ops::Activation::Gelu, head(da, n, 2), head(outs[1], n, 2), n, B);
    ops::activationToHalf(e, ops::Activation::Gelu, head(dx, n), head(outs[2], n, 2), n, B);
    ops::activationBackwardToHalf(e, ops::Activation::Gelu, head(dx, n), head(dx, n), head(outs[3], n, 2), n,
                                  B);
  });
  const auto gelu = [](double v) {
    return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  };
  const auto geluGrad = [&](double v) {
    const double h = 1e-5;
    return (gelu(v + h) - gelu(v - h)) / (2 * h);
  };
  for (int k = 0; k < 4; ++k) {
    INFO("output " << k);
    const auto got = test::readGuarded(outs[size_t(k)], n, kPoisonBF16);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      const double want = k == 0   ? double(ar[i]) + br[i]
                          : k == 1 ? gelu(ar[i])
                          : k == 2 ? gelu(a32[i])
                                   : double(a32[i]) * geluGrad(a32[i]);
      // Half an ulp of an 8-bit significand (2^-9 relative), and f32 math around it.
      const double tol = std::ldexp(std::fabs(want), -8) + 1e-6;
      bad += !(std::fabs(double(bf16ToFloat(got[i])) - want) <= tol);
    }
    CHECK(bad == 0);
  }
}
