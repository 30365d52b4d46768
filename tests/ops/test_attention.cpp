// Fused attention (engine/ops/attention.hpp) against a float64 reference that materialises the scores:
// forward (o, lse) and backward (dQ, dK, dV) on odd and aligned shapes, causal and dense, grouped-query
// heads, Tq != Tk (including queries that see no key), outputs poisoned first; plus 20-run repeatability and
// argument checks.
#include "codegen/kernels/attention.hpp"
#include "codegen/kernels/attention_coop.hpp"
#include "codegen/kernels/gemm_coop.hpp"
#include "codegen/spirv/tools.hpp"
#include "engine/core/half.hpp"
#include "engine/ops/attention.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "support/device_io.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <regex>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
using helios::test::ctx;

namespace {

struct Ref {
  std::vector<double> o, lse, dq, dk, dv;
};

// Scores, softmax, O = P V and the gradients, all in double. With `positions` ([B, Tq] positions inside
// packed documents) query i sees keys from i - positions[i] on.
Ref reference(const ops::AttentionShape& s, const std::vector<float>& q, const std::vector<float>& k,
              const std::vector<float>& v, const std::vector<float>& dO,
              const std::vector<int32_t>& positions = {}) {
  const uint32_t D = s.headDim, group = s.heads / s.kvHeads;
  Ref r;
  r.o.assign(size_t(s.batch) * s.heads * s.Tq * D, 0.0);
  r.dq = r.o;
  r.lse.assign(size_t(s.batch) * s.heads * s.Tq, -INFINITY);
  r.dk.assign(size_t(s.batch) * s.kvHeads * s.Tk * D, 0.0);
  r.dv = r.dk;
  std::vector<double> p(s.Tk), dp(s.Tk);
  for (uint32_t b = 0; b < s.batch; ++b)
    for (uint32_t h = 0; h < s.heads; ++h) {
      const size_t qh = (size_t(b) * s.heads + h) * s.Tq, kh = (size_t(b) * s.kvHeads + h / group) * s.Tk;
      for (uint32_t i = 0; i < s.Tq; ++i) {
        const int64_t lim = s.causal ? std::min<int64_t>(s.Tk, int64_t(i) + 1 + s.Tk - s.Tq) : s.Tk;
        if (lim <= 0) continue; // sees no key: o = 0, lse = -inf, no gradient
        const int64_t lo = positions.empty() ? 0 : int64_t(i) - positions[size_t(b) * s.Tq + i];
        double mx = -INFINITY;
        for (int64_t j = lo; j < lim; ++j) {
          double d = 0;
          for (uint32_t c = 0; c < D; ++c)
            d += double(q[(qh + i) * D + c]) * k[(kh + j) * D + c];
          p[j] = d * s.scale;
          mx = std::max(mx, p[j]);
        }
        double sum = 0;
        for (int64_t j = lo; j < lim; ++j)
          sum += (p[j] = std::exp(p[j] - mx));
        r.lse[qh + i] = mx + std::log(sum);
        for (int64_t j = lo; j < lim; ++j)
          p[j] /= sum;
        for (uint32_t c = 0; c < D; ++c) {
          double acc = 0;
          for (int64_t j = lo; j < lim; ++j)
            acc += p[j] * v[(kh + j) * D + c];
          r.o[(qh + i) * D + c] = acc;
        }
        double delta = 0;
        for (uint32_t c = 0; c < D; ++c)
          delta += double(dO[(qh + i) * D + c]) * r.o[(qh + i) * D + c];
        for (int64_t j = lo; j < lim; ++j) {
          double d = 0;
          for (uint32_t c = 0; c < D; ++c)
            d += double(dO[(qh + i) * D + c]) * v[(kh + j) * D + c];
          const double ds = p[j] * (d - delta);
          for (uint32_t c = 0; c < D; ++c) {
            r.dq[(qh + i) * D + c] += s.scale * ds * k[(kh + j) * D + c];
            r.dk[(kh + j) * D + c] += s.scale * ds * q[(qh + i) * D + c];
            r.dv[(kh + j) * D + c] += p[j] * dO[(qh + i) * D + c];
          }
        }
      }
    }
  return r;
}

// max |got - ref| / max(max |ref|, floor); NaN or inf in `got` where ref is finite counts as infinite error.
double relError(const std::vector<float>& got, const std::vector<double>& ref, double floor = 1e-3) {
  double worst = 0, norm = floor;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(ref[i])) continue;
    norm = std::max(norm, std::abs(ref[i]));
    worst = std::max(worst, std::isfinite(got[i]) ? std::abs(got[i] - ref[i]) : INFINITY);
  }
  return worst / norm;
}

// ||got - ref||_F / max(||ref||_F, floor * sqrt(n)) over the finite reference entries (NaN or inf in `got`
// counts as infinite); the floor, as relError's, keeps an all-zero reference (one key: dS = 0) meaningful.
double relFrobenius(const std::vector<float>& got, const std::vector<double>& ref, double floor = 1e-3) {
  double err = 0, norm = 0;
  size_t n = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(ref[i])) continue;
    if (!std::isfinite(got[i])) return INFINITY;
    err += (got[i] - ref[i]) * (got[i] - ref[i]);
    norm += ref[i] * ref[i];
    ++n;
  }
  return std::sqrt(err) / std::max(std::sqrt(norm), floor * std::sqrt(double(n)));
}

struct Run {
  std::vector<float> o, lse, dq, dk, dv;
};

void compareWithReference(const ops::AttentionShape& s, const Run& got, const Ref& ref, double coopGradTol);

// The device's Tuning record with `change` applied for one scope (restored when it ends).
struct ScopedTuning {
  const vk::Device& device;
  const tuning::Tuning saved;
  ScopedTuning(const vk::Device& d, const std::function<void(tuning::Tuning&)>& change)
      : device(d), saved(ops::deviceTuning(d)) {
    tuning::Tuning t = saved;
    change(t);
    ops::setDeviceTuning(d, t);
  }
  ~ScopedTuning() { ops::setDeviceTuning(device, saved); }
};

// A value's bits in the coop passes' 16-bit kind, and back.
uint16_t toHalfBits(codegen::Elem kind, float f) {
  return kind == codegen::Elem::BF16 ? floatToBf16(f) : floatToHalf(f);
}
float fromHalfBits(codegen::Elem kind, uint16_t h) {
  return kind == codegen::Elem::BF16 ? bf16ToFloat(h) : halfToFloat(h);
}
float roundToHalf(codegen::Elem kind, float f) {
  return fromHalfBits(kind, toHalfBits(kind, f));
}

Run runDevice(const ops::AttentionShape& s, const std::vector<float>& q, const std::vector<float>& k,
              const std::vector<float>& v, const std::vector<float>& dO) {
  using namespace helios::test;
  const size_t nq = q.size(), nk = k.size(), rows = size_t(s.batch) * s.heads * s.Tq;
  // halfQkv: q, k, v uploaded in the 16-bit kind (the values must be representable for a bit-exact
  // comparison).
  const auto qkvInput = [&](const std::vector<float>& x, const char* what) {
    if (!s.halfQkv) return input(x, what);
    std::vector<uint16_t> h(x.size());
    std::transform(x.begin(), x.end(), h.begin(), [&](float f) { return toHalfBits(s.half, f); });
    return input(h, what);
  };
  auto dq_ = qkvInput(q, "q"), dk_ = qkvInput(k, "k"), dv_ = qkvInput(v, "v"), ddO = input(dO, "dO");
  auto o = output(nq, "o"), lse = output(rows, "lse"), gq = output(nq, "dQ"), gk = output(nk, "dK"),
       gv = output(nk, "dV"), delta = output(rows, "delta");
  const auto head = [](const vk::Buffer& b, size_t n) {
    vk::BufferRange r = b.range();
    r.size = n * 4;
    return r;
  };
  {
    ops::ImmediateExecutor e(ctx());
    ops::attentionForward(e, dq_.range(), dk_.range(), dv_.range(), head(o, nq), head(lse, rows), s);
    ops::attentionBackward(e, dq_.range(), dk_.range(), dv_.range(), head(o, nq), head(lse, rows),
                           ddO.range(), head(gq, nq), head(gk, nk), head(gv, nk), head(delta, rows), s);
    e.flush();
  }
  return {result(o, nq), result(lse, rows), result(gq, nq), result(gk, nk), result(gv, nk)};
}

