// The coop executor on whatever Vulkan device is present (e.g. lavapipe): the padded path end to end with the
// tiled kernel standing in for the coop kernel against ref::gemm, f32 operands multiplied as f16, and the
// live device's compute units sizing the grids.
#include <array>
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/core/half.hpp"
#include "engine/ops/compute_units.hpp"
#include "engine/ops/coop_stats.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "engine/ops/matmul_policy.hpp"
#include "matmul_policy_fixtures.hpp"
#include "probe/json.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

using namespace helios;
using namespace helios::ops;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::EndsWith;
using namespace helios::policy_test;
namespace {

std::unique_ptr<vk::Context> tryContext() {
  try {
    return vk::Context::create();
  } catch (const std::exception& e) {
    WARN("no Vulkan device: " << e.what());
    return nullptr;
  }
}

struct OddCase {
  uint32_t M, N, K, batch;
  bool transA, transB, bias, gelu, outF16, sharedB;
  float alpha, beta;
  CoopDecision expect;
};

void runOdd(vk::Context& ctx, const OddCase& c) {
  const size_t M = c.M, N = c.N, K = c.K, batch = c.batch;
  auto halfs = [](size_t n) {
    auto v = test::randomFloats(n);
    for (auto& x : v)
      x = halfToFloat(floatToHalf(x));
    return v;
  };
  const auto a = halfs(batch * M * K), b = halfs((c.sharedB ? 1 : batch) * K * N), bias = halfs(N),
             c0 = halfs(batch * M * N);
  auto toHalf = [](const std::vector<float>& v) {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      h[i] = floatToHalf(v[i]);
    return h;
  };
  const size_t ob = c.outF16 ? 2 : 4;
  vk::Buffer ba = ctx.buffer(a.size() * 2, "A"), bb = ctx.buffer(b.size() * 2, "B"),
             bc = ctx.buffer(batch * M * N * ob, "C"), bbias = ctx.buffer(N * ob, "bias");
  ctx.uploadVector(ba, toHalf(a));
  ctx.uploadVector(bb, toHalf(b));
  if (c.outF16) {
    ctx.uploadVector(bbias, toHalf(bias));
    if (c.beta != 0.0f)
      ctx.uploadVector(bc, toHalf(c0));
    else
      ctx.uploadVector(bc, std::vector<uint16_t>(batch * M * N, 0x7e5a));
  } else {
    ctx.uploadVector(bbias, bias);
    if (c.beta != 0.0f)
      ctx.uploadVector(bc, c0);
    else
      ctx.uploadVector(bc, std::vector<float>(batch * M * N, test::poisonF32()));
  }
  MatmulArgs args;
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
  args.aType = MatmulDType::F16;
  args.outType = c.outF16 ? MatmulDType::F16 : MatmulDType::F32;
  if (c.sharedB) args.strideB = 0;
  CoopRunOptions opt;
  opt.device = h100();   // plan as on an H100 ...
  opt.tiledInner = true; // ... but run the tiled kernel inside the pad/crop
  opt.tuning.emplace();
  opt.tuning->gemm = c.expect == CoopDecision::Bounded ? withBounded() : padOnly();
  opt.record = false;
  ImmediateExecutor exec(ctx);
  const CoopPlan plan = matmulCoop(exec, args, opt);
  exec.flush();
  CHECK(plan.decision == c.expect);

  std::vector<float> got(batch * M * N);
  if (c.outF16) {
    const auto h = ctx.downloadVector<uint16_t>(bc, got.size());
    for (size_t i = 0; i < got.size(); ++i)
      got[i] = halfToFloat(h[i]);
  } else {
    got = ctx.downloadVector<float>(bc, got.size());
  }
  ref::GemmShape s{c.M, c.N, c.K, 1, c.transA, c.transB, c.alpha, c.beta, c.bias, c.gelu};
  ref::Vec want(batch * M * N);
  for (size_t p = 0; p < batch; ++p) {
    const std::vector<float> ap(a.begin() + p * M * K, a.begin() + (p + 1) * M * K);
    const size_t bo = c.sharedB ? 0 : p * K * N;
    const std::vector<float> bp(b.begin() + bo, b.begin() + bo + K * N);
    ref::Vec cp(c0.begin() + p * M * N, c0.begin() + (p + 1) * M * N);
    if (c.outF16)
      for (auto& x : cp)
        x = halfToFloat(floatToHalf(static_cast<float>(x)));
    ref::gemm(s, ap, bp, bias, cp);
    std::copy(cp.begin(), cp.end(), want.begin() + p * M * N);
  }
  const double err = ref::relError(got, want);
  INFO(M << "x" << N << "x" << K << " batch " << batch << " " << plan.reason << " err " << err);
  CHECK(err <= (c.outF16 ? 2e-3 : 1e-5));
}

} // namespace

