// liveCoopChecks: small coop GEMMs and attention passes against float64 CPU references.
#include "engine/ops/coop_selftest.hpp"

#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <memory>
#include <random>

#include "engine/core/half.hpp"
#include "engine/ops/attention.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/ops/matmul_coop.hpp"

namespace helios::ops {

namespace {

// Uniform in [-1, 1] and exactly representable in f16, so the kernels' rounding to f16 changes nothing and
// the reference sees the same inputs.
std::vector<float> halfValues(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v)
    x = halfToFloat(floatToHalf(dist(rng)));
  return v;
}

// "" when every got[i] is within tol[i] of want[i] (NaN never is), else the first miss.
std::string compare(const char* what, const std::vector<float>& got, const std::vector<double>& want,
                    const std::vector<double>& tol) {
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= tol[i]))
      return fmt::format("{}[{}] = {}, expected {} (tolerance {:.2g})", what, i, got[i], want[i], tol[i]);
  return "";
}

struct Env {
  vk::Context& ctx;
  CoopDeviceInfo info;
  CoopCheckOptions opt;
  std::mt19937 rng{std::random_device{}()};

  vk::Buffer upload(const std::vector<float>& v, bool half) {
    vk::Buffer b = ctx.buffer(v.size() * (half ? 2 : 4), "coop self-test input");
    if (half)
      ctx.uploadVector(b, toHalf(v));
    else
      ctx.uploadVector(b, v);
    return b;
  }
  vk::Buffer poisoned(size_t n) {
    return upload(std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()), false);
  }
  std::vector<float> read(const vk::Buffer& b, size_t n) {
    auto v = ctx.downloadVector<float>(b, n);
    if (opt.tamper) opt.tamper(v);
    return v;
  }
};

// C = A B, f16 in, f32 out, planned on the device's Tuning record, with the self-test's bounded choices where
// `bounded` (they reach the direct and the bounded kernel; tuning knobs such as HELIOS_COOP_BOUNDED=0 may
// move the plan, and whatever ran is checked).
// Products of f16 are exact in f32, so only the f32 sums differ from the float64 reference: 1e-3 of sum |a b|
// bounds that with room and still catches a wrong element, lane or tile.
std::string gemmCheck(Env& env, uint32_t M, uint32_t N, uint32_t K, bool bounded) {
  const auto a = halfValues(env.rng, size_t{M} * K), b = halfValues(env.rng, size_t{K} * N);
  vk::Buffer A = env.upload(a, true), B = env.upload(b, true), C = env.poisoned(size_t{M} * N);
  MatmulArgs args;
  args.a = A.range();
  args.b = B.range();
  args.c = C.range();
  args.M = M, args.N = N, args.K = K;
  args.aType = MatmulDType::F16;
  args.outType = MatmulDType::F32;
  CoopRunOptions run;
  run.tuning = deviceTuning(env.ctx.device());
  if (bounded) run.tuning->gemm = selfTestBounded(run.tuning->gemm);
  run.device = env.info;
  run.record = false;
  run.tiledInner = env.opt.standIn;
  ImmediateExecutor exec(env.ctx);
  const CoopPlan plan = matmulCoop(exec, args, run);
  exec.flush();
  std::vector<double> want(size_t{M} * N), tol(size_t{M} * N);
  for (uint32_t i = 0; i < M; ++i)
    for (uint32_t j = 0; j < N; ++j) {
      double s = 0, mag = 0;
      for (uint32_t k = 0; k < K; ++k) {
        const double p = double(a[size_t{i} * K + k]) * b[size_t{k} * N + j];
        s += p;
        mag += std::abs(p);
      }
      want[size_t{i} * N + j] = s;
      tol[size_t{i} * N + j] = 1e-3 * mag + 1e-6;
    }
  const std::string miss = compare("C", env.read(C, size_t{M} * N), want, tol);
  return miss.empty() ? miss : miss + " (" + coopDecisionName(plan.inner) + ": " + plan.reason + ")";
}

// Causal attention of `heads` heads over T rows of width D, [heads, T, D], in float64.
struct AttentionRef {
  uint32_t heads, T, D;
  double scale;
  std::vector<double> o, lse, dq, dk, dv;

  size_t at(uint32_t h, uint32_t t, uint32_t d) const { return (size_t{h} * T + t) * D + d; }
  double dot(const std::vector<float>& x, const std::vector<float>& y, uint32_t h, uint32_t i,
             uint32_t j) const {
    double s = 0;
    for (uint32_t d = 0; d < D; ++d)
      s += double(x[at(h, i, d)]) * y[at(h, j, d)];
    return s;
  }

