#include "bench_attention.hpp"

#include "codegen/kernels/attention_coop.hpp"
#include "engine/core/half.hpp"
#include "engine/ops/attention.hpp"
#include "timing_executor.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <random>

namespace helios::bench {

namespace {

struct Shape {
  uint32_t B, H, Hkv, S, D; // Hkv: key/value heads (grouped-query attention when fewer than H)
  // The first row of query head `bh` (batch * H + head) and of the key/value head it reads.
  size_t qBase(size_t bh) const { return bh * S; }
  size_t kvBase(size_t bh) const { return (bh / H * Hkv + bh % H / (H / Hkv)) * S; }
};

// BxHxSxD, or BxHxHkvxSxD with Hkv key/value heads dividing H.
Shape parseShape(const std::string& s) {
  Shape x{};
  if (std::sscanf(s.c_str(), "%ux%ux%ux%ux%u", &x.B, &x.H, &x.Hkv, &x.S, &x.D) != 5) {
    x.D = 0;
    if (std::sscanf(s.c_str(), "%ux%ux%ux%u", &x.B, &x.H, &x.S, &x.D) != 4) x.D = 0;
    x.Hkv = x.H;
  }
  if (!x.B || !x.H || !x.Hkv || !x.S || !x.D || x.H % x.Hkv)
    throw std::invalid_argument("attention shape '" + s + "' is not BxHxSxD or BxHxHkvxSxD (Hkv dividing H)");
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
    const size_t bh = head(gen), i = row(gen), base = s.qBase(bh), kv = s.kvBase(bh);
    const size_t lim = causal ? i + 1 : s.S;
    double mx = -INFINITY, sum = 0;
    for (size_t j = 0; j < lim; ++j) {
      double d = 0;
      for (uint32_t c = 0; c < s.D; ++c)
        d += double(q[(base + i) * s.D + c]) * k[(kv + j) * s.D + c];
      mx = std::max(mx, p[j] = d * scale);
    }
    for (size_t j = 0; j < lim; ++j)
      sum += (p[j] = std::exp(p[j] - mx));
    double err = 0, norm = 1e-30;
    for (uint32_t c = 0; c < s.D; ++c) {
      double ref = 0;
      for (size_t j = 0; j < lim; ++j)
        ref += p[j] / sum * v[(kv + j) * s.D + c];
      const float got = o[(base + i) * s.D + c];
      err = std::max(err, std::isfinite(got) ? std::abs(got - ref) : INFINITY);
      norm = std::max(norm, std::abs(ref));
    }
    worst = std::max(worst, err / norm);
  }
  return worst;
}

// Registers, spills and shared memory of the coop passes the op runs for `shape` (key splits and delta
// included), as the driver reports them (VK_KHR_pipeline_executable_properties); empty where it reports
// nothing.
nlohmann::json coopPassStats(vk::Context& ctx, const ops::AttentionShape& shape) {
  nlohmann::json out = nlohmann::json::object();
  for (auto pass : {codegen::AttentionPass::Forward, codegen::AttentionPass::QueryGrad,
                    codegen::AttentionPass::KeyValueGrad}) {
    const auto p = ops::attentionCoopFor(ctx.device(), pass, shape);
    nlohmann::json stats = nlohmann::json::object();
    std::string line;
    for (const auto& st :
         ctx.pipelines().executableStats(ctx.pipelines().get(codegen::generateAttentionCoop(p))))
      if (st.name.find("Register") != std::string::npos || st.name.find("Spill") != std::string::npos ||
          st.name.find("Local Memory") != std::string::npos || st.name.find("Shared") != std::string::npos) {
        stats[st.name] = st.value;
        line += fmt::format(" {}={}", st.name, st.value);
      }
    if (!line.empty()) fmt::print("  {}:{}\n", p.name(), line);
    out[p.name()] = stats;
  }
  return out;
}

} // namespace