TEST_CASE("matmul_coop: padded path with the tiled kernel standing in (odd shapes vs ref::gemm)",
          "[matmul_coop][vulkan]") {
  auto ctx = tryContext();
  if (!ctx) return;
  std::cout << "matmul_coop padded path on " << ctx->device().name() << ", seed " << test::testSeed() << "\n";
  using D = CoopDecision;
  const OddCase cases[] = {
      {250, 250, 250, 1, false, false, false, false, false, false, 1.0f, 0.0f, D::PaddedCoop},
      {511, 513, 257, 1, false, false, false, false, false, false, 1.0f, 0.0f, D::Bounded},
      {120, 120, 250, 3, true, false, true, true, false, false, 0.5f, 0.5f, D::Bounded},
      {250, 250, 250, 1, false, false, true, true, false, false, 0.5f, -1.25f, D::PaddedCoop},
      {250, 250, 250, 1, true, false, true, false, true, false, 1.0f, 0.0f, D::PaddedCoop},
      {250, 250, 250, 1, false, true, false, true, false, false, 2.0f, 0.5f, D::PaddedCoop},
      {250, 250, 250, 1, true, true, true, true, true, false, 1.0f, 1.0f, D::PaddedCoop},
      {120, 120, 250, 3, false, false, true, true, false, false, 1.0f, 0.5f, D::PaddedBatchedCoop},
      {128, 128, 250, 1, false, false, true, false, false, false, 1.0f, 0.0f, D::PaddedCoop}, // K only
      {60, 128, 128, 5, false, false, false, false, false, true, 1.0f, 0.0f, D::Rewrite},
      {511, 513, 257, 1, false, false, true, true, false, false, 1.0f, 0.0f, D::Fallback},
      // Weight-gradient shape (TN, long K, two 128x128 tiles): split K in 16, accumulate into C.
      {256, 128, 8192, 1, true, false, false, false, false, false, 1.0f, 1.0f, D::TransposedADirect},
      {256, 128, 8192, 1, true, false, false, false, false, false, 0.5f, -2.0f, D::TransposedADirect},
      {256, 128, 8192, 1, true, false, false, false, false, false, 2.0f, 0.0f, D::TransposedADirect},
  };
  for (const auto& c : cases)
    runOdd(*ctx, c);
}