  void run(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
           const std::vector<float>& dO) {
    o.assign(q.size(), 0), dq.assign(q.size(), 0), dk.assign(q.size(), 0), dv.assign(q.size(), 0);
    lse.assign(size_t{heads} * T, 0);
    for (uint32_t h = 0; h < heads; ++h)
      for (uint32_t i = 0; i < T; ++i) {
        std::vector<double> p(i + 1);
        double m = -1e300, l = 0;
        for (uint32_t j = 0; j <= i; ++j)
          m = std::max(m, p[j] = scale * dot(q, k, h, i, j));
        for (uint32_t j = 0; j <= i; ++j)
          l += p[j] = std::exp(p[j] - m);
        lse[size_t{h} * T + i] = m + std::log(l);
        double delta = 0;
        for (uint32_t d = 0; d < D; ++d) {
          for (uint32_t j = 0; j <= i; ++j)
            o[at(h, i, d)] += p[j] / l * v[at(h, j, d)];
          delta += o[at(h, i, d)] * dO[at(h, i, d)];
        }
        for (uint32_t j = 0; j <= i; ++j) {
          const double pij = p[j] / l, ds = pij * (dot(dO, v, h, i, j) - delta);
          for (uint32_t d = 0; d < D; ++d) {
            dq[at(h, i, d)] += scale * ds * k[at(h, j, d)];
            dk[at(h, j, d)] += scale * ds * q[at(h, i, d)];
            dv[at(h, j, d)] += pij * dO[at(h, i, d)];
          }
        }
      }
  }
};

// Tolerance for values the kernels compute from f16-rounded probabilities: 1e-2 of the largest magnitude.
std::vector<double> looseTolerance(const std::vector<double>& want) {
  double big = 0;
  for (double w : want)
    big = std::max(big, std::abs(w));
  return std::vector<double>(want.size(), 1e-2 * (1.0 + big));
}

// One coop attention forward and backward (causal, 2 heads, 37 rows of 64: a partial tile), f32 q, k, v.
std::string attentionCheck(Env& env, bool backward) {
  AttentionShape s;
  s.heads = s.kvHeads = 2;
  s.Tq = s.Tk = 37;
  s.headDim = 64;
  s.causal = true;
  s.scale = 0.125f;
  s.kernel = env.opt.standIn ? AttentionKernel::Fallback : AttentionKernel::Coop;
  const size_t n = size_t{s.heads} * s.Tq * s.headDim, rows = size_t{s.heads} * s.Tq;
  const auto q = halfValues(env.rng, n), k = halfValues(env.rng, n), v = halfValues(env.rng, n),
             dO = halfValues(env.rng, n);
  AttentionRef ref{s.heads, s.Tq, s.headDim, s.scale};
  ref.run(q, k, v, dO);
  vk::Buffer Q = env.upload(q, false), Kb = env.upload(k, false), V = env.upload(v, false),
             DO = env.upload(dO, false), O = env.poisoned(n), L = env.poisoned(rows), DQ = env.poisoned(n),
             DK = env.poisoned(n), DV = env.poisoned(n), delta = env.poisoned(rows);
  ImmediateExecutor exec(env.ctx);
  attentionForward(exec, Q.range(), Kb.range(), V.range(), O.range(), L.range(), s);
  if (backward)
    attentionBackward(exec, Q.range(), Kb.range(), V.range(), O.range(), L.range(), DO.range(), DQ.range(),
                      DK.range(), DV.range(), delta.range(), s);
  exec.flush();
  if (!backward) {
    if (auto miss = compare("o", env.read(O, n), ref.o, looseTolerance(ref.o)); !miss.empty()) return miss;
    return compare("lse", env.read(L, rows), ref.lse, std::vector<double>(rows, 1e-2));
  }
  if (auto miss = compare("dQ", env.read(DQ, n), ref.dq, looseTolerance(ref.dq)); !miss.empty()) return miss;
  if (auto miss = compare("dK", env.read(DK, n), ref.dk, looseTolerance(ref.dk)); !miss.empty()) return miss;
  return compare("dV", env.read(DV, n), ref.dv, looseTolerance(ref.dv));
}

} // namespace

tuning::GemmTuning selfTestBounded(tuning::GemmTuning g) {
  g.allowPadding.preset(false);
  g.minFlops.preset(0);
  g.boundedMinFlops.preset(0);
  return g;
}

std::vector<CoopCheck> liveCoopChecks(vk::Context& ctx, const CoopDeviceInfo& info,
                                      const CoopCheckOptions& opt) {
  auto env = std::make_shared<Env>(Env{ctx, info, opt});
  std::vector<CoopCheck> checks;
  checks.push_back(
      {"GEMM 128x128x128 f16 -> f32 (direct)", [env] { return gemmCheck(*env, 128, 128, 128, false); }});
  checks.push_back(
      {"GEMM 77x45x83 f16 -> f32 (bounded)", [env] { return gemmCheck(*env, 77, 45, 83, true); }});
  if (opt.standIn || attentionCoopAvailable(ctx.device(), 64)) {
    checks.push_back({"attention forward (causal, 2x37x64)", [env] { return attentionCheck(*env, false); }});
    checks.push_back({"attention backward (causal, 2x37x64)", [env] { return attentionCheck(*env, true); }});
  }
  return checks;
}

} // namespace helios::ops