// The fallback is f32 throughout: max-norm relative errors. The coop kernels round q, k, v, dO to f16 as
// they stage them (the inputs here already are f16 values, so the reference sees what the kernel reads) and
// round P and dS to f16 before their MulAdds (11-bit mantissa): relative Frobenius error <= 2e-3, the
// measure the issues set for f16-input paths, with the max-norm error bounded at 1e-2 as well. (A row of dS
// sums to zero, so dQ = dS K cancels large terms; where K is large, as in the rising-scores case, the
// f16 rounding of dS reaches 2.4e-3 of max |dQ| in the max norm.)
// `shapeInputs` may rework the random q and k (e.g. scores that rise along the keys).
void checkAgainstReference(
    const ops::AttentionShape& s,
    const std::function<void(std::vector<float>&, std::vector<float>&)>& shapeInputs = {},
    double coopGradTol = 2e-3) {
  const bool coop = s.kernel == ops::AttentionKernel::Coop;
  INFO((coop ? "coop: " : "fallback: ")
       << "B" << s.batch << " H" << s.heads << " Hkv" << s.kvHeads << " Tq" << s.Tq << " Tk" << s.Tk << " D"
       << s.headDim << (s.causal ? " causal" : " dense") << " seed " << test::testSeed());
  const size_t nq = size_t(s.batch) * s.heads * s.Tq * s.headDim,
               nk = size_t(s.batch) * s.kvHeads * s.Tk * s.headDim;
  auto q = test::randomFloats(nq, -2, 2), k = test::randomFloats(nk, -2, 2), v = test::randomFloats(nk),
       dO = test::randomFloats(nq);
  if (shapeInputs) shapeInputs(q, k);
  if (coop)
    for (auto* x : {&q, &k, &v, &dO})
      for (float& e : *x)
        e = roundToHalf(s.half, e);
  compareWithReference(s, runDevice(s, q, k, v, dO), reference(s, q, k, v, dO), coopGradTol);
}

// Outputs of the kernels against the float64 reference at the fallback's or the coop passes' tolerances
// (checkAgainstReference). bf16's 8-bit significand rounds P and dS 8 times as coarsely as f16's 11 bits:
// its tolerances are 8x.
void compareWithReference(const ops::AttentionShape& s, const Run& got, const Ref& ref, double coopGradTol) {
  const bool coop = s.kernel == ops::AttentionKernel::Coop;
  const double coarse = s.half == codegen::Elem::BF16 ? 8.0 : 1.0;
  const double tolO = coop ? 2e-3 * coarse : 2e-5, tolGrad = coop ? coopGradTol * coarse : 1e-4,
               tolLse = coop ? 1e-3 * coarse : 1e-4;
  if (coop) {
    CHECK(relFrobenius(got.o, ref.o) < tolO);
    CHECK(relFrobenius(got.dq, ref.dq) < tolGrad);
    CHECK(relFrobenius(got.dk, ref.dk) < tolGrad);
    CHECK(relFrobenius(got.dv, ref.dv) < tolGrad);
    for (const auto& [g, r] :
         {std::pair{&got.o, &ref.o}, {&got.dq, &ref.dq}, {&got.dk, &ref.dk}, {&got.dv, &ref.dv}})
      CHECK(relError(*g, *r) < 1e-2 * coarse);
  } else {
    CHECK(relError(got.o, ref.o) < tolO);
    CHECK(relError(got.dq, ref.dq) < tolGrad);
    CHECK(relError(got.dk, ref.dk) < tolGrad);
    CHECK(relError(got.dv, ref.dv) < tolGrad);
  }
  size_t lseBad = 0, nan = 0;
  for (size_t i = 0; i < ref.lse.size(); ++i)
    lseBad += std::isfinite(ref.lse[i])
                  ? std::abs(got.lse[i] - ref.lse[i]) > tolLse * std::max(1.0, std::abs(ref.lse[i]))
                  : !(std::isinf(got.lse[i]) && got.lse[i] < 0);
  for (const auto* out : {&got.o, &got.dq, &got.dk, &got.dv})
    for (float x : *out)
      nan += std::isnan(x);
  CHECK(lseBad == 0);
  CHECK(nan == 0);
}

// The model's layout: q, k and v heads read from the rows of a packed [B T, (H + 2 Hkv) D] projection (q
// columns, then k, then v), O and dO as [B T, H D], and dQ, dK, dV written into a packed gradient shaped like
// the projection. Tq == Tk. Unpacked into the head-major Run the reference compares.
Run runPacked(ops::AttentionShape s, const std::vector<float>& q, const std::vector<float>& k,
              const std::vector<float>& v, const std::vector<float>& dO) {
  using namespace helios::test;
  const uint32_t B = s.batch, H = s.heads, G = s.kvHeads, T = s.Tq, D = s.headDim, W = (H + 2 * G) * D,
                 C = H * D;
  s.qLayout = {W, D, T * W};
  s.kvLayout = {W, D, T * W};
  s.oLayout = {C, D, T * C};
  const size_t rows = size_t(B) * T, nlse = size_t(B) * H * T;
  // Element (b, head, t, d) of the packed rows, with `col` the head's first column.
  const auto packedAt = [&](uint32_t b, uint32_t t, uint32_t col, uint32_t d, uint32_t width) {
    return (size_t(b) * T + t) * width + col + d;
  };
  const auto headAt = [&](uint32_t b, uint32_t h, uint32_t heads, uint32_t t, uint32_t d) {
    return ((size_t(b) * heads + h) * T + t) * D + d;
  };
  // Visits every element of q (part 0), k (1) and v (2) with its packed and head-major indices.
  const auto eachQkv = [&](const std::function<void(int, size_t, size_t)>& fn) {
    for (uint32_t b = 0; b < B; ++b)
      for (uint32_t t = 0; t < T; ++t)
        for (uint32_t d = 0; d < D; ++d) {
          for (uint32_t h = 0; h < H; ++h)
            fn(0, packedAt(b, t, h * D, d, W), headAt(b, h, H, t, d));
          for (uint32_t g = 0; g < G; ++g) {
            fn(1, packedAt(b, t, (H + g) * D, d, W), headAt(b, g, G, t, d));
            fn(2, packedAt(b, t, (H + G + g) * D, d, W), headAt(b, g, G, t, d));
          }
        }
  };
  std::vector<float> qkv(rows * W), dOp(rows * C);
  const std::vector<float>* parts[3] = {&q, &k, &v};
  eachQkv([&](int part, size_t at, size_t head) { qkv[at] = (*parts[part])[head]; });
  for (uint32_t b = 0; b < B; ++b)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t t = 0; t < T; ++t)
        for (uint32_t d = 0; d < D; ++d)
          dOp[packedAt(b, t, h * D, d, C)] = dO[headAt(b, h, H, t, d)];
  std::vector<uint16_t> qkvHalf(qkv.size());
  std::transform(qkv.begin(), qkv.end(), qkvHalf.begin(), [&](float f) { return toHalfBits(s.half, f); });
  auto bqkv = s.halfQkv ? input(qkvHalf, "qkv") : input(qkv, "qkv"), bdO = input(dOp, "dO");
  const uint16_t poison = s.half == codegen::Elem::BF16 ? kPoisonBF16 : kPoisonF16;
  const auto out = [&](size_t n, const char* what) {
    return s.halfOut ? outputHalf(n, what, poison) : output(n, what);
  };
  auto o = out(rows * C, "o"), dqkv = out(rows * W, "dqkv"), lse = output(nlse, "lse"),
       delta = output(nlse, "delta");
  const auto part = [](const vk::Buffer& buf, size_t elems, size_t elemBytes, size_t from) {
    vk::BufferRange r = buf.range();
    r.offset += from * elemBytes;
    r.size = (elems - from) * elemBytes;
    return r;
  };
  const size_t inBytes = s.halfQkv ? 2 : 4, outBytes = s.halfOut ? 2 : 4;
  const auto in3 = [&](size_t col) { return part(bqkv, rows * W, inBytes, col); };
  const auto grad3 = [&](size_t col) { return part(dqkv, rows * W, outBytes, col); };
  {
    ops::ImmediateExecutor e(ctx());
    ops::attentionForward(e, in3(0), in3(C), in3(C + G * D), part(o, rows * C, outBytes, 0),
                          part(lse, nlse, 4, 0), s);
    ops::attentionBackward(e, in3(0), in3(C), in3(C + G * D), part(o, rows * C, outBytes, 0),
                           part(lse, nlse, 4, 0), bdO.range(), grad3(0), grad3(C), grad3(C + G * D),
                           part(delta, nlse, 4, 0), s);
    e.flush();
  }
  const auto floats = [&](const vk::Buffer& b, size_t n) {
    if (!s.halfOut) return result(b, n);
    const std::vector<uint16_t> h = resultHalf(b, n, poison);
    std::vector<float> f(n);
    std::transform(h.begin(), h.end(), f.begin(), [&](uint16_t x) { return fromHalfBits(s.half, x); });
    return f;
  };
  const std::vector<float> op = floats(o, rows * C), g = floats(dqkv, rows * W);
  Run r{std::vector<float>(q.size()), result(lse, nlse), std::vector<float>(q.size()),
        std::vector<float>(k.size()), std::vector<float>(v.size())};
  for (uint32_t b = 0; b < B; ++b)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t t = 0; t < T; ++t)
        for (uint32_t d = 0; d < D; ++d)
          r.o[headAt(b, h, H, t, d)] = op[packedAt(b, t, h * D, d, C)];
  std::vector<float>* grads[3] = {&r.dq, &r.dk, &r.dv};
  eachQkv([&](int which, size_t at, size_t head) { (*grads[which])[head] = g[at]; });
  return r;
}

