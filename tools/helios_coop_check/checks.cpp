// Numerics and determinism: every tiling and every variant/epilogue against a float64 reference (relative
// Frobenius error <= 2e-3), outputs poisoned first, fresh random data per case, 3 bit-identical runs per
// case, odd shapes through the policy (padded / rewrite / fallback), and a stress run of repeated dispatches.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fmt/format.h>

#include "common.hpp"
#include "engine/core/half.hpp"
#include "engine/ops/coop_stats.hpp"
#include "engine/ops/device_tuning.hpp"

namespace helios::coopcheck {

namespace {
constexpr double kTolerance = 2e-3;
} // namespace

std::mt19937_64& rng() {
  static std::mt19937_64 g(0);
  return g;
}

std::vector<float> randomHalfs(size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v)
    x = halfToFloat(floatToHalf(d(rng())));
  return v;
}

std::vector<double> referenceGemm(const Case& c, const std::vector<float>& a, const std::vector<float>& b,
                                  const std::vector<float>& bias, const std::vector<float>& c0) {
  const size_t M = c.M, N = c.N, K = c.K;
  std::vector<double> out(c.batch * M * N);
  std::vector<double> opA(M * K), opB(K * N), row(N);
  for (size_t p = 0; p < c.batch; ++p) {
    const float* A = a.data() + p * M * K;
    const float* B = b.data() + (c.sharedB ? 0 : p * K * N);
    for (size_t i = 0; i < M; ++i)
      for (size_t k = 0; k < K; ++k)
        opA[i * K + k] = c.transA ? A[k * M + i] : A[i * K + k];
    for (size_t k = 0; k < K; ++k)
      for (size_t j = 0; j < N; ++j)
        opB[k * N + j] = c.transB ? B[j * K + k] : B[k * N + j];
    for (size_t i = 0; i < M; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      for (size_t k = 0; k < K; ++k) {
        const double x = opA[i * K + k];
        const double* bk = &opB[k * N];
        for (size_t j = 0; j < N; ++j)
          row[j] += x * bk[j];
      }
      for (size_t j = 0; j < N; ++j) {
        double v = c.alpha * row[j];
        if (c.beta != 0.0f) v += c.beta * static_cast<double>(c0[p * M * N + i * N + j]);
        if (c.bias) v += bias[j];
        if (c.gelu) v = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
        out[p * M * N + i * N + j] = v;
      }
    }
  }
  return out;
}

