#include "bench_attention.hpp"

#include "engine/core/half.hpp"
#include "engine/ops/attention.hpp"
#include "timing_executor.hpp"

#include <cmath>
#include <fmt/format.h>
#include <random>

namespace helios::bench {

namespace {

struct Shape {
  uint32_t B, H, S, D;
};

Shape parseShape(const std::string& s) {
  Shape x{};
  if (std::sscanf(s.c_str(), "%ux%ux%ux%u", &x.B, &x.H, &x.S, &x.D) != 4 || !x.B || !x.H || !x.S || !x.D)
    throw std::invalid_argument("attention shape '" + s + "' is not BxHxSxD");
  return x;
}

// Largest relative error of `rows` random output rows against a float64 softmax(q k^T) v.
double spotCheck(const Shape& s, bool causal, float scale, const std::vector<float>& q,
                 const std::vector<float>& k, const std::vector<float>& v, const std::vector<float>& o,
                 std::mt19937_64& gen, int rows) {
  double worst = 0;
  std::uniform_int_distribution<uint32_t> head(0, s.B * s.H - 1), row(0, s.S - 1);
  std::vector<double> p(s.S);
  for (int r = 0; r < rows; ++r) {
    const size_t bh = head(gen), i = row(gen), base = bh * s.S;
    const size_t lim = causal ? i + 1 : s.S;
    double mx = -INFINITY, sum = 0;
    for (size_t j = 0; j < lim; ++j) {
      double d = 0;
      for (uint32_t c = 0; c < s.D; ++c)
        d += double(q[(base + i) * s.D + c]) * k[(base + j) * s.D + c];
      mx = std::max(mx, p[j] = d * scale);
    }
    for (size_t j = 0; j < lim; ++j)
      sum += (p[j] = std::exp(p[j] - mx));
    double err = 0, norm = 1e-30;
    for (uint32_t c = 0; c < s.D; ++c) {
      double ref = 0;
      for (size_t j = 0; j < lim; ++j)
        ref += p[j] / sum * v[(base + j) * s.D + c];
      const float got = o[(base + i) * s.D + c];
      err = std::max(err, std::isfinite(got) ? std::abs(got - ref) : INFINITY);
      norm = std::max(norm, std::abs(ref));
    }
    worst = std::max(worst, err / norm);
  }
  return worst;
}

} // namespace

nlohmann::json benchAttention(vk::Context& ctx, const CommonOptions& common,
                              const AttentionBenchOptions& options) {
  nlohmann::json result = header(ctx, common, "attention");
  const bool coop = options.kernel == "coop";
  result["kernel"] = coop ? "fused coop forward (f16 inputs, KHR cooperative matrices)"
                          : "fused fallback (f32, no cooperative matrices)";
  nlohmann::json rows = nlohmann::json::array();
  std::mt19937_64 gen(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const auto random = [&](size_t n) {
    std::vector<float> x(n);
    for (float& e : x)
      e = dist(gen);
    return x;
  };
  for (const std::string& text : options.shapes) {
    const Shape s = parseShape(text);
    const size_t n = size_t(s.B) * s.H * s.S * s.D, nrows = size_t(s.B) * s.H * s.S;
    const auto q = random(n), k = random(n), v = random(n), dO = random(n);
    const auto upload = [&](const std::vector<float>& x, const char* what) {
      auto b = ctx.buffer(x.size() * 4, what);
      ctx.uploadVector(b, x);
      return b;
    };
    auto bq = upload(q, "q"), bk = upload(k, "k"), bv = upload(v, "v"), bdO = upload(dO, "dO");
    // f16 copies for the coop path; the spot check then reads the f16-rounded values.
    auto qh = q, kh = k, vh = v;
    const auto uploadHalf = [&](std::vector<float>& x, const char* what) {
      std::vector<uint16_t> h(x.size());
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = halfToFloat(h[i] = floatToHalf(x[i]));
      auto b = ctx.buffer(std::max<size_t>(h.size() * 2, 16), what);
      ctx.uploadVector(b, h);
      return b;
    };
    vk::Buffer bq16, bk16, bv16;
    if (coop) {
      bq16 = uploadHalf(qh, "q16");
      bk16 = uploadHalf(kh, "k16");
      bv16 = uploadHalf(vh, "v16");
    }
    auto o = ctx.buffer(n * 4, "o"), lse = ctx.buffer(nrows * 4, "lse"), dq = ctx.buffer(n * 4, "dQ"),
         dk = ctx.buffer(n * 4, "dK"), dv = ctx.buffer(n * 4, "dV"), delta = ctx.buffer(nrows * 4, "delta");
    for (const std::string& mask : options.masks) {
      const bool causal = mask == "causal";
      const ops::AttentionShape shape{s.B, s.H, s.H,    s.S,
                                      s.S, s.D, causal, float(1.0 / std::sqrt(double(s.D)))};
      const auto forward = [&](ops::Executor& e) {
        if (coop)
          ops::attentionForwardCoop(e, bq16.range(), bk16.range(), bv16.range(), o.range(), lse.range(),
                                    shape);
        else
          ops::attentionForward(e, bq.range(), bk.range(), bv.range(), o.range(), lse.range(), shape);
      };
      for (const std::string& mode : options.modes) {
        nlohmann::json row = {{"B", s.B}, {"H", s.H},         {"S", s.S},
                              {"D", s.D}, {"causal", causal}, {"mode", mode}};
        try {
          if (coop && mode == "fwdbwd") throw std::invalid_argument("the coop path has no backward yet");
          const double us = timeMedianUs(ctx, common, [&](ops::Executor& e) {
            forward(e);
            if (mode == "fwdbwd")
              ops::attentionBackward(e, bq.range(), bk.range(), bv.range(), o.range(), lse.range(),
                                     bdO.range(), dq.range(), dk.range(), dv.range(), delta.range(), shape);
          });
          const double fwdFlops = 4.0 * s.B * s.H * double(s.S) * s.S * s.D * (causal ? 0.5 : 1.0);
          const double flops = mode == "fwdbwd" ? 3.5 * fwdFlops : fwdFlops;
          const double err = spotCheck(s, causal, shape.scale, coop ? qh : q, coop ? kh : k, coop ? vh : v,
                                       ctx.downloadVector<float>(o, n), gen, 4);
          row["us"] = us;
          row["tflops"] = flops / (us * 1e-6) / 1e12;
          row["max_rel_error_sampled"] = err;
          row["ok"] = err < (coop ? 2e-3 : 1e-4);
          fmt::print("attention {:<14} {:6} {:6} {:10.1f} us {:7.2f} TFLOP/s  err {:.1e}\n", text, mask, mode,
                     us, row["tflops"].get<double>(), err);
        } catch (const std::exception& e) {
          row["error"] = e.what();
          fmt::print("attention {} {} {}: {}\n", text, mask, mode, e.what());
        }
        rows.push_back(row);
      }
    }
  }
  result["results"] = rows;
  return result;
}

} // namespace helios::bench