// Every output of two runs bit for bit.
void checkSameBits(const Run& a, const Run& b) {
  CHECK(a.o == b.o);
  CHECK(a.lse == b.lse);
  CHECK(a.dq == b.dq);
  CHECK(a.dk == b.dk);
  CHECK(a.dv == b.dv);
}

struct Inputs {
  std::vector<float> q, k, v, dO;
};

// Random q, k (in [-2, 2]), v and dO for the shape, every value f16-representable (what the coop kernels
// read, so a float64 reference sees the same inputs).
Inputs halfValuedInputs(const ops::AttentionShape& s) {
  const size_t nq = size_t(s.batch) * s.heads * s.Tq * s.headDim,
               nk = size_t(s.batch) * s.kvHeads * s.Tk * s.headDim;
  Inputs in{test::randomFloats(nq, -2, 2), test::randomFloats(nk, -2, 2), test::randomFloats(nk),
            test::randomFloats(nq)};
  for (auto* x : {&in.q, &in.k, &in.v, &in.dO})
    for (float& e : *x)
      e = roundToHalf(s.half, e);
  return in;
}

// q made positive and key j (of T per head, D wide) scaled by 12 j / T: a row's scores climb along the keys,
// so its max moves past the forward's slack several times and O is rescaled mid-walk.
std::function<void(std::vector<float>&, std::vector<float>&)> risingScores(uint32_t T, uint32_t D) {
  return [T, D](std::vector<float>& q, std::vector<float>& k) {
    for (float& x : q)
      x = 0.5f + 0.25f * std::abs(x);
    for (size_t i = 0; i < k.size(); ++i)
      k[i] = (0.5f + 0.25f * std::abs(k[i])) * 12.0f * float((i / D) % T) / float(T);
  };
}

// f16 outputs (o, dQ, dK, dV) within the coop tolerances of the float64 reference.
// 16-bit outputs of kind `half`: each rounded once more (bf16: 8x f16's tolerances, as above).
void checkHalfOutputs(const Run& got, const Ref& ref, codegen::Elem half = codegen::Elem::F16) {
  const double coarse = half == codegen::Elem::BF16 ? 8.0 : 1.0;
  for (const auto& [g, r] :
       {std::pair{&got.o, &ref.o}, {&got.dq, &ref.dq}, {&got.dk, &ref.dk}, {&got.dv, &ref.dv}}) {
    CHECK(relFrobenius(*g, *r) < 2e-3 * coarse);
    CHECK(relError(*g, *r) < 1e-2 * coarse);
  }
}

ops::AttentionShape shape(uint32_t B, uint32_t H, uint32_t Hkv, uint32_t Tq, uint32_t Tk, uint32_t D,
                          bool causal, ops::AttentionKernel kernel = ops::AttentionKernel::Fallback,
                          bool halfQkv = false) {
  return {B, H, Hkv, Tq, Tk, D, causal, static_cast<float>(1.0 / std::sqrt(double(D))), kernel, halfQkv};
}

} // namespace

TEST_CASE("attention: every kernel of the sweep passes spirv-val", "[attention]") {
  codegen::KernelRegistry reg;
  codegen::registerAttention(reg);
  const auto ks = reg.find("attention.fused")->all();
  CHECK(ks.size() == 24);
  for (const auto& k : ks) {
    INFO(k.name);
    CHECK(spv::validate(k.spirv).ok);
  }
}

TEST_CASE("attention: forward and backward match float64, odd and aligned shapes", "[attention]") {
  const bool causal = GENERATE(false, true);
  // Odd lengths around the 64-row workgroups and 32-row tiles, head dims 4 / 36 / 64 / 128.
  const auto [T, D] = GENERATE(std::pair{1u, 4u}, std::pair{7u, 36u}, std::pair{33u, 64u},
                               std::pair{127u, 64u}, std::pair{64u, 128u}, std::pair{129u, 128u});
  checkAgainstReference(shape(2, 2, 2, T, T, D, causal));
}

TEST_CASE("attention: half the row per invocation (Intel's 4 vectors: 4 lanes at D = 64, 8 at D = 128)",
          "[attention]") {
  const bool causal = GENERATE(false, true);
  const auto [T, D] = GENERATE(std::pair{33u, 64u}, std::pair{129u, 128u}, std::pair{65u, 36u});
  auto s = shape(2, 2, 2, T, T, D, causal);
  s.rowVectors = 4;
  checkAgainstReference(s);
}

TEST_CASE("attention: grouped-query heads and the earlier effort's shapes", "[attention]") {
  const bool causal = GENERATE(false, true);
  checkAgainstReference(shape(1, 8, 2, 65, 65, 64, causal)); // 4 query heads per kv head
  checkAgainstReference(shape(2, 6, 3, 33, 33, 36, causal));
  checkAgainstReference(shape(1, 8, 8, 512, 512, 64, causal));
  checkAgainstReference(shape(2, 8, 8, 256, 256, 64, causal));
}

TEST_CASE("attention: Tq != Tk, and queries that see no key stay finite", "[attention]") {
  const bool causal = GENERATE(false, true);
  checkAgainstReference(shape(1, 2, 1, 7, 40, 64, causal));  // decoding-style: more keys than queries
  checkAgainstReference(shape(1, 2, 2, 40, 7, 64, causal));  // causal: queries 0..32 see nothing
  checkAgainstReference(shape(1, 1, 1, 513, 33, 4, causal)); // long query side, tiny head
}

