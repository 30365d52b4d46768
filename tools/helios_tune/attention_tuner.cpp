#include "attention_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "codegen/spirv/tools.hpp"
#include "engine/core/half.hpp"
#include "engine/ops/attention.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/tuning/values.hpp"

namespace helios::tune {

namespace {

using codegen::AttentionPass;
using tuning::Candidate;
constexpr double kRejected = std::numeric_limits<double>::infinity(); // a NaN among the sampled outputs

// The inputs (q, k, v, and for the backward dO with the forward's o and lse) and the stage's outputs. q, k
// and v are stored as f16, as the models' coop attention reads them (mixed precision): a record's choice is
// keyed by pass, head dim and mask only, and the f32 inputs' staging (loads of twice the bytes, packed in
// registers) ranks tilings otherwise (2026-11-26-h100-tune.json: a D = 128 tiling 4% faster on f32 inputs,
// 21% slower on f16). hq, hk, hv hold the f16 values, so the float64 references see what the kernels read.
struct Tensors {
  vk::Buffer q, k, v, o, lse, dO, dQ, dK, dV, delta;
  std::vector<float> hq, hk, hv, hdO;
  ops::AttentionShape shape;
  uint64_t n = 0; // elements of one of q, k, v, o
};

Tensors makeTensors(vk::Context& ctx, const AttentionTarget& t, AttentionStage stage, uint64_t seed) {
  Tensors x;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  x.n = uint64_t{t.batch} * t.heads * t.seq * t.headDim;
  const uint64_t rows = uint64_t{t.batch} * t.heads * t.seq;
  const bool backward = stage == AttentionStage::Backward;
  for (auto* h : {&x.hq, &x.hk, &x.hv, &x.hdO}) {
    if (h == &x.hdO && !backward) continue;
    h->resize(x.n);
    for (float& f : *h)
      f = h == &x.hdO ? u(rng) : halfToFloat(floatToHalf(u(rng)));
  }
  const auto buf = [&](uint64_t elements, const char* what) { return ctx.buffer(elements * 4, what); };
  const auto half = [&](const std::vector<float>& h, const char* what) {
    vk::Buffer b = ctx.buffer(h.size() * 2, what);
    ctx.uploadVector(b, toHalf(h));
    return b;
  };
  x.q = half(x.hq, "tune q"), x.k = half(x.hk, "tune k"), x.v = half(x.hv, "tune v");
  x.o = buf(x.n, "tune o"), x.lse = buf(rows, "tune lse");
  if (backward) {
    x.dO = buf(x.n, "tune dO"), x.dQ = buf(x.n, "tune dQ"), x.dK = buf(x.n, "tune dK");
    x.dV = buf(x.n, "tune dV"), x.delta = buf(rows, "tune delta");
    ctx.uploadVector(x.dO, x.hdO);
  }
  ops::AttentionShape& s = x.shape;
  s.batch = t.batch, s.heads = s.kvHeads = t.heads, s.Tq = s.Tk = t.seq, s.headDim = t.headDim;
  s.causal = t.causal;
  s.scale = 1.0f / std::sqrt(float(t.headDim));
  s.kernel = ops::AttentionKernel::Coop;
  s.halfQkv = true;
  return x;
}

// The stage's outputs, poisoned and read back together.
std::vector<vk::Buffer*> outputs(Tensors& x, AttentionStage stage) {
  if (stage == AttentionStage::Forward) return {&x.o};
  return {&x.dQ, &x.dK, &x.dV};
}

// float64 probabilities of query row i of head bh (zero past the causal edge).
std::vector<double> rowProbs(const Tensors& x, const AttentionTarget& t, uint64_t bh, uint64_t i) {
  const uint64_t T = t.seq, D = t.headDim, base = bh * T * D, keys = t.causal ? i + 1 : T;
  std::vector<double> p(T, 0.0);
  double top = -1e300, sum = 0;
  for (uint64_t j = 0; j < keys; ++j) {
    double dot = 0;
    for (uint64_t d = 0; d < D; ++d)
      dot += double(x.hq[base + i * D + d]) * x.hk[base + j * D + d];
    p[j] = dot / std::sqrt(double(D));
    top = std::max(top, p[j]);
  }
  for (uint64_t j = 0; j < keys; ++j)
    sum += (p[j] = std::exp(p[j] - top));
  for (uint64_t j = 0; j < keys; ++j)
    p[j] /= sum;
  return p;
}

// One sampled output element: which output, where, its float64 value and the sum of its terms' magnitudes.
struct Expected {
  size_t output;
  uint64_t index;
  double ref, mag;
};

// Forward: sampled rows of o (o_i = sum_j P_ij v_j), two heads.
std::vector<Expected> forwardExpected(const Tensors& x, const AttentionTarget& t, uint32_t samples,
                                      std::mt19937_64& rng) {
  const uint64_t T = t.seq, D = t.headDim, heads = uint64_t{t.batch} * t.heads;
  std::vector<Expected> out;
  for (uint32_t s = 0; s < samples; ++s) {
    const uint64_t bh = rng() % heads, i = rng() % T, base = bh * T * D;
    const std::vector<double> p = rowProbs(x, t, bh, i);
    for (uint64_t d = 0; d < D; ++d) {
      double ref = 0, mag = 0;
      for (uint64_t j = 0; j < T; ++j) {
        ref += p[j] * x.hv[base + j * D + d];
        mag += p[j] * std::fabs(x.hv[base + j * D + d]);
      }
      out.push_back({0, base + i * D + d, ref, mag});
    }
  }
  return out;
}

// Backward, on one sampled head (its whole P, and delta_i = dO_i . o_i for every row): sampled rows of
// dQ_i = scale sum_j dS_ij k_j, dK_j = scale sum_i dS_ij q_i and dV_j = sum_i P_ij dO_i, with
// dS_ij = P_ij (dO_i . v_j - delta_i). The magnitude a gradient's error is measured against takes each dS
// term before its cancellation, P_ij (|dO_i . v_j| + |delta_i|): the kernels round those operands, and a
// gradient that cancels to 0 (dQ of a causal row 0) is otherwise judged by its rounding alone.
std::vector<Expected> backwardExpected(const Tensors& x, const AttentionTarget& t, uint32_t samples,
                                       std::mt19937_64& rng) {
  const uint64_t T = t.seq, D = t.headDim, heads = uint64_t{t.batch} * t.heads;
  const uint64_t bh = rng() % heads, base = bh * T * D;
  const double scale = 1.0 / std::sqrt(double(D));
  std::vector<std::vector<double>> p(T);
  std::vector<double> delta(T, 0.0);
  const auto dp = [&](uint64_t i, uint64_t j) {
    double v = 0;
    for (uint64_t d = 0; d < D; ++d)
      v += double(x.hdO[base + i * D + d]) * x.hv[base + j * D + d];
    return v;
  };
  for (uint64_t i = 0; i < T; ++i) {
    p[i] = rowProbs(x, t, bh, i);
    for (uint64_t j = 0; j < T; ++j)
      if (p[i][j] != 0) delta[i] += p[i][j] * dp(i, j);
  }
  const auto ds = [&](uint64_t i, uint64_t j) {
    return p[i][j] == 0 ? 0.0 : p[i][j] * (dp(i, j) - delta[i]);
  };
  const auto dsMag = [&](uint64_t i, uint64_t j) {
    return p[i][j] == 0 ? 0.0 : p[i][j] * (std::fabs(dp(i, j)) + std::fabs(delta[i]));
  };
  std::vector<Expected> out;
  for (uint32_t s = 0; s < samples; ++s) {
    const uint64_t row = rng() % T, at = base + row * D;
    std::vector<double> dsRow(T), dsCol(T), magRow(T), magCol(T); // dS_row,j and dS_i,row, and their scales
    for (uint64_t j = 0; j < T; ++j) {
      dsRow[j] = ds(row, j), dsCol[j] = ds(j, row);
      magRow[j] = dsMag(row, j), magCol[j] = dsMag(j, row);
    }
    for (uint64_t d = 0; d < D; ++d) {
      double dq = 0, dqMag = 0, dk = 0, dkMag = 0, dv = 0, dvMag = 0;
      for (uint64_t j = 0; j < T; ++j) {
        const double k = x.hk[base + j * D + d], q = x.hq[base + j * D + d];
        const double c = p[j][row] * x.hdO[base + j * D + d];
        dq += dsRow[j] * k, dqMag += magRow[j] * std::fabs(k);
        dk += dsCol[j] * q, dkMag += magCol[j] * std::fabs(q);
        dv += c, dvMag += std::fabs(c);
      }
      out.push_back({0, at + d, scale * dq, scale * dqMag});
      out.push_back({1, at + d, scale * dk, scale * dkMag});
      out.push_back({2, at + d, dv, dvMag});
    }
  }
  return out;
}

// The sampled elements of the stage's outputs, computed once for the whole search.
std::vector<Expected> expected(const Tensors& x, const AttentionTarget& t, AttentionStage stage,
                               uint32_t samples, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return stage == AttentionStage::Forward ? forwardExpected(x, t, samples, rng)
                                          : backwardExpected(x, t, samples, rng);
}

// Largest |got - ref| / (mag + 1e-6) over the sampled elements (NaN counts as infinite).
double maxError(const std::vector<Expected>& want, const std::vector<std::vector<float>>& got) {
  double worst = 0;
  for (const Expected& e : want) {
    const double g = got[e.output][e.index];
    worst = std::max(worst, std::isfinite(g) ? std::fabs(g - e.ref) / (e.mag + 1e-6) : kRejected);
  }
  return worst;
}

// The stage's op on the tensors (the backward reads the o and lse its forward left).
void runStage(ops::Executor& e, Tensors& x, AttentionStage stage) {
  if (stage == AttentionStage::Forward) {
    ops::attentionForward(e, x.q.range(), x.k.range(), x.v.range(), x.o.range(), x.lse.range(), x.shape);
    return;
  }
  ops::attentionBackward(e, x.q.range(), x.k.range(), x.v.range(), x.o.range(), x.lse.range(), x.dO.range(),
                         x.dQ.range(), x.dK.range(), x.dV.range(), x.delta.range(), x.shape);
}

// The backward's inputs o and lse, from the forward with the device's record.
void runForwardFor(vk::Context& ctx, Tensors& x, AttentionStage stage) {
  if (stage != AttentionStage::Backward) return;
  ops::ImmediateExecutor e(ctx);
  runStage(e, x, AttentionStage::Forward);
  e.flush();
}

// The record with `choices` in place on the device (the ops read it there) until the guard goes, then
// `restore`.
class Applied {
public:
  Applied(const vk::Device& dev, const tuning::Tuning& restore, tuning::Tuning record)
      : dev_(dev), restore_(restore) {
    ops::setDeviceTuning(dev, record);
  }
  Applied(const vk::Device& dev, const tuning::Tuning& restore,
          const std::vector<tuning::AttentionChoice>& choices)
      : Applied(dev, restore, with(restore, choices)) {}
  Applied(const Applied&) = delete;
  Applied& operator=(const Applied&) = delete;
  ~Applied() { ops::setDeviceTuning(dev_, restore_); }

private:
  static tuning::Tuning with(tuning::Tuning record, const std::vector<tuning::AttentionChoice>& choices) {
    for (const tuning::AttentionChoice& a : choices)
      tuning::putAttention(record, a, tuning::Source::File);
    return record;
  }
  const vk::Device& dev_;
  const tuning::Tuning& restore_;
};

std::vector<AttentionPass> passes(AttentionStage stage) {
  if (stage == AttentionStage::Forward) return {AttentionPass::Forward};
  return {AttentionPass::QueryGrad, AttentionPass::KeyValueGrad};
}

std::string prefix(AttentionStage stage, AttentionPass pass) {
  if (stage == AttentionStage::Forward) return "";
  return pass == AttentionPass::QueryGrad ? "dq." : "dkv.";
}

// The tuner's own gates: every pass's parameters as asked (the op leaves out what does not fit the device),
// and its module through spirv-val.
Checked checkPasses(const vk::Device& dev, const std::vector<tuning::AttentionChoice>& choices,
                    const AttentionTarget& t) {
  for (const tuning::AttentionChoice& a : choices) {
    const AttentionPass pass = a.pass == tuning::AttentionPassId::Forward     ? AttentionPass::Forward
                               : a.pass == tuning::AttentionPassId::QueryGrad ? AttentionPass::QueryGrad
                                                                              : AttentionPass::KeyValueGrad;
    const auto p = ops::attentionCoopPass(dev, pass, t.headDim, t.causal);
    if ((a.tile && p.tile != *a.tile) || (a.subgroups && p.subgroups != *a.subgroups))
      return {"parameters", "does not fit the device (left out by the op)", ""};
    const spv::ValidationResult v = spv::validate(codegen::generateAttentionCoop(p).spirv);
    if (!v.ok) return {"spirv-val", v.message, ""};
  }
  return {};
}

std::string describe(const std::vector<tuning::AttentionChoice>& choices) {
  std::string s;
  for (const tuning::AttentionChoice& a : choices)
    s += std::string(s.empty() ? "" : "; ") + tuning::name(a.pass) + " tile " +
         (a.tile ? std::to_string(*a.tile) : "-") + " sg " +
         (a.subgroups ? std::to_string(*a.subgroups) : "-") + " pf " +
         (a.prefetch ? std::to_string(*a.prefetch) : "-") + " pad " + (a.pad ? std::to_string(*a.pad) : "-");
  return s;
}

} // namespace

const char* stageName(AttentionStage stage) {
  return stage == AttentionStage::Forward ? "forward" : "backward";
}

tuning::SearchSpace attentionSpace(AttentionStage stage) {
  tuning::SearchSpace s;
  for (const AttentionPass pass : passes(stage)) {
    const std::string p = prefix(stage, pass);
    s.dims.push_back({p + "tile", {-1, 32, 64, 128}});
    s.dims.push_back({p + "subgroups", {-1, 1, 2, 4, 8}});
    s.dims.push_back({p + "prefetch", {-1, 0, 1}});
    s.dims.push_back({p + "pad", {-1, 0, 1}});
  }
  return s;
}

std::vector<tuning::AttentionChoice> attentionChoices(const tuning::SearchSpace& s, const Candidate& c,
                                                      AttentionStage stage, const AttentionTarget& t) {
  std::vector<tuning::AttentionChoice> out;
  for (const AttentionPass pass : passes(stage)) {
    const std::string p = prefix(stage, pass);
    tuning::AttentionChoice a;
    a.pass = ops::passId(pass);
    a.headDim = t.headDim;
    a.causal = t.causal;
    if (const int64_t v = s.value(c, p + "tile"); v >= 0) a.tile = uint32_t(v);
    if (const int64_t v = s.value(c, p + "subgroups"); v >= 0) a.subgroups = uint32_t(v);
    if (const int64_t v = s.value(c, p + "prefetch"); v >= 0) a.prefetch = v == 1;
    if (const int64_t v = s.value(c, p + "pad"); v >= 0) a.pad = uint32_t(v);
    out.push_back(a);
  }
  return out;
}

AttentionTuneResult tuneAttention(vk::Context& ctx, const AttentionTarget& t, AttentionStage stage,
                                  const tuning::Tuning& base, const AttentionTuneOptions& o) {
  AttentionTuneResult r;
  const vk::Device& dev = ctx.device();
  r.available = ops::attentionCoopAvailable(dev, t.headDim);
  if (!r.available) return r;
  Tensors x = makeTensors(ctx, t, stage, o.seed);
  const tuning::SearchSpace space = attentionSpace(stage);
  const auto op = [&](ops::Executor& e) { runStage(e, x, stage); };
  runForwardFor(ctx, x, stage);
  const TrialMaker trial = [&](const Candidate& c, const std::function<double(const Trial&)>& body) {
    const std::vector<tuning::AttentionChoice> choices = attentionChoices(space, c, stage, t);
    const Applied applied(dev, base, choices);
    const auto run = [&](ops::Executor& e) {
      if (o.runner)
        o.runner(e, choices, op);
      else
        op(e);
    };
    return body({describe(choices), [&] { return checkPasses(dev, choices, t); }, run});
  };
  std::vector<vk::Buffer*> outs = outputs(x, stage);
  const std::vector<Expected> want = expected(x, t, stage, o.samples, o.seed + 1);
  GatedOutputs gated;
  gated.poison = [&] {
    for (vk::Buffer* b : outs)
      ctx.uploadVector(*b, std::vector<float>(x.n, std::numeric_limits<float>::quiet_NaN()));
  };
  gated.read = [&] {
    std::vector<std::vector<float>> got;
    for (vk::Buffer* b : outs)
      got.push_back(ctx.downloadVector<float>(*b, x.n));
    return got;
  };
  gated.error = [&](const std::vector<std::vector<float>>& got) { return maxError(want, got); };
  // The backward's outputs are sums of products of three f16-rounded factors (dO, v and q or k): more room.
  gated.maxError = stage == AttentionStage::Backward ? 2.5 * o.maxError : o.maxError;
  const HarnessResult h = searchCandidates(ctx, space, trial, gated, o);
  static_cast<SearchOutcome&>(r) = h;
  if (h.chosen) r.best = attentionChoices(space, *h.chosen, stage, t);
  return r;
}

PairUs timeAttentionRecords(vk::Context& ctx, const AttentionTarget& target, AttentionStage stage,
                            const tuning::Tuning& first, const tuning::Tuning& second,
                            const TimingOptions& timing, uint32_t rounds) {
  const vk::Device& dev = ctx.device();
  const tuning::Tuning restore = ops::deviceTuning(dev);
  Tensors x = makeTensors(ctx, target, stage, 1);
  runForwardFor(ctx, x, stage);
  return timeRecords(ctx, timing, rounds, [&](ops::Executor& e, bool useSecond) {
    const Applied applied(dev, restore, useSecond ? second : first);
    runStage(e, x, stage);
  });
}

} // namespace helios::tune
