#include "gpt_reference.hpp"

#include "engine/model/rope_frequencies.hpp"
#include "support/reference.hpp"

#include <cmath>
#include <stdexcept>

namespace helios::test {

namespace {

using Mat = std::vector<double>; // row-major

const std::vector<double>& get(const ParamMap& p, const std::string& name) {
  const auto it = p.find(name);
  if (it == p.end()) throw std::runtime_error("reference: missing parameter " + name);
  return it->second;
}

// A bias, or null where the configuration places none.
const std::vector<double>* bias(const ParamMap& p, const std::string& name) {
  const auto it = p.find(name);
  return it == p.end() ? nullptr : &it->second;
}

// y [rows, out] = x [rows, in] W^T (+ b), W [out, in].
Mat linear(const Mat& x, const std::vector<double>& w, const std::vector<double>* b, size_t rows, size_t in,
           size_t out) {
  Mat y(rows * out);
  for (size_t r = 0; r < rows; ++r)
    for (size_t o = 0; o < out; ++o) {
      double s = b ? (*b)[o] : 0.0;
      for (size_t i = 0; i < in; ++i)
        s += x[r * in + i] * w[o * in + i];
      y[r * out + o] = s;
    }
  return y;
}

// The output rows [row, row + rows) each LoRA part of the linear layer `base` adapts (PEFT's per-projection
// layout inside Helios' packed q/k/v), in the order the stacked A and B hold them.
std::vector<std::pair<size_t, size_t>> loraParts(const model::GptConfig& c, const std::string& base,
                                                 size_t out) {
  using model::LoraTarget;
  const auto& t = c.lora.targets;
  if (!base.ends_with("attn.qkv")) return {{0, out}};
  const size_t H = c.heads, G = c.kvHeadCount(), D = c.headSize();
  std::vector<std::pair<size_t, size_t>> parts;
  if (t.has(LoraTarget::Q)) parts.push_back({0, H * D});
  if (t.has(LoraTarget::K)) parts.push_back({H * D, G * D});
  if (t.has(LoraTarget::V)) parts.push_back({(H + G) * D, G * D});
  return parts;
}

// A linear layer of the model by name (base.weight, base.bias where placed), with its LoRA adapter where the
// parameters hold one: y += (alpha / r) (x A_p^T) B_p^T on each part's rows (no dropout: the reference is
// the function dropout leaves unchanged in expectation, and the checks run without it).
Mat layer(const model::GptConfig& c, const Mat& x, const ParamMap& p, const std::string& base, size_t rows,
          size_t in, size_t out) {
  Mat y = linear(x, get(p, base + ".weight"), bias(p, base + ".bias"), rows, in, out);
  const auto a = p.find(base + ".lora_A.weight");
  if (a == p.end()) return y;
  const std::vector<double>& A = a->second;
  const std::vector<double>& Bm = get(p, base + ".lora_B.weight");
  const size_t r = c.lora.rank;
  const double scale = double(c.lora.alpha) / double(r);
  size_t bRow = 0, k = 0;
  for (const auto& [row, n] : loraParts(c, base, out)) {
    const std::vector<double> Ap(A.begin() + std::ptrdiff_t(k * r * in),
                                 A.begin() + std::ptrdiff_t((k + 1) * r * in));
    const Mat u = linear(x, Ap, nullptr, rows, in, r);
    for (size_t i = 0; i < rows; ++i)
      for (size_t o = 0; o < n; ++o) {
        double s = 0;
        for (size_t j = 0; j < r; ++j)
          s += u[i * r + j] * Bm[(bRow + o) * r + j];
        y[i * out + row + o] += scale * s;
      }
    bRow += n;
    ++k;
  }
  return y;
}

Mat norm(const model::GptConfig& c, const Mat& x, const ParamMap& p, const std::string& prefix, size_t rows) {
  const size_t C = c.dim;
  const auto& g = get(p, prefix + ".weight");
  Mat y(rows * C);
  for (size_t r = 0; r < rows; ++r) {
    const double* xr = &x[r * C];
    if (c.norm == model::NormKind::LayerNorm) {
      const auto& b = get(p, prefix + ".bias");
      double mean = 0, var = 0;
      for (size_t i = 0; i < C; ++i)
        mean += xr[i];
      mean /= double(C);
      for (size_t i = 0; i < C; ++i)
        var += (xr[i] - mean) * (xr[i] - mean);
      var /= double(C);
      const double rstd = 1.0 / std::sqrt(var + double(c.normEps));
      for (size_t i = 0; i < C; ++i)
        y[r * C + i] = (xr[i] - mean) * rstd * g[i] + b[i];
    } else {
      double ms = 0;
      for (size_t i = 0; i < C; ++i)
        ms += xr[i] * xr[i];
      const double rstd = 1.0 / std::sqrt(ms / double(C) + double(c.normEps));
      for (size_t i = 0; i < C; ++i)
        y[r * C + i] = xr[i] * rstd * g[i];
    }
  }
  return y;
}

// Where each token's document starts inside its sequence: at t - positions[r] where positions are given,
// else after the last end-of-text token before it when packing (GptConfig::pack), else at 0.
std::vector<size_t> documentStarts(const model::GptConfig& c, const std::vector<int32_t>& tokens, uint32_t T,
                                   const std::vector<int32_t>& positions) {
  std::vector<size_t> start(tokens.size(), 0);
  for (size_t r = 0; r < tokens.size(); ++r) {
    if (!positions.empty()) {
      start[r] = r % T - size_t(positions[r]);
      continue;
    }
    for (size_t u = r / T * T; c.pack && u < r; ++u)
      if (tokens[u] == int32_t(c.endOfText)) start[r] = u + 1 - r / T * T;
  }
  return start;
}

Mat attention(const model::GptConfig& c, const Mat& h, const ParamMap& p, const std::string& pre, uint32_t B,
              uint32_t T, const std::vector<size_t>& start) {
  const size_t C = c.dim, H = c.heads, Hkv = c.kvHeadCount(), D = c.headSize(), rows = size_t(B) * T;
  const size_t group = H / Hkv;
  Mat q, k, v;
  size_t qs, ks, vs, qo, ko, vo; // row strides and column offsets
  if (c.packedQkv) {
    const size_t W = (H + 2 * Hkv) * D;
    const Mat qkv = layer(c, h, p, pre + "attn.qkv", rows, C, W);
    q = k = v = qkv;
    qs = ks = vs = W;
    qo = 0;
    ko = H * D;
    vo = (H + Hkv) * D;
  } else {
    q = layer(c, h, p, pre + "attn.q", rows, C, H * D);
    k = layer(c, h, p, pre + "attn.k", rows, C, Hkv * D);
    v = layer(c, h, p, pre + "attn.v", rows, C, Hkv * D);
    qs = H * D;
    ks = vs = Hkv * D;
    qo = ko = vo = 0;
  }
  const std::vector<double> freqs =
      c.rope ? model::ropeInverseFrequencies(uint32_t(D), c.ropeTheta, c.ropeScaling) : std::vector<double>{};
  if (c.rope) // positions restart with each packed document
    for (size_t r = 0; r < rows; ++r) {
      const uint32_t t = static_cast<uint32_t>(r % T - start[r]);
      for (size_t hh = 0; hh < H; ++hh)
        ropeReference(&q[r * qs + qo + hh * D], freqs, t);
      for (size_t hh = 0; hh < Hkv; ++hh)
        ropeReference(&k[r * ks + ko + hh * D], freqs, t);
    }
  Mat out(rows * H * D, 0.0);
  const double scale = 1.0 / std::sqrt(double(D));
  std::vector<double> s(T);
  for (size_t b = 0; b < B; ++b)
    for (size_t hh = 0; hh < H; ++hh) {
      const size_t kvh = hh / group;
      for (size_t t = 0; t < T; ++t) {
        const double* qr = &q[(b * T + t) * qs + qo + hh * D];
        double mx = -1e300;
        const size_t u0 = start[b * T + t];
        for (size_t u = u0; u <= t; ++u) {
          const double* kr = &k[(b * T + u) * ks + ko + kvh * D];
          double d = 0;
          for (size_t i = 0; i < D; ++i)
            d += qr[i] * kr[i];
          s[u] = d * scale;
          mx = std::max(mx, s[u]);
        }
        double sum = 0;
        for (size_t u = u0; u <= t; ++u)
          sum += (s[u] = std::exp(s[u] - mx));
        double* o = &out[(b * T + t) * H * D + hh * D];
        for (size_t u = u0; u <= t; ++u) {
          const double* vr = &v[(b * T + u) * vs + vo + kvh * D];
          for (size_t i = 0; i < D; ++i)
            o[i] += s[u] / sum * vr[i];
        }
      }
    }
  return layer(c, out, p, pre + "attn.proj", rows, H * D, C);
}

// The MLP's width, computed here rather than by GptConfig::mlpWidth: SwiGLU keeps a 4x GELU MLP's parameter
// count (2/3 of mlpMult * dim, rounded up to a multiple of 8) unless the width is given.
uint32_t hiddenOf(const model::GptConfig& c) {
  if (c.hidden) return c.hidden;
  const uint32_t h = c.mlpMult * c.dim;
  return c.mlp == model::MlpKind::Gelu ? h : (2 * h / 3 + 7) / 8 * 8;
}

Mat mlp(const model::GptConfig& c, const Mat& h, const ParamMap& p, const std::string& pre, size_t rows) {
  const size_t C = c.dim, hid = hiddenOf(c);
  Mat a;
  if (c.mlp == model::MlpKind::SwiGLU) {
    const Mat g = layer(c, h, p, pre + "mlp.gate", rows, C, hid);
    const Mat u = layer(c, h, p, pre + "mlp.up", rows, C, hid);
    a.resize(g.size());
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = ref::silu(g[i]) * u[i];
  } else {
    a = layer(c, h, p, pre + "mlp.fc", rows, C, hid);
    for (double& x : a)
      x = ref::gelu(x);
  }
  return layer(c, a, p, pre + "mlp.proj", rows, hid, C);
}

} // namespace

void ropeReference(double* row, uint32_t D, uint32_t t, bool inverse) {
  std::vector<double> freqs(D / 2);
  for (uint32_t i = 0; i < D / 2; ++i)
    freqs[i] = std::pow(10000.0, -2.0 * double(i) / double(D));
  ropeReference(row, freqs, t, inverse);
}

void ropeReference(double* row, const std::vector<double>& freqs, uint32_t t, bool inverse) {
  const size_t half = freqs.size();
  for (size_t i = 0; i < half; ++i) {
    const double theta = double(t) * freqs[i];
    // The GPU reads an f32 table; use the same rounded values.
    const double c = double(static_cast<float>(std::cos(theta)));
    const double s = double(static_cast<float>(std::sin(theta))) * (inverse ? -1.0 : 1.0);
    const double x1 = row[i], x2 = row[i + half];
    row[i] = x1 * c - x2 * s;
    row[i + half] = x2 * c + x1 * s;
  }
}

std::vector<double> gptReferenceLogits(const model::GptConfig& c, const ParamMap& p,
                                       const std::vector<int32_t>& tokens, uint32_t B, uint32_t T,
                                       const std::vector<int32_t>& positions) {
  const size_t C = c.dim, rows = size_t(B) * T, V = c.vocab;
  const auto& wte = get(p, "wte.weight");
  Mat x(rows * C);
  const std::vector<size_t> start = documentStarts(c, tokens, T, positions);
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < C; ++i) {
      x[r * C + i] = wte[size_t(tokens[r]) * C + i];
      if (!c.rope) x[r * C + i] += get(p, "wpe.weight")[(r % T - start[r]) * C + i];
    }
  for (uint32_t l = 0; l < c.layers; ++l) {
    const std::string pre = "blocks." + std::to_string(l) + ".";
    const Mat a = attention(c, norm(c, x, p, pre + "ln1", rows), p, pre, B, T, start);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] += a[i];
    const Mat m = mlp(c, norm(c, x, p, pre + "ln2", rows), p, pre, rows);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] += m[i];
  }
  const Mat xf = norm(c, x, p, "ln_f", rows);
  const auto& head = c.tiedHead ? wte : get(p, "lm_head.weight");
  Mat logits(rows * V, 0.0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t v = 0; v < V; ++v) {
      double s = 0;
      for (size_t i = 0; i < C; ++i)
        s += xf[r * C + i] * head[v * C + i];
      logits[r * V + v] = s;
    }
  return logits;
}

double gptReferenceLoss(const model::GptConfig& c, const ParamMap& p, const std::vector<int32_t>& tokens,
                        const std::vector<int32_t>& targets, uint32_t B, uint32_t T,
                        const std::vector<int32_t>& positions) {
  const std::vector<double> logits = gptReferenceLogits(c, p, tokens, B, T, positions);
  const size_t rows = size_t(B) * T, V = c.vocab;
  double total = 0;
  for (size_t r = 0; r < rows; ++r) {
    if (targets[r] < 0 || size_t(targets[r]) >= V) continue; // ignored: counts as 0
    double mx = -1e300;
    for (size_t v = 0; v < V; ++v)
      mx = std::max(mx, logits[r * V + v]);
    double sum = 0;
    for (size_t v = 0; v < V; ++v)
      sum += std::exp(logits[r * V + v] - mx);
    total += mx + std::log(sum) - logits[r * V + size_t(targets[r])];
  }
  return total / double(rows);
}

} // namespace helios::test