TEST_CASE("attention: 20 runs give identical bits", "[attention]") {
  // The fallback everywhere, the coop passes where the device has them (the 20-run stability).
  const bool coop = GENERATE(false, true);
  const uint32_t D = GENERATE(64u, 128u);
  if (coop && !ops::attentionCoopAvailable(ctx().device(), D))
    SKIP("no f16 cooperative matrices the coop passes support here");
  const auto s =
      shape(1, 4, 2, 100, 100, D, true, coop ? ops::AttentionKernel::Coop : ops::AttentionKernel::Fallback);
  INFO((coop ? "coop" : "fallback") << " D" << D);
  const auto [q, k, v, dO] = halfValuedInputs(s);
  const Run a = runDevice(s, q, k, v, dO);
  for (int r = 1; r < 20; ++r)
    checkSameBits(runDevice(s, q, k, v, dO), a);
}

TEST_CASE("attention: bad arguments are named", "[attention]") {
  auto buf = ctx().buffer(1 << 16, "x");
  const auto r = buf.range();
  ops::ImmediateExecutor e(ctx());
  CHECK_THROWS_WITH(ops::attentionForward(e, r, r, r, r, r, shape(1, 3, 2, 4, 4, 64, false)),
                    ContainsSubstring("multiple of kvHeads"));
  CHECK_THROWS_WITH(ops::attentionForward(e, r, r, r, r, r, shape(1, 1, 1, 4, 4, 6, false)),
                    ContainsSubstring("headDim 6"));
  CHECK_THROWS_WITH(ops::attentionForward(e, r, r, r, r, r, shape(1, 8, 8, 64, 64, 64, false)),
                    ContainsSubstring("q"));
}

TEST_CASE("attention coop: every kernel of the sweep passes spirv-val", "[attention][coop]") {
  codegen::KernelRegistry reg;
  codegen::registerAttentionCoop(reg);
  const auto ks = reg.find("attention.coop")->all();
  // 3 passes x D 16, 64, 128 x dense/causal x (default, unpadded, 1 subgroup, no prefetch), + 32-key
  // forwards, + the NV2 row-ops passes with 4 and 8 subgroups at every tile that fits 48 KiB (96 of them),
  // + f16 q/k/v on the default KHR and row-ops passes (18 each), + the row-ops passes with f16 outputs on
  // f16 and f32 q/k/v (18 each), + the forward and dQ passes split 2 and 4 ways where they fit (30: not the
  // KHR dQ at D = 16 with 4 subgroups, whose merge rows outgrow its staged tiles), + the dK/dV passes
  // recomputing delta where they fit (12).
  // Then every other coop shape and subgroup size of the sweep (19 of them): 3 passes x 3 head dims x
  // dense/causal, and on causal a 32-key forward, f16 in and out, one subgroup, unpadded at D = 64; at 8
  // lanes (lavapipe's) the lowered passes too.
  // And on bf16 operands: 3 passes x 3 head dims x dense/causal on f32 and on bf16 q/k/v and outputs, and the
  // row-ops passes bf16 in and out (54, 18 of them row-ops), split (8) or recomputing delta (8) where they
  // fit; lowered and at the other shapes as above.
  size_t rowOps = 0, other = 0, splitH100 = 0, recomputeH100 = 0;
  for (const auto& k : ks) {
    INFO(k.name);
    CHECK(spv::validate(k.spirv).ok);
    const bool shaped =
        std::regex_search(k.name, std::regex("_c[0-9]+x[0-9]+x[0-9]+|_w[0-9]+(_low)?(_bf16)?$"));
    other += shaped;
    if (!shaped) CHECK(k.requiredSubgroupSize == 32);
    CHECK(k.localSize[0] % k.requiredSubgroupSize == 0);
    rowOps += k.name.find("_rowops") != std::string::npos;
    splitH100 += !shaped && std::regex_search(k.name, std::regex("_ks[24]"));
    recomputeH100 += !shaped && k.name.find("_rd") != std::string::npos;
  }
  CHECK(ks.size() - other == 286 + 70);
  CHECK(other >= 19 * 3 * 3 * 2);
  CHECK(rowOps == 184 + 18);
  CHECK(splitH100 == 30 + 8);
  CHECK(recomputeH100 == 12 + 8);
  // The row-ops passes need no scratch in their loops: 64-row tiles wherever four subgroups fit.
  CHECK(codegen::attentionCoopParams(codegen::AttentionPass::Forward, 128, true, 49152, true).rowOps);
  CHECK(codegen::attentionCoopParams(codegen::AttentionPass::QueryGrad, 64, true, 49152, true).tile == 64);
  CHECK(codegen::attentionCoopParams(codegen::AttentionPass::KeyValueGrad, 64, true, 49152, true).tile == 64);
  auto khr = codegen::attentionCoopParams(codegen::AttentionPass::Forward, 64, true), rowOpsFwd = khr;
  rowOpsFwd.rowOps = true;
  CHECK(rowOpsFwd.sharedBytes() < khr.sharedBytes());
  CHECK_THROWS_WITH(codegen::attentionCoopParams(codegen::AttentionPass::Forward, 24, false),
                    ContainsSubstring("multiple of 16"));
  // The KHR forward takes 64-key tiles where four subgroups fit with padded rows (D = 16 and 64: the tiles
  // reuse the owned rows' staging), 32 at D = 128; every pass fits 48 KiB with padded staging rows.
  CHECK(codegen::attentionCoopParams(codegen::AttentionPass::Forward, 16, true).tile == 64);
  CHECK(codegen::attentionCoopParams(codegen::AttentionPass::Forward, 64, true).tile == 64);
  CHECK(codegen::attentionCoopParams(codegen::AttentionPass::Forward, 128, true).tile == 32);
  CHECK(codegen::attentionCoopParams(codegen::AttentionPass::QueryGrad, 64, true).tile == 32);
  for (auto pass : {codegen::AttentionPass::Forward, codegen::AttentionPass::QueryGrad,
                    codegen::AttentionPass::KeyValueGrad})
    for (bool nv2 : {false, true}) {
      const auto p = codegen::attentionCoopParams(pass, 128, true, 49152, nv2);
      CHECK(p.sharedBytes() <= 49152);
      CHECK(p.pad == 1);
      // Row ops at D = 128: 128 owned rows (8 subgroups; the causal forward 64) with 64-key tiles (they
      // reuse the owned rows' staging); the forward without prefetch.
      if (nv2) {
        CHECK(p.tile == 64);
        CHECK(p.subgroups == (pass == codegen::AttentionPass::Forward ? 4u : 8u));
        CHECK(p.prefetch == (pass != codegen::AttentionPass::Forward));
      }
    }
}

TEST_CASE("attention coop: lowered passes take 16-row tiles on 2 subgroups, where they fit",
          "[attention][coop]") {
  for (const auto& [cm, cn, ck] : codegen::coopSweepShapes())
    for (codegen::AttentionPass pass : {codegen::AttentionPass::Forward, codegen::AttentionPass::QueryGrad,
                                        codegen::AttentionPass::KeyValueGrad})
      for (uint32_t d : {16u, 64u, 128u}) {
        INFO(cm << "x" << cn << "x" << ck << " pass " << int(pass) << " D" << d);
        const auto p = codegen::attentionCoopParams(pass, d, true, 32768, true, {cm, cn, ck, 8, true});
        CHECK(p.lowered);
        CHECK_FALSE(p.rowOps);
        CHECK(p.tile == 16);
        CHECK(p.subgroups == 2);
        CHECK(p.sharedBytes() <= 32768);
        CHECK(spv::validate(codegen::generateAttentionCoop(p).spirv).ok);
        // A device with little shared memory gets one subgroup; the GPU tilings never take 16 rows.
        CHECK(codegen::attentionCoopParams(pass, d, true, p.sharedBytes() - 1, false, {cm, cn, ck, 8, true})
                  .subgroups == 1);
        CHECK(codegen::attentionCoopParams(pass, d, true, 49152, false, {cm, cn, ck, 8}).tile >= 32);
      }
  codegen::AttentionCoopParams gpu = codegen::attentionCoopParams(codegen::AttentionPass::Forward, 64, true);
  gpu.tile = 16;
  CHECK_THROWS_WITH(gpu.validate(), ContainsSubstring("16 lowered"));
}

