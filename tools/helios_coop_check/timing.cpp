// Timing: GPU timestamps around each dispatch (after warm-up), median of the repeats; every tiling (and a
// swizzled raster) at size^3, then the fastest tiling on a few other shapes, layouts and epilogues, and the
// tiled kernel as a baseline. Registers/spills per pipeline from VK_KHR_pipeline_executable_properties.
#include <algorithm>
#include <chrono>
#include <fmt/format.h>

#include "codegen/kernels/gemm_tiled.hpp"
#include "common.hpp"

namespace helios::coopcheck {

namespace {

struct Inputs {
  vk::Buffer a, b, c, bias;
};

template <class T> std::span<const std::byte> bytes(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

// Random f16 A and B big enough for every timed shape, C and bias in f32 (f16 kernels use the low half).
Inputs makeInputs(vk::Context& ctx, size_t elemsAB, size_t elemsC, size_t n) {
  Inputs in;
  in.a = ctx.buffer(elemsAB * 2, "timing A");
  in.b = ctx.buffer(elemsAB * 2, "timing B");
  in.c = ctx.buffer(elemsC * 4, "timing C");
  in.bias = ctx.buffer(n * 4, "timing bias");
  const auto h = toHalf(randomHalfs(elemsAB));
  ctx.upload(in.a, bytes(h));
  ctx.upload(in.b, bytes(h));
  ctx.upload(in.c, bytes(randomHalfs(elemsC)));
  ctx.upload(in.bias, bytes(randomHalfs(n)));
  return in;
}

double lastMinMs = 0; // fastest of the last timeDispatch's repeats

// Median milliseconds of `repeats` dispatches, each between two timestamps.
double timeDispatch(vk::Context& ctx, const vk::Pipeline& pipe, const std::vector<vk::BufferRange>& ranges,
                    const void* push, size_t pushBytes, vk::Groups groups, const Options& opt) {
  vk::CommandStream cs(ctx.device(), opt.repeats + 1);
  // Warm up for at least opt.warmupMs of wall time: an idle GPU's clocks ramp up under load, and a few
  // warm-up dispatches left the H100 reporting one kernel at anything from 60 to 300 TFLOP/s.
  const auto start = std::chrono::steady_clock::now();
  do {
    for (uint32_t w = 0; w < std::max(opt.warmup, 1u); ++w) {
      cs.dispatch(pipe, ranges, push, pushBytes, groups);
      cs.barrier();
    }
    cs.submitAndWait();
    cs.reset();
  } while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() <
           opt.warmupMs);
  cs.timestamp();
  for (uint32_t r = 0; r < opt.repeats; ++r) {
    cs.dispatch(pipe, ranges, push, pushBytes, groups);
    cs.barrier();
    cs.timestamp();
  }
  cs.submitAndWait();
  const auto ts = cs.timestampsNs();
  std::vector<double> ms;
  for (size_t i = 1; i < ts.size(); ++i)
    ms.push_back((ts[i] - ts[i - 1]) * 1e-6);
  std::sort(ms.begin(), ms.end());
  lastMinMs = ms.front();
  return ms[ms.size() / 2];
}

nlohmann::json statsJson(vk::Context& ctx, const vk::Pipeline& pipe, std::string& summary) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& s : ctx.pipelines().executableStats(pipe)) {
    j.push_back({{"executable", s.executable}, {"name", s.name}, {"value", s.value}});
    std::string lower = s.name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    if (lower.find("register") != std::string::npos || lower.find("spill") != std::string::npos ||
        lower.find("shared") != std::string::npos)
      summary += fmt::format(" {}={}", s.name, s.value);
  }
  return j;
}

struct Shape {
  uint32_t M, N, K, batch = 1;
  bool transA = false, transB = false, outF16 = false, epilogue = false;
};

} // namespace