double relFrobenius(const std::vector<float>& out, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::isnan(out[i])) return INFINITY;
    const double d = out[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

namespace {

template <class T> std::span<const std::byte> bytes(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

// Runs one case `runs` times on fresh random data; returns the JSON record.
nlohmann::json runCase(vk::Context& ctx, const ops::CoopDeviceInfo& dev, const Options& opt, const Case& c,
                       uint32_t runs, Report& report) {
  const size_t M = c.M, N = c.N, K = c.K, batch = c.batch;
  const auto a = randomHalfs(batch * M * K);
  const auto b = randomHalfs((c.sharedB ? 1 : batch) * K * N);
  const auto bias = c.bias ? randomHalfs(N) : std::vector<float>{};
  const auto c0 = c.beta != 0.0f ? randomHalfs(batch * M * N) : std::vector<float>{};
  const size_t outBytes = c.outF16 ? 2 : 4;
  vk::Buffer ba = ctx.buffer(a.size() * 2, "check A"), bb = ctx.buffer(b.size() * 2, "check B");
  vk::Buffer bc = ctx.buffer(batch * M * N * outBytes, "check C");
  vk::Buffer bbias = ctx.buffer(std::max<size_t>(N, 1) * outBytes, "check bias");
  ctx.upload(ba, bytes(toHalf(a)));
  ctx.upload(bb, bytes(toHalf(b)));
  if (c.bias) {
    if (c.outF16)
      ctx.upload(bbias, bytes(toHalf(bias)));
    else
      ctx.upload(bbias, bytes(bias));
  }
  // C before each run: C0 when beta reads it, else poison (0x7fc0dead / f16 NaN 0x7e5a).
  std::vector<std::byte> cInit(batch * M * N * outBytes);
  if (c.beta != 0.0f) {
    if (c.outF16)
      std::memcpy(cInit.data(), toHalf(c0).data(), cInit.size());
    else
      std::memcpy(cInit.data(), c0.data(), cInit.size());
  } else if (c.outF16) {
    const uint16_t p = 0x7e5a;
    for (size_t i = 0; i < batch * M * N; ++i)
      std::memcpy(cInit.data() + 2 * i, &p, 2);
  } else {
    const uint32_t p = 0x7fc0dead;
    for (size_t i = 0; i < batch * M * N; ++i)
      std::memcpy(cInit.data() + 4 * i, &p, 4);
  }

  ops::MatmulArgs args;
  args.a = ba.range();
  args.b = bb.range();
  args.c = bc.range();
  if (c.bias) args.bias = bbias.range();
  args.M = c.M;
  args.N = c.N;
  args.K = c.K;
  args.batch = c.batch;
  args.transA = c.transA;
  args.transB = c.transB;
  args.alpha = c.alpha;
  args.beta = c.beta;
  args.gelu = c.gelu;
  args.aType = codegen::Elem::F16;
  args.outType = c.outF16 ? codegen::Elem::F16 : codegen::Elem::F32;
  if (c.sharedB) args.strideB = 0;
  ops::CoopRunOptions ro;
  ro.device = dev;
  ro.tiledInner = opt.tiledInner;
  ro.tiling = c.tiling;
  // The case's policy fields where the device's record leaves them at their defaults.
  ro.tuning = ops::deviceTuning(ctx.device());
  tuning::GemmTuning& g = ro.tuning->gemm;
  g.bounded.preset(c.padOnly ? tuning::BoundedMode::Never : tuning::BoundedMode::Policy);
  g.crosswiseA.preset(!c.alongRows);
  g.crosswiseB.preset(!c.alongRows);
  g.boundedMinFlops.preset(0); // the odd shapes here are small: bounded unless padded within the cap
  g.boundedMaxFlops.preset(1e10);

  nlohmann::json rec = {{"name", c.name},
                        {"M", c.M},
                        {"N", c.N},
                        {"K", c.K},
                        {"batch", c.batch},
                        {"layout", std::string(c.transA ? "t" : "n") + (c.transB ? "t" : "n")},
                        {"out", c.outF16 ? "f16" : "f32"},
                        {"alpha", c.alpha},
                        {"beta", c.beta},
                        {"bias", c.bias},
                        {"gelu", c.gelu},
                        {"runs", runs}};
  std::vector<std::byte> first;
  bool identical = true;
  std::string error;
  ops::CoopPlan plan;
  try {
    ops::ImmediateExecutor exec(ctx);
    for (uint32_t r = 0; r < runs; ++r) {
      ctx.upload(bc, cInit);
      if (c.viaMatmul) {
        plan = ops::planMatmul(ops::matmulProblem(args), dev);
        ops::matmul(exec, args);
      } else {
        plan = ops::matmulCoop(exec, args, ro);
      }
      exec.flush();
      std::vector<std::byte> out(cInit.size());
      ctx.download(bc, out);
      if (r == 0)
        first = std::move(out);
      else if (std::memcmp(first.data(), out.data(), out.size()) != 0)
        identical = false;
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  double err = INFINITY;
  if (error.empty()) {
    std::vector<float> got(batch * M * N);
    if (c.outF16) {
      std::vector<uint16_t> h(got.size());
      std::memcpy(h.data(), first.data(), first.size());
      got = fromHalf(h);
    } else {
      std::memcpy(got.data(), first.data(), first.size());
    }
    err = relFrobenius(got, referenceGemm(c, a, b, bias, c0));
  }
  const std::string decision = error.empty() ? ops::coopDecisionName(plan.decision) : "error";
  const bool decisionOk = c.expect.empty() || c.expect == decision;
  const bool pass = error.empty() && err <= kTolerance && identical && decisionOk;
  rec["decision"] = decision;
  rec["reason"] = error.empty() ? plan.reason : error;
  if (error.empty() && ops::isCoop(plan.decision)) rec["kernel"] = ops::coopKernelParams(plan, args).name();
  rec["rel_error"] = std::isfinite(err) ? nlohmann::json(err) : nlohmann::json("inf");
  rec["bit_identical"] = identical;
  rec["pass"] = pass;
  (pass ? report.passes : report.failures)++;
  fmt::print("{} {:<44} {:>5}x{:<5}x{:<5} b{:<2} {:<20} err={:.2e} {}{}\n", pass ? "PASS" : "FAIL", c.name,
             c.M, c.N, c.K, c.batch, decision, err, identical ? "bit-identical" : "NOT bit-identical",
             decisionOk ? "" : " (expected " + c.expect + ")");
  if (!error.empty()) fmt::print("     error: {}\n", error);
  return rec;
}

} // namespace

std::vector<codegen::GemmCoopParams> allTilings(const ops::CoopDeviceInfo& dev, bool explore,
                                                bool onlyExplored) {
  if (onlyExplored) return explorationTilings(dev);
  auto out = codegen::gemmCoopWorkgroupTilings(dev.workgroupShapes, dev.subgroupSize);
  std::erase_if(out, [&](const codegen::GemmCoopParams& p) {
    return std::max({p.BM, p.BN, p.BK}) > dev.workgroupMaxDimension;
  });
  for (const auto& p :
       codegen::gemmCoopTilings(dev.coopM ? dev.coopM : 16, dev.coopN ? dev.coopN : 16,
                                dev.coopK ? dev.coopK : 16, dev.maxSharedBytes, dev.subgroupSize))
    out.push_back(p);
  if (explore)
    for (const auto& p : explorationTilings(dev))
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  return out;
}

std::vector<codegen::GemmCoopParams> explorationTilings(const ops::CoopDeviceInfo& dev) {
  std::vector<codegen::GemmCoopParams> out;
  const auto keep = [&](codegen::GemmCoopParams p) {
    try {
      p.validate();
      if (std::max({p.BM, p.BN, p.BK}) <= dev.workgroupMaxDimension) out.push_back(p);
    } catch (const std::invalid_argument&) {
    }
  };
  // coopmat2: the largest tiles over K slices of 16 to 64 and 2 to 16 slices per loop trip (the driver stages
  // the slices itself, so these set how deep it can pipeline within 48 KiB).
  const auto wg = codegen::gemmCoopWorkgroupTilings(dev.workgroupShapes, dev.subgroupSize);
  if (!wg.empty())
    for (auto [bm, bn] : {std::pair{128u, 256u}, {256u, 128u}, {128u, 128u}})
      for (uint32_t bk : {16u, 32u, 64u})
        for (uint32_t u : {2u, 4u, 8u, 16u}) {
          codegen::GemmCoopParams p = wg.front(); // tensor layouts, the 256-invocation shape
          p.BM = bm;
          p.BN = bn;
          p.BK = bk;
          p.unroll = u;
          keep(p);
        }
  // Subgroup scope with copy subgroups: {BM, BN, BK, sgRows, sgCols, producers}, double-buffered.
  struct T {
    uint32_t BM, BN, BK, sgRows, sgCols, producers;
  };
  for (const T& t : {T{128, 128, 32, 2, 2, 4}, T{128, 128, 32, 2, 2, 2}, T{128, 128, 32, 2, 2, 1},
                     T{128, 128, 16, 2, 2, 4}, T{128, 128, 32, 2, 4, 2}, T{128, 128, 32, 2, 4, 4},
                     T{256, 128, 16, 4, 2, 4}, T{128, 256, 16, 2, 4, 4}, T{256, 128, 16, 4, 2, 2}}) {
    codegen::GemmCoopParams p =
        codegen::gemmCoopDefault(dev.coopM ? dev.coopM : 16, dev.coopN ? dev.coopN : 16,
                                 dev.coopK ? dev.coopK : 16, dev.maxSharedBytes, dev.subgroupSize);
    p.setTiling({t.BM, t.BN, t.BK, t.sgRows, t.sgCols, 2}).producers = t.producers;
    keep(p);
  }
  return out;
}

void runChecks(vk::Context& ctx, const ops::CoopDeviceInfo& dev, const Options& opt, Report& report) {
  rng().seed(opt.seed);
  std::vector<Case> cases;
  const bool direct = dev.coopMatrix && !opt.tiledInner;
  const auto tilings = allTilings(dev, opt.explore, opt.onlyExplored);
  if (direct) {
    // Every tiling, NN and a TN/NT with the full epilogue, K with an odd number of steps (double buffering).
    for (size_t t = 0; t < tilings.size(); ++t) {
      if (opt.quick && t > 2) break;
      const auto& p = tilings[t];
      const std::string tn =
          fmt::format("{}x{}x{}_sg{}x{}_s{}", p.BM, p.BN, p.BK, p.sgRows, p.sgCols, p.stages);
      cases.push_back({"tiling " + tn, 2 * p.BM, 3 * p.BN, 5 * p.BK});
      cases.back().tiling = p;
      Case full{"tiling " + tn + " tn+ab+bias+gelu",
                2 * p.BM,
                2 * p.BN,
                3 * p.BK,
                2,
                true,
                false,
                false,
                true,
                true};
      full.alpha = 0.75f;
      full.beta = -0.5f;
      full.tiling = p;
      cases.push_back(full);
      if (t == 0) {
        codegen::GemmCoopParams g = p;
        g.groupM = 8;
        cases.push_back({"tiling " + tn + " groupM=8", 9 * p.BM, 3 * p.BN, 2 * p.BK});
        cases.back().tiling = g;
      }
    }
    // Every layout x epilogue on the default tiling (the policy's choice at these aligned shapes).
    const char* layouts[] = {"nn", "nt", "tn", "tt"};
    for (int l = 0; l < 4; ++l)
      for (int e = 0; e < (opt.quick ? 3 : 7); ++e) {
        Case c{fmt::format("{} ", layouts[l]), 256, 384, 320};
        c.transA = l & 2;
        c.transB = l & 1;
        c.expect = c.transA ? "transposed_a_direct" : "direct";
        switch (e) {
        case 0:
          c.name += "plain";
          break;
        case 1:
          c.name += "alpha/beta", c.alpha = 1.5f, c.beta = 0.25f;
          break;
        case 2:
          c.name += "bias+gelu f16", c.bias = c.gelu = c.outF16 = true;
          break;
        case 3:
          c.name += "bias", c.bias = true;
          break;
        case 4:
          c.name += "gelu", c.gelu = true;
          break;
        case 5:
          c.name += "f16 out alpha/beta", c.outF16 = true, c.alpha = -1.0f, c.beta = 2.0f;
          break;
        case 6:
          c.name += "batched 3 ab+bias+gelu", c.batch = 3, c.alpha = 0.5f, c.beta = 1.0f,
                                              c.bias = c.gelu = true;
        }
        cases.push_back(c);
      }
  }
  // Odd shapes through the policy: bounded (policy allowing the bounded kernel), then the same shapes padded
  // (the default policy), padded batched, rewrite, fallback (numbers checked either way).
  const bool coop = opt.tiledInner || dev.coopMatrix;
  const std::string padded = coop ? "padded" : "fallback";
  const std::string paddedB = coop ? "padded_batched" : "fallback";
  const std::string bounded = coop ? "bounded" : "fallback";
  auto odd = [&](std::string name, uint32_t M, uint32_t N, uint32_t K, uint32_t batch, std::string expect) {
    Case c{std::move(name), M, N, K, batch};
    c.expect = std::move(expect);
    c.padOnly = c.expect == padded || c.expect == paddedB;
    return c;
  };
  {
    Case c = odd("odd 511x513x257 (padded: over the cap)", 511, 513, 257, 1, "fallback");
    c.padOnly = true;
    cases.push_back(c);
  }
  for (const bool pad : {false, true}) {
    const std::string p = pad ? padded : bounded, pb = pad ? paddedB : bounded;
    const std::string how = pad ? " padded" : " bounded";
    if (!pad) {
      cases.push_back(odd("odd 511x513x257" + how, 511, 513, 257, 1, p));
      Case c =
          odd("odd 7x33x127 tt ab+bias+gelu" + how, 7, 33, 127, 1, "fallback"); // under the 2 MFLOP floor
      c.transA = c.transB = c.bias = c.gelu = true, c.alpha = 0.5f, c.beta = 2.0f;
      cases.push_back(c);
      c = odd("odd 127x513x33 nt f16 bias" + how, 127, 513, 33, 1, p);
      c.transB = c.outF16 = c.bias = true;
      cases.push_back(c);
      c = odd("odd 513x127x1001 tn ab" + how, 513, 127, 1001, 1, p);
      c.transA = true, c.alpha = -1.0f, c.beta = 0.25f;
      cases.push_back(c);
      // K cut in slices inside the dispatch (few tiles, long K): 16 slices with the whole epilogue, 16 on a
      // TN f16 problem whose last slice is short, and 4 forced on 9 K steps (the last slice empty).
      c = odd("odd 65x384x16384 ab+bias+gelu K-sliced" + how, 65, 384, 16384, 1, p);
      c.alpha = 0.5f, c.beta = 1.0f, c.bias = c.gelu = true;
      cases.push_back(c);
      c = odd("odd 100x200x3001 tn f16 K-sliced" + how, 100, 200, 3001, 1, p);
      c.transA = c.outF16 = true;
      cases.push_back(c);
      c = odd("odd 511x513x257 nt 4 K slices, the last empty" + how, 511, 513, 257, 1, p);
      c.transB = true;
      c.tiling = codegen::GemmCoopParams{}.setTiling({64, 64, 32, 2, 2, 2});
      c.tiling->kSlices = 4;
      cases.push_back(c);
      c = odd("odd batched 3x129x65x97 tt f16 ab+gelu" + how, 129, 65, 97, 3, p);
      c.transA = c.transB = c.outF16 = c.gelu = true, c.alpha = 1.5f, c.beta = 1.0f;
      cases.push_back(c);
      // Aligned, on the 64x64 tile with K steps of 64: in 8 K slices, and whole with an epilogue on TN.
      c = odd("aligned 256x256x4096 ab+bias K-sliced 64x64x64", 256, 256, 4096, 1,
              coop ? "direct" : "fallback");
      c.alpha = 0.5f, c.beta = 1.0f, c.bias = true;
      cases.push_back(c);
      c = odd("aligned 512x512x1024 tn f16 gelu 64x64x64", 512, 512, 1024, 1,
              coop ? "transposed_a_direct" : "fallback");
      c.transA = c.outF16 = c.gelu = true;
      cases.push_back(c);
      // The scalar copies above read crosswise; these read along rows.
      c = odd("odd 511x513x257 copies along rows" + how, 511, 513, 257, 1, p);
      c.alongRows = true;
      cases.push_back(c);
      c = odd("odd batched 3x129x65x97 tt f16 ab+gelu copies along rows" + how, 129, 65, 97, 3, p);
      c.transA = c.transB = c.outF16 = c.gelu = c.alongRows = true, c.alpha = 1.5f, c.beta = 1.0f;
      cases.push_back(c);
      // Every size a multiple of 8: the bounded kernel copies 16-byte vectors (boundedVectors; the 1000^3
      // cases below take them too).
      c = odd("odd 1000x520x264 tn f16 ab+bias+gelu vector copies" + how, 1000, 520, 264, 1, p);
      c.transA = c.outF16 = c.bias = c.gelu = true, c.alpha = 0.5f, c.beta = 1.0f;
      cases.push_back(c);
      c = odd("odd 104x200x3000 nt K-sliced vector copies" + how, 104, 200, 3000, 1, p);
      c.transB = true;
      cases.push_back(c);
      c = odd("odd batched 3x136x72x96 tt f16 ab+gelu vector copies" + how, 136, 72, 96, 3, p);
      c.transA = c.transB = c.outF16 = c.gelu = true, c.alpha = 1.5f, c.beta = 1.0f;
      cases.push_back(c);
      // Over a wave of 128x128 tiles (the single-stage tiling), edges in M, N and K.
      c = odd("odd 3000x1000x264 nt ab+bias+gelu vector copies" + how, 3000, 1000, 264, 1, p);
      c.transB = c.bias = c.gelu = true, c.alpha = 0.5f, c.beta = 1.0f;
      cases.push_back(c);
      c = odd("odd batched 2x1400x1000x200 tn f16 vector copies" + how, 1400, 1000, 200, 2, p);
      c.transA = c.outF16 = true;
      cases.push_back(c);
    }
    cases.push_back(odd("odd 1000x1000x1000" + how, 1000, 1000, 1000, 1, p));
    Case c = odd("odd 1000x1000x1000 ab+bias+gelu" + how, 1000, 1000, 1000, 1, p);
    c.alpha = 0.5f, c.beta = -1.0f, c.bias = c.gelu = true;
    cases.push_back(c);
    c = odd("odd 1000x1000x1000 tn f16 bias+gelu" + how, 1000, 1000, 1000, 1, p);
    c.transA = true, c.outF16 = c.bias = c.gelu = true;
    cases.push_back(c);
    c = odd("odd 1000x1000x1000 nt ab f16" + how, 1000, 1000, 1000, 1, p);
    c.transB = true, c.outF16 = true, c.alpha = 2.0f, c.beta = 0.5f;
    cases.push_back(c);
    c = odd("odd batched 4x500x600x1000 ab+bias" + how, 500, 600, 1000, 4, pb);
    c.alpha = 1.0f, c.beta = 1.0f, c.bias = true;
    cases.push_back(c);
    c = odd("K-only pad 512x512x1000" + how, 512, 512, 1000, 1, p);
    cases.push_back(c);
  }
  {
    Case c;
    c = odd("shared B 6x250x512x512 (rewrite)", 250, 512, 512, 6,
            opt.tiledInner || dev.coopMatrix ? "rewrite" : "fallback");
    c.sharedB = true;
    cases.push_back(c);
    c = odd("small 40x50x60 (floor)", 40, 50, 60, 1, "fallback");
    cases.push_back(c);
  }

  if (direct) {
    Case m{"matmul() Auto 512x512x256 bias", 512, 512, 256};
    m.bias = true, m.viaMatmul = true, m.expect = "direct";
    cases.push_back(m);
    // Every size a multiple of 8: bounded with vector copies; 1004 rows (scalar copies, 2 GFLOP): padded.
    m = Case{"matmul() Auto 1000x1000x1000 tn gelu", 1000, 1000, 1000};
    m.transA = m.gelu = m.viaMatmul = true, m.expect = "bounded";
    cases.push_back(m);
    m = Case{"matmul() Auto 1004x1000x1000 tn gelu", 1004, 1000, 1000};
    m.transA = m.gelu = m.viaMatmul = true, m.expect = "padded";
    cases.push_back(m);
  }
  nlohmann::json out = nlohmann::json::array();
  ops::coopStats().reset();
  for (const Case& c : cases)
    out.push_back(runCase(ctx, dev, opt, c, 3, report));
  if (direct && opt.stressRuns) {
    Case s{"stress: default tiling, 1024x1024x768 ab+bias", 1024, 1024, 768};
    s.alpha = 0.5f, s.beta = 1.0f, s.bias = true, s.expect = "direct";
    out.push_back(runCase(ctx, dev, opt, s, opt.stressRuns, report));
  }
  report.json["checks"] = out;
  report.json["check_coop_stats"] = ops::coopStatsLine();
  fmt::print("{}\n", ops::coopStatsLine());
}

} // namespace helios::coopcheck