TEST_CASE("attention coop: every coop shape and subgroup size splits its rows over the lanes",
          "[attention][coop]") {
  using codegen::AttentionPass;
  for (const auto& [cm, cn, ck] : codegen::coopSweepShapes())
    for (const uint32_t sg : codegen::coopSweepSubgroupSizes()) {
      INFO(cm << "x" << cn << "x" << ck << " on " << sg << " lanes");
      CHECK(codegen::attentionCoopSupports({cm, cn, ck, sg}));
      for (AttentionPass pass :
           {AttentionPass::Forward, AttentionPass::QueryGrad, AttentionPass::KeyValueGrad}) {
        const auto p = codegen::attentionCoopParams(pass, 128, true, 49152, true, {cm, cn, ck, sg});
        CHECK(p.rows() == cm * p.subgroups);
        CHECK(p.lanesPerRow() * cm == std::max(cm, sg)); // every lane has work: rows x lanes per row
        CHECK(p.rowsPerLane() * sg == std::max(cm, sg));
        CHECK(p.rowOps == (cm == 16 && cn == 16 && ck == 16 && sg == 32)); // the NV2 variant: H100 only
        CHECK(p.sharedBytes() <= 49152);
        CHECK(codegen::generateAttentionCoop(p).requiredSubgroupSize == sg);
      }
    }
  // Two lanes per row on the H100's shape; 8 lanes per row at 8 rows on 64 lanes; 2 rows per lane at 16 rows
  // on 8 lanes.
  codegen::AttentionCoopParams p;
  CHECK(p.lanesPerRow() == 2);
  p.coopM = 8;
  p.subgroupSize = 64;
  CHECK(p.lanesPerRow() == 8);
  p.coopM = 16;
  p.subgroupSize = 8;
  CHECK(p.rowsPerLane() == 2);
  CHECK(p.lanesPerRow() == 1);
  CHECK_THAT(p.name(), ContainsSubstring("_w8"));
  p.coopN = 8;
  CHECK_THAT(p.cacheKey(), ContainsSubstring(":c16x8x16"));
  p.rowOps = true;
  CHECK_THROWS_WITH(p.validate(), ContainsSubstring("row-ops variant is for 16x16x16"));
  p.rowOps = false;
  p.coopK = 32;
  CHECK_THROWS_WITH(p.validate(), ContainsSubstring("sides must be 8 or 16"));
  CHECK_FALSE(codegen::attentionCoopSupports({16, 16, 16, 128}));
  // 4 lanes (lavapipe at 128-bit vectors): 4 or 2 rows per lane; every pass generates and validates.
  for (const auto& [cm, cn, ck] : codegen::coopSweepShapes())
    for (AttentionPass pass :
         {AttentionPass::Forward, AttentionPass::QueryGrad, AttentionPass::KeyValueGrad}) {
      const auto q = codegen::attentionCoopParams(pass, 64, true, 49152, false, {cm, cn, ck, 4});
      CHECK(q.rowsPerLane() == cm / 4);
      CHECK(spv::validate(codegen::generateAttentionCoop(q).spirv).ok);
    }
}

TEST_CASE("attention coop: asking for it where it cannot run is an error, Auto falls back", "[attention]") {
  if (ops::attentionCoopAvailable(ctx().device(), 64)) SKIP("this device has cooperative matrices");
  auto q = test::randomFloats(64 * 64);
  auto bq = helios::test::input(q, "q"), o = helios::test::output(q.size(), "o"),
       lse = helios::test::output(64, "lse");
  ops::AttentionShape s = shape(1, 1, 1, 64, 64, 64, true, ops::AttentionKernel::Coop);
  ops::ImmediateExecutor e(ctx());
  CHECK_THROWS_WITH(ops::attentionForward(e, bq.range(), bq.range(), bq.range(), o.range(), lse.range(), s),
                    ContainsSubstring("cooperative matrices"));
  s.kernel = ops::AttentionKernel::Auto; // runs the fallback
  ops::attentionForward(e, bq.range(), bq.range(), bq.range(), o.range(), lse.range(), s);
  e.flush();
  CHECK(std::isfinite(helios::test::result(lse, 64)[63]));
  // f16 q/k/v are for the coop kernels only: no silent fallback reading halves as floats.
  s.halfQkv = true;
  CHECK_THROWS_WITH(ops::attentionForward(e, bq.range(), bq.range(), bq.range(), o.range(), lse.range(), s),
                    ContainsSubstring("16-bit q/k/v"));
  s.kernel = ops::AttentionKernel::Fallback;
  CHECK_THROWS_WITH(ops::attentionForward(e, bq.range(), bq.range(), bq.range(), o.range(), lse.range(), s),
                    ContainsSubstring("halfQkv is coop only"));
}

TEST_CASE("attention: layouts and f16 outputs are coop only, strides are checked", "[attention]") {
  auto buf = ctx().buffer(1 << 20, "x");
  const auto r = buf.range();
  ops::ImmediateExecutor e(ctx());
  ops::AttentionShape s = shape(1, 2, 2, 8, 8, 64, true);
  s.oLayout = {128, 64, 1024};
  CHECK_THROWS_WITH(ops::attentionForward(e, r, r, r, r, r, s), ContainsSubstring("coop only"));
  s.oLayout = {};
  s.halfOut = true;
  CHECK_THROWS_WITH(ops::attentionForward(e, r, r, r, r, r, s), ContainsSubstring("coop only"));
  s.halfOut = false;
  s.kernel = ops::AttentionKernel::Auto;
  s.qLayout = {100, 64, 1000};
  CHECK_THROWS_WITH(ops::attentionForward(e, r, r, r, r, r, s), ContainsSubstring("multiples of 8"));
  // A layout reaching past its range (1 MiB): 8 rows 256 KiB apart.
  s.qLayout = {65536, 64, 65536 * 8};
  CHECK_THROWS_WITH(ops::attentionForward(e, r, r, r, r, r, s), ContainsSubstring("q"));
}

TEST_CASE("attention coop: heads in packed projection rows, outputs in f16 (GPU)", "[attention][coop]") {
  if (!ops::attentionCoopAvailable(ctx().device(), 64))
    SKIP("no f16 cooperative matrices the coop passes support here");
  const bool causal = GENERATE(false, true);
  const auto [T, D] =
      GENERATE(std::pair{7u, 64u}, std::pair{127u, 128u}, std::pair{256u, 64u}, std::pair{513u, 128u});
  ops::AttentionShape s = shape(2, 4, 2, T, T, D, causal, ops::AttentionKernel::Coop); // grouped-query
  INFO("T" << T << " D" << D << (causal ? " causal" : " dense") << " seed " << test::testSeed());
  const auto [q, k, v, dO] = halfValuedInputs(s);
  // f32 in and out: the same kernel maths on other addresses, so the same bits as the contiguous layout.
  const Run contiguous = runDevice(s, q, k, v, dO);
  const Run packed = runPacked(s, q, k, v, dO);
  checkSameBits(packed, contiguous);
  // f16 in and out (the model's path): within the coop tolerances of float64; lse is unaffected.
  s.halfQkv = true;
  s.halfOut = true;
  const Run half = runPacked(s, q, k, v, dO);
  const Ref ref = reference(s, q, k, v, dO);
  CHECK(half.lse == contiguous.lse);
  checkHalfOutputs(half, ref);
}

TEST_CASE("attention coop: f16 q/k/v give the bits of f32 q/k/v holding the same values (GPU)",
          "[attention][coop]") {
  if (!ops::attentionCoopAvailable(ctx().device(), 64))
    SKIP("no f16 cooperative matrices the coop passes support here");
  const bool causal = GENERATE(false, true);
  const auto [T, D] =
      GENERATE(std::pair{7u, 64u}, std::pair{127u, 128u}, std::pair{513u, 64u}, std::pair{256u, 128u});
  ops::AttentionShape s = shape(2, 4, 2, T, T, D, causal, ops::AttentionKernel::Coop); // grouped-query
  INFO("T" << T << " D" << D << (causal ? " causal" : " dense") << " seed " << test::testSeed());
  const auto [q, k, v, dO] = halfValuedInputs(s);
  const Run f32 = runDevice(s, q, k, v, dO);
  s.halfQkv = true;
  const Run f16 = runDevice(s, q, k, v, dO);
  checkSameBits(f16, f32);
  // And against float64 directly, on the row-ops passes' defaults.
  checkAgainstReference(shape(1, 8, 2, 65, 65, D, causal, ops::AttentionKernel::Coop, true));
}