void runTiming(vk::Context& ctx, const ops::CoopDeviceInfo& dev, const Options& opt, Report& report) {
  if (!dev.coopMatrix) {
    fmt::print("timing skipped: no cooperative matrices\n");
    return;
  }
  const uint32_t S = opt.size;
  const size_t maxAB = std::max<size_t>(size_t{S} * S, size_t{8192} * 8192);
  Inputs in = makeInputs(ctx, maxAB, maxAB, 16384);
  nlohmann::json timings = nlohmann::json::array();

  auto timeCoop = [&](codegen::GemmCoopParams p, const Shape& s, const std::string& label) -> double {
    p.transA = s.transA;
    p.transB = s.transB;
    p.storedC = s.outF16 ? codegen::Elem::F16 : codegen::Elem::F32;
    p.batched = s.batch > 1;
    p.alphaBeta = p.bias = p.gelu = s.epilogue;
    if (s.M % p.BM || s.N % p.BN || s.K % p.BK) return 0;
    try {
      p.validate();
      const vk::Pipeline& pipe =
          ctx.pipelines().get(p.cacheKey(), [&] { return codegen::generateGemmCoop(p); });
      const codegen::GemmCoopPush push{s.M,       s.N,       s.K,      1.0f, s.epilogue ? 0.5f : 0.0f,
                                       s.M * s.K, s.K * s.N, s.M * s.N};
      std::vector<vk::BufferRange> ranges{in.a.range(), in.b.range(), in.c.range()};
      if (p.bias) ranges.push_back(in.bias.range());
      const auto g = codegen::gemmCoopGroups(p, s.M, s.N, s.batch);
      const double ms = timeDispatch(ctx, pipe, ranges, &push, sizeof(push), {g.x, g.y, g.z}, opt);
      const double tflops = 2.0 * s.M * s.N * s.K * s.batch / (ms * 1e-3) / 1e12;
      std::string regs;
      nlohmann::json st = statsJson(ctx, pipe, regs);
      fmt::print("{:<30} {:<62} {:>5}x{:<5}x{:<5} b{:<2} {:8.3f} ms {:7.1f} TFLOP/s{}\n", label, p.name(),
                 s.M, s.N, s.K, s.batch, ms, tflops, regs);
      timings.push_back({{"label", label},
                         {"kernel", p.name()},
                         {"key", p.cacheKey()},
                         {"M", s.M},
                         {"N", s.N},
                         {"K", s.K},
                         {"batch", s.batch},
                         {"ms", ms},
                         {"tflops", tflops},
                         {"stats", st}});
      return tflops;
    } catch (const std::exception& e) {
      fmt::print("{:<30} {:<62} ERROR {}\n", label, p.name(), e.what());
      timings.push_back({{"label", label}, {"kernel", p.name()}, {"error", e.what()}});
      report.failures++;
      return 0;
    }
  };

  // 1. Every tiling at S^3 with each raster of --rasters (row-major, bands of 8 tile rows).
  const auto tilings = allTilings(dev, opt.explore, opt.onlyExplored);
  codegen::GemmCoopParams best = tilings.front();
  double bestTflops = 0;
  for (size_t t = 0; t < tilings.size(); ++t) {
    if (opt.quick && t > 3) break;
    for (uint32_t g : opt.rasters) {
      codegen::GemmCoopParams p = tilings[t];
      p.groupM = g;
      const double tf = timeCoop(p, {S, S, S}, "tiling sweep");
      if (tf > bestTflops) {
        bestTflops = tf;
        best = p;
      }
    }
  }
  // Shared-row padding of the fastest: none (bank conflicts) and twice the default (subgroup scope only:
  // the workgroup-scope kernel's staging belongs to the driver).
  for (uint32_t pad : best.workgroupScope ? std::vector<uint32_t>{} : std::vector<uint32_t>{0u, 16u}) {
    codegen::GemmCoopParams p = best;
    p.padA = p.padB = pad;
    const double tf = timeCoop(p, {S, S, S}, "padding sweep");
    if (tf > bestTflops) {
      bestTflops = tf;
      best = p;
    }
  }
  fmt::print("fastest tiling at {}^3: {} ({:.1f} TFLOP/s)\n", S, best.name(), bestTflops);
  report.json["fastest"] = {
      {"kernel", best.name()}, {"key", best.cacheKey()}, {"tflops", bestTflops}, {"size", S}};
  if (opt.onlyExplored) {
    report.json["timings"] = timings;
    return;
  }

  // 2. The fastest on other shapes, layouts and epilogues.
  const std::vector<Shape> shapes = {{S, S, S, 1, true, false},
                                     {S, S, S, 1, false, true},
                                     {S, S, S, 1, false, false, true},
                                     {S, S, S, 1, false, false, false, true},
                                     {8192, 8192, 8192},
                                     {2048, 2048, 2048},
                                     {1024, 1024, 1024},
                                     {4096, 4096, 1024},
                                     {4096, 11008, 4096},
                                     {1024, 1024, 1024, 16}};
  for (const Shape& s : shapes) {
    if (opt.quick && s.M == 8192) continue;
    if (uint64_t{s.M} * s.K * s.batch > maxAB || uint64_t{s.K} * s.N * s.batch > maxAB ||
        uint64_t{s.M} * s.N * s.batch > maxAB)
      continue;
    timeCoop(best, s, "fastest on shape");
    if (s.M <= 2048 && s.batch == 1) {
      for (const auto& t : tilings)
        if (t.BM == 64 && t.BN == 64) {
          timeCoop(t, s, "64x64 on shape");
          break;
        }
    }
  }

  // 3. The tiled kernel (f16 in, f32 out) as a baseline at S^3.
  try {
    ops::MatmulArgs args;
    args.a = in.a.range();
    args.b = in.b.range();
    args.c = in.c.range();
    args.M = args.N = args.K = S;
    args.aType = codegen::Elem::F16;
    const auto limits = ops::gemmDeviceLimits(ctx.device());
    const codegen::GemmTiledParams tp = ops::matmulTiledParams(args, limits);
    const vk::Pipeline& pipe =
        ctx.pipelines().get(tp.cacheKey(), [&] { return codegen::generateGemmTiled(tp, limits); });
    const codegen::GemmCoopPush push{S, S, S, 1.0f, 0.0f, 0, 0, 0};
    const vk::Groups groups{(S + tp.tile.BN - 1) / tp.tile.BN, (S + tp.tile.BM - 1) / tp.tile.BM, 1};
    const double ms = timeDispatch(ctx, pipe, {in.a.range(), in.b.range(), in.c.range()}, &push,
                                   pipe.pushConstantBytes, groups, opt);
    const double tflops = 2.0 * S * S * S / (ms * 1e-3) / 1e12;
    fmt::print("{:<30} {:<62} {:>5}x{:<5}x{:<5} b1  {:8.3f} ms {:7.1f} TFLOP/s\n", "tiled baseline",
               tp.name(), S, S, S, ms, tflops);
    timings.push_back({{"label", "tiled baseline"},
                       {"kernel", tp.name()},
                       {"M", S},
                       {"N", S},
                       {"K", S},
                       {"batch", 1},
                       {"ms", ms},
                       {"tflops", tflops}});
  } catch (const std::exception& e) {
    fmt::print("tiled baseline: ERROR {}\n", e.what());
  }
  report.json["timings"] = timings;
}

} // namespace helios::coopcheck
