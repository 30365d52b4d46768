// GEMM throughput: every (shape, layout, tiling) timed with GPU timestamps around each matmul() call, median
// of the repeats, and spot-checked against float64 dot products so a fast wrong kernel never reports a
// number.
#include "bench_gemm.hpp"

#include "engine/core/half.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "timing_executor.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <random>

namespace helios::bench {

namespace {

struct Shape {
  uint32_t M, N, K;
};

Shape parseShape(const std::string& s) {
  Shape shape{};
  if (std::sscanf(s.c_str(), "%ux%ux%u", &shape.M, &shape.N, &shape.K) != 3 || !shape.M || !shape.N ||
      !shape.K)
    throw std::invalid_argument("shape '" + s + "' is not MxNxK");
  return shape;
}

// What matmul() dispatches for `args` and the driver's statistics for it (registers, spills, shared
// memory): the coop kernel the policy plans (auto/coop), else "tiled" and no statistics.
struct KernelInfo {
  std::string name;
  nlohmann::json stats = nlohmann::json::array();
};
KernelInfo kernelInfo(vk::Context& ctx, const ops::MatmulArgs& args) {
  const auto tiled = [&] { return "tiled " + ops::matmulTiledPlan(args, ctx.device()).tile.str(); };
  const ops::CoopDeviceInfo dev = ops::coopDeviceInfo(ctx.device());
  if (args.kernel == ops::MatmulKernel::Tiled || args.tile || !dev.coopMatrix) return {tiled()};
  const ops::CoopPlan plan = ops::planMatmulCoop(args, dev, &ops::deviceTuning(ctx.device()));
  if (!ops::isCoop(plan.decision)) return {tiled() + " (" + plan.reason + ")"};
  const codegen::GemmCoopParams p = ops::coopKernelParams(plan, args);
  KernelInfo info{p.name() + " (" + ops::coopDecisionName(plan.decision) +
                  (plan.splitK > 1 ? ", split K " + std::to_string(plan.splitK) : "") + ")"};
  const vk::Pipeline& pipe = ctx.pipelines().get(p.cacheKey(), [&] { return codegen::generateGemmCoop(p); });
  for (const auto& st : ctx.pipelines().executableStats(pipe))
    info.stats.push_back({{"executable", st.executable}, {"name", st.name}, {"value", st.value}});
  return info;
}

uint16_t toBits(codegen::Elem type, float v) {
  return type == codegen::Elem::BF16 ? floatToBf16(v) : floatToHalf(v);
}
float fromBits(codegen::Elem type, uint16_t h) {
  return type == codegen::Elem::BF16 ? bf16ToFloat(h) : halfToFloat(h);
}

// Fills a host array with uniform [-1, 1) values in the storage type; returns the values as floats too.
std::vector<float> randomOperand(size_t n, std::mt19937_64& gen, codegen::Elem type,
                                 std::vector<std::byte>& bytes) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(n);
  bytes.resize(n * codegen::elemBytes(type));
  for (size_t i = 0; i < n; ++i) {
    float v = dist(gen);
    if (codegen::isHalf(type)) {
      const uint16_t h = toBits(type, v);
      v = fromBits(type, h);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    } else {
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    }
    values[i] = v;
  }
  return values;
}

} // namespace