TEST_CASE("attention coop: forward and backward match float64 on f16 inputs (GPU with cooperative matrices)",
          "[attention][coop]") {
  if (!ops::attentionCoopAvailable(ctx().device(), 64))
    SKIP("no f16 cooperative matrices the coop passes support here");
  const auto coop = ops::AttentionKernel::Coop;
  const bool causal = GENERATE(false, true);
  const auto [T, D] = GENERATE(std::pair{1u, 16u}, std::pair{7u, 64u}, std::pair{33u, 64u},
                               std::pair{127u, 128u}, std::pair{513u, 64u}, std::pair{64u, 128u});
  checkAgainstReference(shape(2, 2, 2, T, T, D, causal, coop));
  checkAgainstReference(shape(1, 8, 2, 65, 65, 64, causal, coop));   // grouped-query heads
  checkAgainstReference(shape(1, 2, 1, 7, 40, 64, causal, coop));    // more keys than queries
  checkAgainstReference(shape(1, 2, 2, 40, 7, 64, causal, coop));    // causal: queries that see no key
  checkAgainstReference(shape(1, 8, 8, 512, 512, 64, causal, coop)); // the earlier effort's shapes
  checkAgainstReference(shape(2, 8, 8, 256, 256, 64, causal, coop));
}

TEST_CASE("attention coop: scores that keep rising along the keys (O rescaled on the way)",
          "[attention][coop]") {
  if (!ops::attentionCoopAvailable(ctx().device(), 64))
    SKIP("no f16 cooperative matrices the coop passes support here");
  const bool causal = GENERATE(false, true);
  const uint32_t T = 200, D = 64;
  // q positive, key j scaled by 12 j / T: a row's scores climb ~7 per 32-key tile, so its max moves by more
  // than the kernel's slack several times and O is rescaled mid-walk. The forward is held to 2e-3; the
  // gradients to 5e-3: with keys this large, dQ = dS K cancels big terms (rows of dS sum to zero) and the
  // f16 rounding of dS shows (2.2e-3 Frobenius measured on the H100). Splitting dS into f16 hi + lo parts
  // would remove it at the cost of a second MulAdd.
  checkAgainstReference(shape(1, 2, 2, T, T, D, causal, ops::AttentionKernel::Coop), risingScores(T, D),
                        5e-3);
}

TEST_CASE("attention coop: long sequences, and 3 runs give identical bits (GPU with cooperative matrices)",
          "[attention][coop]") {
  if (!ops::attentionCoopAvailable(ctx().device(), 64))
    SKIP("no f16 cooperative matrices the coop passes support here");
  const bool causal = GENERATE(false, true);
  checkAgainstReference(shape(1, 2, 2, 2048, 2048, 64, causal, ops::AttentionKernel::Coop));
  const auto s = shape(1, 4, 2, 300, 300, 128, causal, ops::AttentionKernel::Coop);
  const size_t nq = size_t(4) * 300 * 128, nk = size_t(2) * 300 * 128;
  const auto q = test::randomFloats(nq, -2, 2), k = test::randomFloats(nk, -2, 2), v = test::randomFloats(nk),
             dO = test::randomFloats(nq);
  const Run first = runDevice(s, q, k, v, dO);
  for (int r = 0; r < 2; ++r) {
    const Run again = runDevice(s, q, k, v, dO);
    checkSameBits(again, first);
  }
}

// The coop passes lowered to ordinary SPIR-V (HELIOS_COOP_EMULATE, the coop-emulated/test_attention/* ctest
// entries): the generators the GPU runs, unchanged, at each emulated shape on lavapipe's lanes. Head dims 16
// and 32 keep llvmpipe's compile of each pass to seconds; the tolerances are the GPU cases' (f16 P and dS).
// llvmpipe's compile is the cost of these entries (each distinct pass compiles once per run, cached by Mesa
// for the processes after it), so every emulated shape runs the plain passes below and each variant (two
// blocks across D, packed f16 rows, key splits) runs at two of the shapes (tests/ops/CMakeLists.txt).
namespace {

// The unsplit passes, which larger grids run (the policy would split these small ones; the splits case runs
// them).
struct Unsplit {
  ScopedTuning forced{ctx().device(),
                      [](tuning::Tuning& t) { t.attention.keySplits.set(1u, tuning::Source::Env); }};
};

} // namespace

TEST_CASE("attention coop lowered: forward and backward against float64, causal and dense, grouped heads, "
          "rescaled O, repeatable",
          "[attention_lowered]") {
  if (!ops::attentionCoopAvailable(ctx().device(), 16))
    SKIP("no coop attention here (the coop-emulated entries run this case lowered)");
  const Unsplit unsplit;
  const auto coop = ops::AttentionKernel::Coop;
  const bool causal = GENERATE(false, true);
  checkAgainstReference(shape(1, 4, 2, 37, 37, 16, causal, coop)); // grouped-query heads, odd length
  checkAgainstReference(shape(2, 2, 2, 32, 32, 16, causal, coop)); // whole tiles
  checkAgainstReference(shape(1, 2, 1, 7, 40, 16, causal, coop));  // more keys than queries
  checkAgainstReference(shape(1, 2, 2, 40, 7, 16, causal, coop));  // causal: queries that see no key
  // Scores that climb along the keys (by about 27 over the row, so a row's max moves past the kernel's slack
  // three times): O is rescaled mid-walk, as in the GPU case above.
  checkAgainstReference(shape(1, 2, 2, 96, 96, 16, causal, coop), risingScores(96, 16), 5e-3);
  // Two runs give the same bits.
  const auto again = shape(1, 4, 2, 37, 37, 16, causal, coop);
  const auto in = halfValuedInputs(again);
  checkSameBits(runDevice(again, in.q, in.k, in.v, in.dO), runDevice(again, in.q, in.k, in.v, in.dO));
}

TEST_CASE("attention coop lowered: head dim 32, two blocks across D", "[attention_lowered_d32]") {
  if (!ops::attentionCoopAvailable(ctx().device(), 16))
    SKIP("no coop attention here (the coop-emulated entries run this case lowered)");
  const Unsplit unsplit;
  checkAgainstReference(shape(1, 2, 2, 23, 23, 32, false, ops::AttentionKernel::Coop));
}

TEST_CASE("attention coop lowered: the model's layout, packed projection rows in and out, f16 both ways",
          "[attention_lowered_packed]") {
  if (!ops::attentionCoopAvailable(ctx().device(), 16))
    SKIP("no coop attention here (the coop-emulated entries run this case lowered)");
  const Unsplit unsplit;
  ops::AttentionShape s = shape(2, 4, 2, 21, 21, 16, GENERATE(false, true), ops::AttentionKernel::Coop);
  s.halfQkv = true;
  s.halfOut = true;
  const auto [q, k, v, dO] = halfValuedInputs(s);
  const Run half = runPacked(s, q, k, v, dO);
  const Ref ref = reference(s, q, k, v, dO);
  checkHalfOutputs(half, ref);
}