TEST_CASE(
    "matmul roundTo f16: f32 operands multiplied as f16 match the f16 problem on rounded copies bit for "
    "bit, and float64",
    "[matmul_coop][vulkan][coop]") {
  auto ctx = tryContext();
  if (!ctx) return;
  struct Case {
    uint32_t M, N, K, batch;
    bool transA, transB;
  };
  // Aligned (direct coop on a GPU that has it), TN with long K (split K), odd (padded: rounded copies),
  // tiny (tiled), batched.
  const Case cases[] = {{256, 128, 512, 1, false, true},  {256, 128, 8192, 1, true, false},
                        {250, 250, 250, 1, false, false}, {7, 33, 127, 1, false, true},
                        {64, 64, 128, 3, false, false},   {128, 256, 64, 1, true, true}};
  for (const Case& c : cases) {
    const size_t M = c.M, N = c.N, K = c.K, batch = c.batch;
    const auto a = test::randomFloats(batch * M * K), b = test::randomFloats(batch * K * N);
    std::vector<uint16_t> ah(a.size()), bh(b.size());
    std::vector<float> ar(a.size()), br(b.size());
    for (size_t i = 0; i < a.size(); ++i)
      ar[i] = halfToFloat(ah[i] = floatToHalf(a[i]));
    for (size_t i = 0; i < b.size(); ++i)
      br[i] = halfToFloat(bh[i] = floatToHalf(b[i]));
    vk::Buffer a32 = ctx->buffer(a.size() * 4, "A f32"), b32 = ctx->buffer(b.size() * 4, "B f32"),
               a16 = ctx->buffer(a.size() * 2, "A f16"), b16 = ctx->buffer(b.size() * 2, "B f16"),
               c1 = ctx->buffer(batch * M * N * 4, "C roundTo"), c2 = ctx->buffer(batch * M * N * 4, "C f16");
    ctx->uploadVector(a32, a);
    ctx->uploadVector(b32, b);
    ctx->uploadVector(a16, ah);
    ctx->uploadVector(b16, bh);
    for (auto* cb : {&c1, &c2})
      ctx->uploadVector(*cb, std::vector<float>(batch * M * N, test::poisonF32()));
    MatmulArgs args;
    args.M = c.M;
    args.N = c.N;
    args.K = c.K;
    args.batch = c.batch;
    args.transA = c.transA;
    args.transB = c.transB;
    MatmulArgs mixed = args, half = args;
    mixed.a = a32.range();
    mixed.b = b32.range();
    mixed.c = c1.range();
    mixed.roundTo = MatmulDType::F16;
    half.a = a16.range();
    half.b = b16.range();
    half.c = c2.range();
    half.aType = MatmulDType::F16;
    ImmediateExecutor exec(*ctx);
    matmul(exec, mixed);
    matmul(exec, half);
    exec.flush();
    const auto got = ctx->downloadVector<float>(c1, batch * M * N);
    const auto cast = ctx->downloadVector<float>(c2, batch * M * N);
    INFO(M << "x" << N << "x" << K << " batch " << batch << (c.transA ? " tA" : "")
           << (c.transB ? " tB" : ""));
    CHECK(std::memcmp(got.data(), cast.data(), got.size() * 4) == 0);
    ref::GemmShape s{c.M, c.N, c.K, 1, c.transA, c.transB, 1.0f, 0.0f, false, false};
    ref::Vec want(batch * M * N);
    for (size_t p = 0; p < batch; ++p) {
      const std::vector<float> ap(ar.begin() + p * M * K, ar.begin() + (p + 1) * M * K);
      const std::vector<float> bp(br.begin() + p * K * N, br.begin() + (p + 1) * K * N);
      ref::Vec cp(M * N, 0.0);
      ref::gemm(s, ap, bp, {}, cp);
      std::copy(cp.begin(), cp.end(), want.begin() + p * M * N);
    }
    CHECK(ref::relError(got, want) <= 1e-5);
  }
  MatmulArgs bad;
  bad.M = bad.N = bad.K = 8;
  bad.aType = MatmulDType::F16;
  bad.roundTo = MatmulDType::F16;
  CHECK_THROWS_WITH(checkMatmulArgs(bad), ContainsSubstring("roundTo"));
}

TEST_CASE("compute units: the live device's count sizes the tiled GEMM's grid and the coop policy's wave",
          "[matmul_policy][vulkan]") {
  auto ctx = tryContext();
  if (!ctx) return;
  const vk::Device& device = ctx->device();
  const uint32_t units = deviceComputeUnits(device);
  const probe::ShaderCores cores = probe::queryShaderCores(VK_NULL_HANDLE, device.physical());
  INFO(device.name() << ": " << units << " units, source '" << cores.source << "'");
  if (cores.known())
    CHECK(units == cores.computeUnits);
  else if (device.properties().deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) // lavapipe: the host's threads
    CHECK(units == std::max(4u, std::thread::hardware_concurrency()));
  else
    CHECK(units == kDefaultComputeUnits);
  CHECK(gemmDeviceLimits(device).targetWorkgroups == units);
  CHECK(coopDeviceInfo(device).computeUnits == units);
}