nlohmann::json benchGemm(vk::Context& ctx, const CommonOptions& common, const GemmBenchOptions& options) {
  auto result = header(ctx, common, "gemm");
  result["dtype"] = options.dtype;
  result["out"] = options.out;
  result["kernel"] = options.kernel;
  nlohmann::json rows = nlohmann::json::array();
  const codegen::Elem in = codegen::parseElem(options.dtype, "--dtype");
  const codegen::Elem out = codegen::parseElem(options.out, "--out");
  if (codegen::isHalf(in) && codegen::isHalf(out) && in != out)
    throw std::invalid_argument("helios-bench gemm: --out " + options.out + " with --dtype " + options.dtype +
                                ": a 16-bit C is the operands' kind");
  std::mt19937_64 gen(12345);

  for (const auto& shapeText : options.shapes) {
    const Shape s = parseShape(shapeText);
    std::vector<std::byte> aBytes, bBytes;
    auto aVals = randomOperand(size_t(s.M) * s.K, gen, in, aBytes);
    auto bVals = randomOperand(size_t(s.K) * s.N, gen, in, bBytes);
    auto a = ctx.buffer(aBytes.size(), "bench A"), b = ctx.buffer(bBytes.size(), "bench B");
    auto c = ctx.buffer(size_t(s.M) * s.N * codegen::elemBytes(out), "bench C");
    ctx.upload(a, aBytes);
    ctx.upload(b, bBytes);

    for (const auto& layout : options.layouts) {
      for (const auto& tileText : options.tiles) {
        ops::MatmulArgs args;
        args.a = a.range();
        args.b = b.range();
        args.c = c.range();
        args.M = s.M;
        args.N = s.N;
        args.K = s.K;
        args.transA = layout[0] == 't';
        args.transB = layout[1] == 't';
        args.aType = in;
        args.outType = out;
        args.kernel = options.kernel == "coop"    ? ops::MatmulKernel::Coop
                      : options.kernel == "tiled" ? ops::MatmulKernel::Tiled
                                                  : ops::MatmulKernel::Auto;
        if (tileText != "auto") args.tile = codegen::GemmTile::parse(tileText);
        args.beta = options.beta;

        nlohmann::json row = {{"M", s.M}, {"N", s.N}, {"K", s.K}, {"layout", layout}, {"tile", tileText}};
        try {
          const double us = timeMedianUs(ctx, common, [&](ops::Executor& e) { ops::matmul(e, args); });
          const double tflops = 2.0 * s.M * s.N * s.K / (us * 1e-6) / 1e12;

          // Spot check: A and B hold the same data in every layout (read as op(A), op(B) via the strides).
          std::vector<std::byte> cBytes(c.size());
          ctx.download(c, cBytes);
          double worst = 0, refNorm = 0;
          std::uniform_int_distribution<uint32_t> pi(0, s.M - 1), pj(0, s.N - 1);
          for (uint32_t t = 0; t < (options.beta != 0.0f ? 0 : options.samples); ++t) {
            uint32_t i = pi(gen), j = pj(gen);
            double ref = 0;
            for (uint32_t k = 0; k < s.K; ++k) {
              double av = args.transA ? aVals[size_t(k) * s.M + i] : aVals[size_t(i) * s.K + k];
              double bv = args.transB ? bVals[size_t(j) * s.K + k] : bVals[size_t(k) * s.N + j];
              ref += av * bv;
            }
            float got;
            if (codegen::isHalf(out)) {
              uint16_t h;
              std::memcpy(&h, cBytes.data() + 2 * (size_t(i) * s.N + j), 2);
              got = fromBits(out, h);
            } else {
              std::memcpy(&got, cBytes.data() + 4 * (size_t(i) * s.N + j), 4);
            }
            worst = std::max(worst, std::isfinite(got) ? std::abs(got - ref) : INFINITY);
            refNorm = std::max(refNorm, std::abs(ref));
          }
          const double relErr = worst / std::max(refNorm, 1e-30);
          row["us"] = us;
          row["tflops"] = tflops;
          const KernelInfo kernel = kernelInfo(ctx, args);
          row["kernel_name"] = kernel.name;
          row["kernel_stats"] = kernel.stats;
          const bool checked = options.beta == 0.0f; // with beta, every run accumulated into C
          row["max_rel_error_sampled"] = checked ? nlohmann::json(relErr) : nlohmann::json();
          if (!checked) row["beta"] = options.beta;
          // A 16-bit C rounds each element once: half an ulp, 2^-9 relative for bf16 (3e-2 with the sums).
          row["ok"] = !checked || relErr < (out == codegen::Elem::BF16                    ? 3e-2
                                            : codegen::isHalf(in) || codegen::isHalf(out) ? 5e-3
                                                                                          : 1e-4);
          fmt::print("gemm {:>5}x{:<5}x{:<5} {} {} {:<24} {:9.1f} us {:7.2f} TFLOP/s  {}{}\n", s.M, s.N, s.K,
                     layout, options.dtype, tileText, us, tflops,
                     checked ? fmt::format("err {:.1e}", relErr) : std::string("unchecked (beta)"),
                     row["ok"].get<bool>() ? "" : "  WRONG");
        } catch (const std::exception& e) {
          row["error"] = e.what();
          fmt::print("gemm {}x{}x{} {} {}: {}\n", s.M, s.N, s.K, layout, tileText, e.what());
        }
        rows.push_back(row);
      }
    }
  }
  result["results"] = rows;
  return result;
}

} // namespace helios::bench