// bf16 operands (AttentionShape::half = BF16, bf16 x bf16 -> f32 coop matrices; lowered in CI, where the
// lowering holds bf16 as bits): f32 q/k/v rounded to bf16 as they are staged, and the model's packed rows in
// and out as bf16; P and dS rounded to bf16, so 8x the f16 tolerances. Lean for llvmpipe: head dim 16, one
// odd grouped-query shape and one with more keys than queries, and the packed layout.
TEST_CASE("attention coop lowered: bf16 operands, forward and backward against float64, f32 and packed bf16 "
          "rows",
          "[attention_lowered][bf16]") {
  if (!ops::attentionCoopAvailable(ctx().device(), 16, codegen::Elem::BF16))
    SKIP("no bf16 coop attention here (the coop-emulated entries run this case lowered)");
  const ScopedTuning unsplit(ctx().device(),
                             [](tuning::Tuning& t) { t.attention.keySplits.set(1u, tuning::Source::Env); });
  const auto coop = ops::AttentionKernel::Coop;
  const bool causal = GENERATE(false, true);
  const auto bf16 = [](ops::AttentionShape s) {
    s.half = codegen::Elem::BF16;
    return s;
  };
  checkAgainstReference(bf16(shape(1, 4, 2, 37, 37, 16, causal, coop))); // grouped-query heads, odd length
  checkAgainstReference(bf16(shape(1, 2, 1, 7, 40, 16, causal, coop)));  // more keys than queries
  ops::AttentionShape s = bf16(shape(2, 4, 2, 21, 21, 16, causal, coop));
  s.halfQkv = true;
  s.halfOut = true;
  const auto [q, k, v, dO] = halfValuedInputs(s);
  const Run half = runPacked(s, q, k, v, dO);
  checkHalfOutputs(half, reference(s, q, k, v, dO), codegen::Elem::BF16);
  CHECK(ops::attentionCoopFor(ctx().device(), codegen::AttentionPass::Forward, s).operands ==
        codegen::Elem::BF16);
}

// One causal forward and backward lowered, for the validation layer's coop-emulated entry
// (tests/validation): small enough to run under the layer, every pass's kernel once.
TEST_CASE("attention coop lowered: one causal forward and backward against float64",
          "[.attention_lowered_validation]") {
  if (!ops::attentionCoopAvailable(ctx().device(), 16))
    SKIP("no coop attention here (set HELIOS_COOP_EMULATE)");
  const Unsplit unsplit; // the plain passes' kernels: compiled once per run (Mesa's cache) for both entries
  checkAgainstReference(shape(1, 2, 2, 37, 37, 16, true, ops::AttentionKernel::Coop));
}

// The key walk of the forward and dQ passes split across groups of subgroups (AttentionCoopParams::
// keySplits), forced through the device's record: the groups' partial maxima, sums, O and dQ merge at the
// end. Odd lengths leave a group tiles past the last key, causal blocks leave some all masked, and rising
// scores move each group's max on its own. With the 2-way split the dK/dV pass recomputes delta from the
// staged dO and O tiles (DkvDelta::Recompute), with the 4-way one it reads the dQ pass's. Lowered at head dim
// 16 (the coop-emulated entries); on a GPU also at the sizes it would split.
TEST_CASE("attention coop: the key walk split 2 and 4 ways, delta read or recomputed, matches float64",
          "[attention_lowered_splits]") {
  if (!ops::attentionCoopAvailable(ctx().device(), 16))
    SKIP("no coop attention here (the coop-emulated entries run this case lowered)");
  const vk::Device& device = ctx().device();
  const uint32_t splits = GENERATE(2u, 4u);
  const bool causal = GENERATE(false, true);
  const auto delta = splits == 2 ? tuning::DeltaMode::Recompute : tuning::DeltaMode::Read;
  const ScopedTuning forced(device, [&](tuning::Tuning& t) {
    t.attention.keySplits.set(splits, tuning::Source::Env);
    t.attention.delta.set(delta, tuning::Source::Env);
  });
  const auto coop = ops::AttentionKernel::Coop;
  const bool lowered = ops::coopDeviceInfo(device).lowered;
  const auto check = [&](const ops::AttentionShape& s, const auto&... rest) {
    for (const auto pass : {codegen::AttentionPass::Forward, codegen::AttentionPass::QueryGrad}) {
      const auto p = ops::attentionCoopFor(device, pass, s);
      INFO(p.name());
      // A split that does not fit (shared memory, 16 subgroups) is left out: on the GPU, 4 ways, and 2 at
      // head dim 128.
      if (lowered || (splits == 2 && s.headDim <= 64)) CHECK(p.keySplits == splits);
    }
    const auto kv = ops::attentionCoopFor(device, codegen::AttentionPass::KeyValueGrad, s);
    INFO(kv.name());
    if (s.headDim <= 64)
      CHECK((kv.delta == codegen::DkvDelta::Recompute) == (delta == tuning::DeltaMode::Recompute));
    checkAgainstReference(s, rest...);
  };
  check(shape(1, 4, 2, 37, 37, 16, causal, coop)); // grouped-query heads, odd length
  check(shape(1, 2, 1, 7, 40, 16, causal, coop));  // more keys than queries
  check(shape(1, 2, 2, 40, 7, 16, causal, coop));  // causal: queries that see no key
  const uint32_t D = lowered ? 16 : 64;
  check(shape(1, 2, 2, 96, 96, D, causal, coop), risingScores(96, D), 5e-3);
  if (lowered) return;
  if (splits == 2) {
    check(shape(1, 8, 8, 512, 512, 64, causal, coop));
    check(shape(2, 8, 8, 256, 256, 64, causal, coop));
  }
  check(shape(1, 2, 2, 300, 300, 128, causal, coop));
}

TEST_CASE("attention coop: key splits where the grid leaves a wave idle, delta recomputed unless read",
          "[attention]") {
  CHECK(ops::attentionKeySplits(std::nullopt, 64, 120, 512, 64) == 2); // B1 H8 S512 on an H100: 64 blocks
  CHECK(ops::attentionKeySplits(std::nullopt, 119, 120, 128, 64) == 2);
  CHECK(ops::attentionKeySplits(std::nullopt, 120, 120, 512, 64) == 1); // a full wave
  CHECK(ops::attentionKeySplits(std::nullopt, 768, 120, 1024, 64) == 1);
  CHECK(ops::attentionKeySplits(std::nullopt, 8, 120, 127, 64) == 1); // one tile and a bit: nothing to split
  CHECK(ops::attentionKeySplits(4u, 768, 120, 1024, 64) == 4);        // forced
  CHECK(ops::attentionKeySplits(1u, 8, 120, 1024, 64) == 1);
  using L = ops::KeySplitLayout;
  const auto fwd = codegen::AttentionPass::Forward, dq = codegen::AttentionPass::QueryGrad;
  CHECK(ops::keySplitLayouts(fwd, 2, false, 4, 64) == std::vector<L>{{4, 2, 32}, {2, 4, 64}, {2, 4, 32}});
  CHECK(ops::keySplitLayouts(fwd, 2, true, 4, 64) == std::vector<L>{{2, 4, 64}, {2, 4, 32}});
  CHECK(ops::keySplitLayouts(fwd, 2, false, 1, 32) == std::vector<L>{{2, 1, 32}});
  CHECK(ops::keySplitLayouts(fwd, 2, false, 2, 16) == std::vector<L>{{4, 1, 16}, {2, 2, 16}}); // lowered
  CHECK(ops::keySplitLayouts(dq, 2, false, 4, 64) == std::vector<L>{{2, 4, 64}, {2, 4, 32}});
  CHECK(ops::attentionRecomputeDelta(tuning::DeltaMode::Policy));
  CHECK(ops::attentionRecomputeDelta(tuning::DeltaMode::Recompute));
  CHECK_FALSE(ops::attentionRecomputeDelta(tuning::DeltaMode::Read));
}

