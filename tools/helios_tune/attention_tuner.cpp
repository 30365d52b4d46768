#include "attention_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "codegen/spirv/tools.hpp"
#include "engine/ops/attention.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/tuning/search.hpp"

namespace helios::tune {

namespace {

using tuning::Candidate;
constexpr double kRejected = std::numeric_limits<double>::infinity();

struct Tensors {
  vk::Buffer q, k, v, o, lse;
  std::vector<float> hq, hk, hv;
  ops::AttentionShape shape;
};

Tensors makeTensors(vk::Context& ctx, const AttentionTarget& t, uint64_t seed) {
  Tensors x;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const uint64_t n = uint64_t{t.batch} * t.heads * t.seq * t.headDim;
  for (auto* h : {&x.hq, &x.hk, &x.hv}) {
    h->resize(n);
    for (float& f : *h)
      f = u(rng);
  }
  x.q = ctx.buffer(n * 4, "tune q"), x.k = ctx.buffer(n * 4, "tune k"), x.v = ctx.buffer(n * 4, "tune v");
  x.o = ctx.buffer(n * 4, "tune o");
  x.lse = ctx.buffer(uint64_t{t.batch} * t.heads * t.seq * 4, "tune lse");
  ctx.uploadVector(x.q, x.hq), ctx.uploadVector(x.k, x.hk), ctx.uploadVector(x.v, x.hv);
  ops::AttentionShape& s = x.shape;
  s.batch = t.batch, s.heads = s.kvHeads = t.heads, s.Tq = s.Tk = t.seq, s.headDim = t.headDim;
  s.causal = t.causal;
  s.scale = 1.0f / std::sqrt(float(t.headDim));
  s.kernel = ops::AttentionKernel::Coop;
  return x;
}

// Largest error of the sampled output rows against float64 attention on the same inputs.
double maxError(const Tensors& x, const AttentionTarget& t, const std::vector<float>& o, uint32_t samples,
                uint64_t seed) {
  std::mt19937_64 rng(seed);
  double worst = 0;
  const uint64_t D = t.headDim, T = t.seq;
  for (uint32_t s = 0; s < samples; ++s) {
    const uint64_t bh = rng() % (uint64_t{t.batch} * t.heads), i = rng() % T;
    const uint64_t base = bh * T * D, keys = t.causal ? i + 1 : T;
    std::vector<double> p(keys);
    double top = -1e300;
    for (uint64_t j = 0; j < keys; ++j) {
      double dot = 0;
      for (uint64_t d = 0; d < D; ++d)
        dot += double(x.hq[base + i * D + d]) * x.hk[base + j * D + d];
      p[j] = dot / std::sqrt(double(D));
      top = std::max(top, p[j]);
    }
    double sum = 0;
    for (double& e : p)
      sum += (e = std::exp(e - top));
    for (uint64_t d = 0; d < D; ++d) {
      double ref = 0, mag = 0;
      for (uint64_t j = 0; j < keys; ++j) {
        ref += p[j] / sum * x.hv[base + j * D + d];
        mag += p[j] / sum * std::fabs(x.hv[base + j * D + d]);
      }
      const double g = o[base + i * D + d];
      worst = std::max(worst, std::isfinite(g) ? std::fabs(g - ref) / (mag + 1e-6) : kRejected);
    }
  }
  return worst;
}

tuning::SearchSpace attentionSpace() {
  tuning::SearchSpace s;
  s.dims = {{"tile", {-1, 32, 64, 128}},
            {"subgroups", {-1, 1, 2, 4, 8}},
            {"prefetch", {-1, 0, 1}},
            {"pad", {-1, 0, 1}}};
  return s;
}

tuning::AttentionChoice choiceOf(const tuning::SearchSpace& s, const Candidate& c, const AttentionTarget& t) {
  tuning::AttentionChoice a;
  a.pass = tuning::AttentionPassId::Forward;
  a.headDim = t.headDim;
  a.causal = t.causal;
  if (const int64_t v = s.value(c, "tile"); v >= 0) a.tile = uint32_t(v);
  if (const int64_t v = s.value(c, "subgroups"); v >= 0) a.subgroups = uint32_t(v);
  if (const int64_t v = s.value(c, "prefetch"); v >= 0) a.prefetch = v == 1;
  if (const int64_t v = s.value(c, "pad"); v >= 0) a.pad = uint32_t(v);
  return a;
}

std::string describe(const tuning::AttentionChoice& a) {
  return "tile " + (a.tile ? std::to_string(*a.tile) : "-") + " sg " +
         (a.subgroups ? std::to_string(*a.subgroups) : "-") + " pf " +
         (a.prefetch ? std::to_string(*a.prefetch) : "-") + " pad " + (a.pad ? std::to_string(*a.pad) : "-");
}

} // namespace

AttentionTuneResult tuneAttention(vk::Context& ctx, const AttentionTarget& t, const tuning::Tuning& base,
                                  const AttentionTuneOptions& o) {
  AttentionTuneResult r;
  const vk::Device& dev = ctx.device();
  r.available = ops::attentionCoopAvailable(dev, t.headDim);
  if (!r.available) return r;
  Tensors x = makeTensors(ctx, t, o.seed);
  const tuning::SearchSpace space = attentionSpace();
  const size_t n = x.hq.size();
  const auto forward = [&](ops::Executor& e) {
    ops::attentionForward(e, x.q.range(), x.k.range(), x.v.range(), x.o.range(), x.lse.range(), x.shape);
  };
  const auto reject = [&](const tuning::AttentionChoice& a, const std::string& gate, const std::string& why) {
    ++r.rejected;
    if (r.rejections.size() < 8) r.rejections.push_back(describe(a) + ": " + gate + ": " + why);
    return kRejected;
  };
  const auto cost = [&](const Candidate& c) -> double {
    const tuning::AttentionChoice a = choiceOf(space, c, t);
    tuning::Tuning record = base;
    tuning::putAttention(record, a, tuning::Source::File);
    ops::setDeviceTuning(dev, record);
    try {
      const auto p = ops::attentionCoopPass(dev, codegen::AttentionPass::Forward, t.headDim, t.causal);
      if ((a.tile && p.tile != *a.tile) || (a.subgroups && p.subgroups != *a.subgroups))
        return reject(a, "parameters", "does not fit the device (left out by the op)");
      const spv::ValidationResult v = spv::validate(codegen::generateAttentionCoop(p).spirv);
      if (!v.ok) return reject(a, "spirv-val", v.message);
    } catch (const std::exception& e) {
      return reject(a, "parameters", e.what());
    }
    std::vector<float> first;
    double error = 0;
    for (int run = 0; run < 3; ++run) {
      ctx.uploadVector(x.o, std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()));
      WatchingExecutor exec(ctx);
      try {
        forward(exec);
        exec.flush();
      } catch (const std::exception& e) {
        return reject(a, "pipeline", e.what());
      }
      if (run == 0)
        if (const std::string why = spillGate(ctx, exec); !why.empty()) return reject(a, "spills", why);
      std::vector<float> got = ctx.downloadVector<float>(x.o, n);
      if (run == 0) {
        error = maxError(x, t, got, o.samples, o.seed + 1);
        if (!(error <= o.maxError)) return reject(a, "max error", std::to_string(error));
        first = std::move(got);
      } else if (std::memcmp(first.data(), got.data(), n * sizeof(float)) != 0) {
        return reject(a, "determinism", "run " + std::to_string(run + 1) + " differs from run 1");
      }
    }
    try { // as the GEMM search: a candidate that cannot be timed is rejected, not the run
      return timeUs(ctx, o.timing, forward) * (1.0 + error / o.maxError * 1e-2);
    } catch (const std::exception& e) {
      return reject(a, "timing", e.what());
    }
  };
  tuning::SearchOptions so;
  so.seed = o.seed;
  so.maxEvaluations = o.maxEvaluations;
  so.stop = o.stop;
  so.progress = [&](uint32_t k, const tuning::Scored& best) {
    if (o.progress) o.progress(k, best.cost);
  };
  const Candidate start(space.dims.size(), 0);
  std::vector<tuning::Scored> all;
  try {
    all = tuning::evolve(space, start, cost, so);
  } catch (...) {
    ops::setDeviceTuning(dev, base);
    throw;
  }
  ops::setDeviceTuning(dev, base);
  r.evaluated = static_cast<uint32_t>(all.size());
  for (const tuning::Scored& s : all)
    if (s.candidate == start) r.defaultUs = std::isfinite(s.cost) ? s.cost : 0;
  if (!all.empty() && std::isfinite(all.front().cost)) {
    const Candidate& winner = all.front().candidate;
    const Pick pick = pickWinner(r.defaultUs, all.front().cost, o.minGain, [&](bool timeWinner) {
      tuning::Tuning record = base;
      tuning::putAttention(record, choiceOf(space, timeWinner ? winner : start, t), tuning::Source::File);
      ops::setDeviceTuning(dev, record);
      struct Restore {
        const vk::Device& d;
        const tuning::Tuning& b;
        ~Restore() { ops::setDeviceTuning(d, b); }
      } restore{dev, base};
      return timeUs(ctx, o.timing, forward);
    });
    r.defaultUs = pick.defaultUs;
    r.best = choiceOf(space, pick.winner ? winner : start, t);
    r.bestUs = pick.chosenUs;
  }
  return r;
}

} // namespace helios::tune