nlohmann::json benchAttention(vk::Context& ctx, const CommonOptions& common,
                              const AttentionBenchOptions& options) {
  nlohmann::json result = header(ctx, common, "attention");
  const codegen::Elem qkvType = codegen::parseElem(options.qkv, "--qkv");
  const bool coop = options.kernel == "coop", halfQkv = codegen::isHalf(qkvType);
  const codegen::Elem half = halfQkv ? qkvType : codegen::parseElem(options.half, "--half");
  if (halfQkv && !coop) throw std::invalid_argument("--qkv " + options.qkv + " needs --kernel coop");
  if (!codegen::isHalf(half)) throw std::invalid_argument("--half is a 16-bit kind (f16 or bf16)");
  const std::string kind = codegen::elemName(half);
  result["kernel"] =
      coop ? (halfQkv
                  ? "fused coop (KHR cooperative matrices; " + kind + " q, k, v; dO rounded to " + kind + ")"
                  : "fused coop (KHR cooperative matrices; q, k, v, dO rounded to " + kind + ")")
           : "fused fallback (f32, no cooperative matrices)";
  result["qkv"] = options.qkv;
  result["half"] = kind;
  const auto roundHalf = [half](float f) {
    return half == codegen::Elem::BF16 ? bf16ToFloat(floatToBf16(f)) : halfToFloat(floatToHalf(f));
  };
  const auto halfBits = [half](float f) {
    return half == codegen::Elem::BF16 ? floatToBf16(f) : floatToHalf(f);
  };
  nlohmann::json rows = nlohmann::json::array();
  std::mt19937_64 gen(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const auto random = [&](size_t n) {
    std::vector<float> x(n);
    for (float& e : x)
      e = dist(gen);
    return x;
  };
  const size_t nShapes = options.shapes.size(), passes = std::max<size_t>(options.passes, 1);
  for (size_t at = 0; at < passes * nShapes; ++at) {
    const std::string& text = options.shapes[at % nShapes];
    const bool recorded = at >= (passes - 1) * nShapes;
    const Shape s = parseShape(text);
    const size_t n = size_t(s.B) * s.H * s.S * s.D, nrows = size_t(s.B) * s.H * s.S;
    const size_t nkv = size_t(s.B) * s.Hkv * s.S * s.D;
    auto q = random(n), k = random(nkv), v = random(nkv), dO = random(n);
    // The coop kernels round q, k, v to their 16-bit kind as they stage them: hand them values that already
    // are, so the spot check's float64 reference sees exactly what the kernel reads.
    if (coop)
      for (auto* x : {&q, &k, &v})
        for (float& e : *x)
          e = roundHalf(e);
    const auto upload = [&](const std::vector<float>& x, const char* what) {
      auto b = ctx.buffer(x.size() * 4, what);
      ctx.uploadVector(b, x);
      return b;
    };
    const auto uploadQkv = [&](const std::vector<float>& x, const char* what) {
      if (!halfQkv) return upload(x, what);
      std::vector<uint16_t> h(x.size());
      std::transform(x.begin(), x.end(), h.begin(), halfBits);
      auto b = ctx.buffer(h.size() * 2, what);
      ctx.uploadVector(b, h);
      return b;
    };
    auto bq = uploadQkv(q, "q"), bk = uploadQkv(k, "k"), bv = uploadQkv(v, "v"), bdO = upload(dO, "dO");
    auto o = ctx.buffer(n * 4, "o"), lse = ctx.buffer(nrows * 4, "lse"), dq = ctx.buffer(n * 4, "dQ"),
         dk = ctx.buffer(nkv * 4, "dK"), dv = ctx.buffer(nkv * 4, "dV"),
         delta = ctx.buffer(nrows * 4, "delta");
    for (const std::string& mask : options.masks) {
      const bool causal = mask == "causal";
      ops::AttentionShape shape{s.B, s.H, s.Hkv, s.S, s.S, s.D, causal, float(1.0 / std::sqrt(double(s.D)))};
      shape.kernel = coop ? ops::AttentionKernel::Coop : ops::AttentionKernel::Fallback;
      shape.halfQkv = halfQkv;
      shape.half = half;
      const auto forward = [&](ops::Executor& e) {
        ops::attentionForward(e, bq.range(), bk.range(), bv.range(), o.range(), lse.range(), shape);
      };
      for (const std::string& mode : options.modes) {
        nlohmann::json row = {{"B", s.B}, {"H", s.H},         {"Hkv", s.Hkv}, {"S", s.S},
                              {"D", s.D}, {"causal", causal}, {"mode", mode}};
        try {
          const double us = timeMedianUs(ctx, common, [&](ops::Executor& e) {
            forward(e);
            if (mode == "fwdbwd")
              ops::attentionBackward(e, bq.range(), bk.range(), bv.range(), o.range(), lse.range(),
                                     bdO.range(), dq.range(), dk.range(), dv.range(), delta.range(), shape);
          });
          const double fwdFlops = 4.0 * s.B * s.H * double(s.S) * s.S * s.D * (causal ? 0.5 : 1.0);
          const double flops = mode == "fwdbwd" ? 3.5 * fwdFlops : fwdFlops;
          const double err =
              spotCheck(s, causal, shape.scale, q, k, v, ctx.downloadVector<float>(o, n), gen, 4);
          row["us"] = us;
          row["tflops"] = flops / (us * 1e-6) / 1e12;
          row["max_rel_error_sampled"] = err;
          // P is rounded to the 16-bit kind before its MulAdd: bf16's 8-bit significand, 8x f16's error.
          row["ok"] = err < (coop ? (half == codegen::Elem::BF16 ? 1.6e-2 : 2e-3) : 1e-4);
          fmt::print("attention {:<14} {:6} {:6} {:10.1f} us {:7.2f} TFLOP/s  err {:.1e}\n", text, mask, mode,
                     us, row["tflops"].get<double>(), err);
        } catch (const std::exception& e) {
          row["error"] = e.what();
          fmt::print("attention {} {} {}: {}\n", text, mask, mode, e.what());
        }
        if (recorded) rows.push_back(row);
      }
    }
  }
  result["results"] = rows;
  if (coop) {
    nlohmann::json stats = nlohmann::json::object(); // by kernel name: a kernel run at several shapes once
    for (const std::string& text : options.shapes)
      for (const std::string& mask : options.masks) {
        const Shape s = parseShape(text);
        ops::AttentionShape shape{s.B, s.H, s.Hkv, s.S, s.S, s.D, mask == "causal"};
        shape.halfQkv = halfQkv;
        shape.half = half;
        stats.update(coopPassStats(ctx, shape));
      }
    result["pipeline_stats"] = stats;
  }
  return result;
}

} // namespace helios::bench