// ---------------------------------------------------------------------------------------------------------
// Document masks (sequence packing): query i sees keys i - pos[i] .. i of its own document.
// ---------------------------------------------------------------------------------------------------------
namespace {

// Positions inside packed documents for B sequences of T tokens: documents of random lengths in [1, maxLen]
// (the last one cut at the sequence's end), so that they start anywhere in a tile and cross tile edges.
std::vector<int32_t> packedPositions(uint32_t B, uint32_t T, uint32_t maxLen) {
  std::uniform_int_distribution<uint32_t> length(1, maxLen);
  std::vector<int32_t> pos(size_t(B) * T);
  for (uint32_t b = 0; b < B; ++b)
    for (uint32_t t = 0, left = 0, at = 0; t < T; ++t, ++at, --left) {
      if (left == 0) {
        left = length(test::rng());
        at = 0;
      }
      pos[size_t(b) * T + t] = int32_t(at);
    }
  return pos;
}

// The kernels with the document mask of `positions` (s.documentPositions set here) against the float64
// reference that masks the same way, on inputs the coop passes read exactly (f16 values); `packedRows`: in
// the model's packed projection layout (runPacked).
void checkDocuments(ops::AttentionShape s, const std::vector<int32_t>& positions, bool packedRows = false) {
  INFO((s.kernel == ops::AttentionKernel::Coop ? "coop: " : "fallback: ")
       << "B" << s.batch << " H" << s.heads << " Hkv" << s.kvHeads << " T" << s.Tq << " D" << s.headDim
       << " documents, seed " << test::testSeed());
  const vk::Buffer pos = test::input(positions, "positions");
  s.documentPositions = pos.range();
  const auto [q, k, v, dO] = halfValuedInputs(s);
  const Run got = packedRows ? runPacked(s, q, k, v, dO) : runDevice(s, q, k, v, dO);
  compareWithReference(s, got, reference(s, q, k, v, dO, positions), 2e-3);
}

// Positions 0 .. T-1 (one document per sequence): the bits of the plain causal mask.
void checkOneDocumentIsCausal(ops::AttentionShape s) {
  std::vector<int32_t> positions(size_t(s.batch) * s.Tq);
  for (size_t i = 0; i < positions.size(); ++i)
    positions[i] = int32_t(i % s.Tq);
  const auto [q, k, v, dO] = halfValuedInputs(s);
  const Run causal = runDevice(s, q, k, v, dO);
  const vk::Buffer pos = test::input(positions, "positions");
  s.documentPositions = pos.range();
  checkSameBits(runDevice(s, q, k, v, dO), causal);
}

} // namespace

TEST_CASE("attention documents: the fallback keeps each query in its document, forward and backward",
          "[attention][documents]") {
  // Documents of up to 3, 40 and 200 tokens over odd and aligned lengths: starts inside tiles, documents
  // across the 32-row tiles and 64-row workgroups, and whole tiles before a row's start.
  const uint32_t maxLen = GENERATE(3u, 40u, 200u);
  const auto [T, D] =
      GENERATE(std::pair{1u, 4u}, std::pair{37u, 36u}, std::pair{129u, 64u}, std::pair{200u, 128u});
  checkDocuments(shape(2, 2, 2, T, T, D, true), packedPositions(2, T, maxLen));
  checkDocuments(shape(1, 8, 2, T, T, D, true), packedPositions(1, T, maxLen)); // grouped-query heads
  auto half = shape(2, 2, 2, T, T, D, true); // half the row per invocation (Intel's)
  half.rowVectors = 4;
  checkDocuments(half, packedPositions(2, T, maxLen));
}

TEST_CASE("attention documents: one document per sequence gives the causal mask's bits",
          "[attention][documents]") {
  checkOneDocumentIsCausal(shape(2, 4, 2, 100, 100, 64, true));
  if (ops::attentionCoopAvailable(ctx().device(), 16))
    checkOneDocumentIsCausal(shape(1, 2, 2, 37, 37, 16, true, ops::AttentionKernel::Coop));
}

TEST_CASE("attention documents: bad arguments are named", "[attention][documents]") {
  auto buf = ctx().buffer(1 << 16, "x");
  const auto r = buf.range();
  ops::ImmediateExecutor e(ctx());
  ops::AttentionShape s = shape(1, 2, 2, 8, 8, 64, false);
  s.documentPositions = r;
  CHECK_THROWS_WITH(ops::attentionForward(e, r, r, r, r, r, s), ContainsSubstring("causal self-attention"));
  s.causal = true;
  s.Tk = 9;
  CHECK_THROWS_WITH(ops::attentionForward(e, r, r, r, r, r, s), ContainsSubstring("Tq 8, Tk 9"));
  s.Tk = 8;
  s.documentPositions = vk::subrange(r, 0, 28); // 7 of 8 positions
  CHECK_THROWS_WITH(ops::attentionForward(e, r, r, r, r, r, s), ContainsSubstring("documentPositions"));
  auto coop = codegen::attentionCoopParams(codegen::AttentionPass::Forward, 64, false);
  coop.documents = codegen::DocumentMask::Packed;
  CHECK_THROWS_WITH(coop.validate(), ContainsSubstring("document masks are causal"));
  CHECK_THROWS_WITH(codegen::attentionParams(codegen::AttentionPass::Forward, 64, false, 49152, 8,
                                             codegen::DocumentMask::Packed),
                    ContainsSubstring("document masks are causal"));
}

TEST_CASE("attention documents: every kernel of the sweeps passes spirv-val", "[attention][documents]") {
  codegen::KernelRegistry reg;
  codegen::registerAttention(reg);
  codegen::registerAttentionCoop(reg);
  for (const char* family : {"attention.fused.documents", "attention.coop.documents"}) {
    const auto ks = reg.find(family)->all();
    CHECK(ks.size() >= 12);
    for (const auto& k : ks) {
      INFO(k.name);
      CHECK_THAT(k.name, ContainsSubstring("_docs"));
      CHECK(spv::validate(k.spirv).ok);
    }
  }
}

TEST_CASE("attention coop documents: forward and backward against float64, packed rows, key splits (GPU)",
          "[attention][coop][documents]") {
  if (!ops::attentionCoopAvailable(ctx().device(), 64))
    SKIP("no f16 cooperative matrices the coop passes support here");
  const uint32_t maxLen = GENERATE(5u, 70u, 400u);
  const auto [T, D] = GENERATE(std::pair{7u, 64u}, std::pair{127u, 128u}, std::pair{513u, 64u});
  const auto coop = ops::AttentionKernel::Coop;
  checkDocuments(shape(2, 4, 2, T, T, D, true, coop), packedPositions(2, T, maxLen));
  // The model's layout: packed projection rows, f16 in and out.
  auto packed = shape(2, 4, 2, T, T, D, true, coop, true);
  packed.halfOut = true;
  checkDocuments(packed, packedPositions(2, T, maxLen), true);
  const ScopedTuning split(ctx().device(),
                           [](tuning::Tuning& t) { t.attention.keySplits.set(2u, tuning::Source::Env); });
  checkDocuments(shape(1, 2, 2, T, T, D, true, coop), packedPositions(1, T, maxLen));
}

// Lowered at head dim 16 (the coop-emulated entries): documents within and across the 16-row tiles, the key
// walk whole and split; and on bf16 operands, the model's packed bf16 rows in and out (the mask and the
// element type are two axes of the same kernels).
TEST_CASE("attention coop lowered: document masks against float64, whole and split key walks, bf16",
          "[attention_lowered]") {
  if (!ops::attentionCoopAvailable(ctx().device(), 16))
    SKIP("no coop attention here (the coop-emulated entries run this case lowered)");
  const uint32_t splits = GENERATE(1u, 2u);
  const ScopedTuning forced(
      ctx().device(), [&](tuning::Tuning& t) { t.attention.keySplits.set(splits, tuning::Source::Env); });
  const auto coop = ops::AttentionKernel::Coop;
  checkDocuments(shape(1, 4, 2, 53, 53, 16, true, coop), packedPositions(1, 53, 20));
  checkDocuments(shape(2, 2, 2, 40, 40, 16, true, coop), packedPositions(2, 40, 5));
  if (!ops::attentionCoopAvailable(ctx().device(), 16, codegen::Elem::BF16)) return;
  ops::AttentionShape bf16 = shape(1, 4, 2, 45, 45, 16, true, coop, true);
  bf16.half = codegen::Elem::BF16;
  bf16.halfOut = true;
  checkDocuments(bf16, packedPositions(1, 45, 20), true);
}
