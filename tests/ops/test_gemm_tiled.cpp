// The tiled GEMM family (codegen/kernels/gemm_tiled) and the matmul op against the float64 reference on fresh
// random inputs, outputs poisoned before every run. Thresholds (relative Frobenius error, ref::relError):
//   f32 storage everywhere: <= 1e-5;   any f16 storage (inputs rounded to f16 before the reference): <= 2e-3;
//   bf16 (inputs rounded to bf16 before the reference; exact products): f32 C <= 1e-5, bf16 C <= 8e-3 (one
//   rounding of C to an 8-bit significand, half an ulp = 2^-9 of each element).
// Besides values, every run checks that nothing outside C (batch gaps, a tail after C) was written.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codegen/kernels/gemm_tiled.hpp"
#include "codegen/spirv/tools.hpp"
#include "engine/core/half.hpp"
#include "engine/ops/elem_support.hpp"
#include "engine/ops/gemm_plan_menu.hpp"
#include "engine/ops/matmul.hpp"
#include "engine/vk/context.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"
#include "support/spirv_file.hpp"

using namespace helios;
using Catch::Matchers::ContainsSubstring;
using codegen::Elem;
using codegen::GemmTile;
using codegen::GemmTiledParams;

namespace {

constexpr double kTolF32 = 1e-5;
constexpr double kTolF16 = 2e-3;
constexpr double kTolBF16 = 8e-3;
constexpr uint32_t kTail = 16; // poisoned elements after C: must survive every run

vk::Context& ctx() {
  static auto context = vk::Context::create({.persistentPipelineCache = false});
  return *context;
}

bool f16Supported() {
  const auto& f = ctx().device().features();
  return f.storageBuffer16BitAccess && f.shaderFloat16;
}

uint16_t toBits(float x, Elem type) {
  return type == Elem::BF16 ? floatToBf16(x) : floatToHalf(x);
}
float fromBits(uint16_t h, Elem type) {
  return type == Elem::BF16 ? bf16ToFloat(h) : halfToFloat(h);
}

uint32_t poisonBits() {
  const float p = test::poisonF32();
  uint32_t bits;
  std::memcpy(&bits, &p, 4);
  return bits;
}

// Host values -> GPU buffer in `type`; returns the values as the GPU sees them (rounded when f16).
std::vector<float> upload(vk::Buffer& buf, const std::vector<float>& v, Elem type) {
  if (type == Elem::F32) {
    ctx().uploadVector(buf, v);
    return v;
  }
  std::vector<uint16_t> h(v.size());
  std::vector<float> seen(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    h[i] = toBits(v[i], type);
    seen[i] = fromBits(h[i], type);
  }
  ctx().uploadVector(buf, h);
  return seen;
}

std::vector<float> download(vk::Buffer& buf, size_t n, Elem type) {
  if (type == Elem::F32) return ctx().downloadVector<float>(buf, n);
  const auto h = ctx().downloadVector<uint16_t>(buf, n);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = fromBits(h[i], type);
  return out;
}

bool isPoison(float x, Elem type) {
  if (type != Elem::F32) return std::isnan(x); // the 16-bit poisons are NaNs too (f32's rounds to one)
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return bits == poisonBits();
}

struct Case {
  uint32_t M = 1, N = 1, K = 1, batch = 1;
  bool transA = false, transB = false;
  float alpha = 1.0f, beta = 0.0f;
  bool bias = false, gelu = false;
  Elem aType = Elem::F32, outType = Elem::F32;
  uint32_t gap = 0; // extra elements between batches (strided batches); a multiple of 4 keeps vec4 paths
  std::optional<GemmTile> tile;
  bool useOracle = false; // run the GLSL oracle instead of matmul (NN, f32, no epilogue, batch 1)

  std::string describe() const {
    std::string s = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
    if (batch > 1) s += " batch " + std::to_string(batch) + " gap " + std::to_string(gap);
    s += std::string(" ") + (transA ? "T" : "N") + (transB ? "T" : "N");
    s += " alpha " + std::to_string(alpha) + " beta " + std::to_string(beta);
    if (bias) s += " bias";
    if (gelu) s += " gelu";
    s += std::string(" ") + codegen::elemName(aType) + "->" + codegen::elemName(outType);
    if (tile) s += " tile " + tile->str();
    return s;
  }
};

struct RunResult {
  std::vector<float> c;      // the whole C buffer (batches, gaps, tail)
  std::vector<float> cDense; // batch*M*N, gaps removed
  ref::Vec expect;           // float64 reference, batch*M*N
};

// Uploads fresh random A, B, C (poison when beta == 0), bias; runs; downloads; computes the reference.
RunResult run(const Case& t) {
  auto& c = ctx();
  const uint32_t sA = t.M * t.K + t.gap, sB = t.K * t.N + t.gap, sC = t.M * t.N + t.gap;
  const size_t nA = size_t{t.batch - 1} * sA + t.M * t.K, nB = size_t{t.batch - 1} * sB + t.K * t.N;
  const size_t nC = size_t{t.batch - 1} * sC + t.M * t.N + kTail;
  const uint32_t inBytes = codegen::elemBytes(t.aType), outBytes = codegen::elemBytes(t.outType);
  vk::Buffer bufA = c.buffer(nA * inBytes, "gemm test A"), bufB = c.buffer(nB * inBytes, "gemm test B");
  vk::Buffer bufC = c.buffer(nC * outBytes, "gemm test C"),
             bufBias = c.buffer(t.N * outBytes, "gemm test bias");
  const std::vector<float> a = upload(bufA, test::randomFloats(nA), t.aType);
  const std::vector<float> b = upload(bufB, test::randomFloats(nB), t.aType);
  const std::vector<float> bias = upload(bufBias, test::randomFloats(t.N), t.outType);
  std::vector<float> cInit(nC, test::poisonF32());
  if (t.beta != 0.0f) {
    const auto r = test::randomFloats(nC);
    for (uint32_t p = 0; p < t.batch; ++p)
      for (size_t i = 0; i < size_t{t.M} * t.N; ++i)
        cInit[p * sC + i] = r[p * sC + i];
  }
  cInit = upload(bufC, cInit, t.outType);

  if (t.useOracle) {
    const vk::Pipeline& pipe = c.pipelines().get(test::glslOracle("gemm_tiled", 3, 20, {16, 16, 1}));
    struct {
      uint32_t M, N, K;
      float alpha, beta;
    } push{t.M, t.N, t.K, t.alpha, t.beta};
    ops::ImmediateExecutor immediate(c);
    ops::Executor& exec = immediate; // the templated dispatch lives on the base class
    exec.dispatch(pipe,
                  {{bufA.range(), ops::Access::Read},
                   {bufB.range(), ops::Access::Read},
                   {bufC.range(), ops::Access::ReadWrite}},
                  push, vk::Groups{(t.N + 15) / 16, (t.M + 15) / 16, 1});
    exec.flush();
  } else {
    ops::MatmulArgs args;
    args.a = bufA.range();
    args.b = bufB.range();
    args.c = bufC.range();
    if (t.bias) args.bias = bufBias.range();
    args.M = t.M;
    args.N = t.N;
    args.K = t.K;
    args.batch = t.batch;
    args.transA = t.transA;
    args.transB = t.transB;
    args.alpha = t.alpha;
    args.beta = t.beta;
    args.gelu = t.gelu;
    args.aType = t.aType;
    args.outType = t.outType;
    if (t.batch > 1) {
      args.strideA = sA;
      args.strideB = sB;
      args.strideC = sC;
    }
    args.kernel = ops::MatmulKernel::Tiled;
    args.tile = t.tile;
    ops::ImmediateExecutor exec(c);
    ops::matmul(exec, args);
    exec.flush();
    CHECK(exec.dispatches() == 1);
  }

  RunResult r;
  r.c = download(bufC, nC, t.outType);
  // Dense copies per batch for the reference (which assumes dense batches).
  std::vector<float> aD, bD, cD;
  for (uint32_t p = 0; p < t.batch; ++p) {
    aD.insert(aD.end(), a.begin() + p * sA, a.begin() + p * sA + t.M * t.K);
    bD.insert(bD.end(), b.begin() + p * sB, b.begin() + p * sB + t.K * t.N);
    cD.insert(cD.end(), cInit.begin() + p * sC, cInit.begin() + p * sC + t.M * t.N);
    r.cDense.insert(r.cDense.end(), r.c.begin() + p * sC, r.c.begin() + p * sC + t.M * t.N);
  }
  ref::GemmShape shape{t.M, t.N, t.K, t.batch, t.transA, t.transB, t.alpha, t.beta, t.bias, t.gelu};
  r.expect.assign(cD.begin(), cD.end());
  if (t.beta == 0.0f) std::fill(r.expect.begin(), r.expect.end(), 0.0); // poison is never read
  ref::gemm(shape, aD, bD, bias, r.expect);
  return r;
}

void check(const Case& t) {
  INFO("case: " << t.describe() << "  (HELIOS_TEST_SEED=" << test::testSeed() << ")");
  const RunResult r = run(t);
  const double tol = t.outType == Elem::BF16                            ? kTolBF16
                     : (t.aType == Elem::F16 || t.outType == Elem::F16) ? kTolF16
                                                                        : kTolF32;
  const double err = ref::relError(r.cDense, r.expect);
  INFO("relative error " << err << ", tolerance " << tol);
  CHECK(err <= tol);
  // Nothing written outside C: batch gaps and the tail keep their poison.
  const uint32_t sC = t.M * t.N + t.gap;
  size_t clobbered = 0;
  for (uint32_t p = 0; p + 1 < t.batch; ++p)
    for (uint32_t i = t.M * t.N; i < sC; ++i)
      clobbered += !isPoison(r.c[p * sC + i], t.outType);
  for (size_t i = r.c.size() - kTail; i < r.c.size(); ++i)
    clobbered += !isPoison(r.c[i], t.outType);
  CHECK(clobbered == 0);
}

const GemmTile kOdd{24, 40, 8, 3, 5, 0, 2};

} // namespace

// ---------------------------------------------------------------------------------------------- pure logic

TEST_CASE("gemm_tiled params: cache keys cover every field and tiles round-trip through text",
          "[gemm][tiled]") {
  std::set<std::string> keys;
  for (uint32_t bits = 0; bits < 256; ++bits) {
    GemmTiledParams p;
    p.inType = (bits & 1) ? Elem::F16 : Elem::F32;
    p.outType = (bits & 2) ? Elem::F16 : Elem::F32;
    p.transA = bits & 4;
    p.transB = bits & 8;
    p.batched = bits & 16;
    p.bias = bits & 32;
    p.gelu = bits & 64;
    p.vec4Aligned = bits & 128;
    CHECK(keys.insert(p.cacheKey()).second);
  }
  for (const GemmTile& t : codegen::gemmTiledSweepTiles()) {
    GemmTiledParams p;
    p.tile = t;
    keys.insert(p.cacheKey());
    CHECK(GemmTile::parse(t.str()) == t);
  }
  CHECK(keys.size() == 256 + codegen::gemmTiledSweepTiles().size() - 1); // the default tile is in both
  // The planner's menu (engine/ops/gemm_plan_menu.hpp) is generated by the sweep too.
  const auto sweep = codegen::gemmTiledSweepTiles();
  for (const GemmTile& t : ops::gemmTiledCandidates())
    CHECK(std::find(sweep.begin(), sweep.end(), t) != sweep.end());
  CHECK(GemmTile::parse("64x32x16_4x2") == GemmTile{64, 32, 16, 4, 2, 4, 2});
  CHECK_THROWS_WITH(GemmTile::parse("64x32_4x2"), ContainsSubstring("expected 'x' at position 5"));
  CHECK_THROWS_WITH(GemmTile::parse("64x32x8_4x2_q3"), ContainsSubstring("unknown suffix"));
}

TEST_CASE("gemm_tiled params: invalid tilings are rejected with the reason", "[gemm][tiled]") {
  GemmTiledParams p;
  p.tile = {128, 128, 8, 3, 8, 4, 2};
  CHECK_THROWS_WITH(p.validate(), ContainsSubstring("multiple of TM"));
  p.tile = {128, 128, 8, 8, 8, 4, 3};
  CHECK_THROWS_WITH(p.validate(), ContainsSubstring("stages"));
  p.tile = {128, 128, 8, 8, 8, 2, 2};
  CHECK_THROWS_WITH(p.validate(), ContainsSubstring("pad"));
  p.tile = {256, 256, 8, 4, 4, 4, 2}; // 4096 invocations
  CHECK_THROWS_WITH(p.validate(), ContainsSubstring("invocations exceed"));
  p.tile = {128, 128, 64, 8, 8, 4, 2}; // 2*64*264*4 bytes
  CHECK_THROWS_WITH(p.validate(), ContainsSubstring("shared memory"));
  p.tile = {16, 16, 4, 1, 1, 4, 2}; // 256 invocations, 64 elements per operand tile
  CHECK_THROWS_WITH(p.validate(), ContainsSubstring("multiples of the 256 invocations"));
  CHECK_THROWS_AS(codegen::generateGemmTiled(p), std::invalid_argument);
}

TEST_CASE("gemm_tiled tile choice: big tiles for big problems and small ones to fill the GPU",
          "[gemm][tiled]") {
  const codegen::GemmDeviceLimits h100; // defaults: 48 KiB, 1024 invocations, subgroup 32, 132 workgroups
  const auto pick = [&](uint32_t M, uint32_t N, uint32_t K, uint32_t batch,
                        const codegen::GemmDeviceLimits& l) {
    return ops::chooseGemmTiling(M, N, K, batch, l).tile;
  };
  CHECK(pick(4096, 4096, 4096, 1, h100) == GemmTile{128, 128, 8, 8, 8, 4, 2});
  CHECK(pick(2048, 2048, 512, 1, h100) == GemmTile{128, 128, 8, 8, 8, 4, 2}); // 256 workgroups
  CHECK(pick(1024, 1024, 1024, 1, h100).BM == 64);                            // 64 big tiles would idle half
  CHECK(pick(1024, 1024, 1024, 4, h100).BM == 128);                           // batches fill it
  CHECK(pick(7, 4096, 4096, 1, h100).BM == 32);                               // skinny
  CHECK(pick(1, 1, 1, 1, h100).BM == 32);
  // Limits: no 256-invocation tile on a 128-invocation device, no big tile in 8 KiB of shared memory.
  codegen::GemmDeviceLimits tiny{16384, 128, 32, 132};
  const GemmTile t = pick(4096, 4096, 4096, 1, tiny);
  CHECK(t.threads() <= 128);
  codegen::GemmDeviceLimits smallShared{8192, 1024, 32, 132};
  CHECK(pick(4096, 4096, 4096, 1, smallShared).sharedBytes() <= 8192);
  // Whatever is chosen validates and is a pure function of its inputs.
  for (uint32_t m : {1u, 7u, 100u, 1000u, 5000u})
    for (uint32_t n : {1u, 33u, 4096u}) {
      GemmTiledParams p = ops::chooseGemmTiling(m, n, 64, 1, h100);
      CHECK_NOTHROW(p.validate(h100));
      CHECK(p.tile == ops::chooseGemmTiling(m, n, 64, 1, h100).tile);
    }
}

TEST_CASE(
    "gemm_tiled kernels pass spirv-val on every sweep tiling (f32 vec4 and f16 TN batched epilogue variants)",
    "[gemm][tiled][spirv]") {
  for (const GemmTile& t : codegen::gemmTiledSweepTiles())
    for (int v = 0; v < 2; ++v) {
      GemmTiledParams p;
      p.tile = t;
      p.vec4Aligned = v == 0;
      p.inType = p.outType = v == 1 ? Elem::F16 : Elem::F32;
      p.transA = v == 1;
      p.batched = p.bias = p.gelu = v == 1;
      const codegen::Kernel k = codegen::generateGemmTiled(p);
      INFO(k.name);
      const auto r = spv::validate(k.spirv, spv::TargetEnv::Vulkan1_3);
      INFO(r.message);
      CHECK(r.ok);
      CHECK(k.localSize[0] == t.threads());
      CHECK(k.numBuffers == (p.bias ? 4u : 3u));
      CHECK(k.pushConstantBytes == (p.batched ? 32u : 20u));
    }
}

// ---------------------------------------------------------------------------------------------- on the GPU

TEST_CASE("tiled GEMM: f32 NN against float64 with auto tiling on odd and aligned shapes",
          "[gemm][tiled][gpu]") {
  const std::vector<std::array<uint32_t, 3>> shapes{
      {1, 1, 1},    {7, 33, 127},   {33, 7, 513},    {127, 1, 64}, {1, 127, 33},
      {64, 64, 64}, {128, 256, 64}, {256, 128, 128}, {513, 33, 7}, {128, 513, 16},
  };
  for (const auto& s : shapes)
    check({.M = s[0], .N = s[1], .K = s[2]});
}

TEST_CASE("tiled GEMM: every sweep tiling on odd shapes (forced tiles)", "[gemm][tiled][gpu]") {
  // Odd shape: every edge of every tile partial, scalar global access. Vec4 shape: M odd, N and K multiples
  // of 4 but not of the tile, so the vec4 paths run with partial tiles too (N and K vectors are whole or
  // absent). Lavapipe needs seconds to compile each big unrolled kernel, so by default the big register
  // tiles other than the default 128x128x8 (same code paths as the small tiles, other constants: BK 16,
  // single buffering, no padding, rectangular, 512 invocations) are left to HELIOS_GEMM_ALL_TILES=1, which
  // runs every sweep tiling on both shapes (do set it on real GPUs). Stages 1 and pad 0 still run here,
  // on the small tiles.
  const bool allTiles = std::getenv("HELIOS_GEMM_ALL_TILES") != nullptr;
  const codegen::GemmDeviceLimits limits = ops::gemmDeviceLimits(ctx().device());
  for (const GemmTile& tile : codegen::gemmTiledSweepTiles()) {
    if (tile.sharedBytes() > limits.maxSharedBytes || tile.threads() > limits.maxInvocations) {
      WARN("tile " << tile.str() << " does not fit this device; skipped");
      continue;
    }
    if (!allTiles && tile.TM * tile.TN > 16 && !(tile == GemmTile{})) continue;
    check({.M = 131, .N = 75, .K = 37, .tile = tile});
    check({.M = 131, .N = 132, .K = 36, .beta = 0.5f, .tile = tile});
  }
}

TEST_CASE("tiled GEMM: NT, TN and TT layouts with alpha and beta", "[gemm][tiled][gpu]") {
  for (bool aligned : {false, true})
    for (int layout = 1; layout < 4; ++layout) {
      Case t{.M = aligned ? 64u : 127u, .N = aligned ? 128u : 33u, .K = aligned ? 256u : 513u};
      t.transA = layout & 1;
      t.transB = layout & 2;
      t.alpha = -0.75f;
      t.beta = layout == 2 ? 0.0f : 1.5f;
      check(t);
      if (!aligned && layout == 3) { // TT: A contiguous along M, B along K, on a non-power-of-two tile
        t.tile = kOdd;
        check(t);
      }
    }
}

TEST_CASE("tiled GEMM: generator paths for shared-memory vector widths 1 2 and 4 with vec4 loads",
          "[gemm][tiled][gpu]") {
  // TN: A is contiguous along M, so its 4-vectors are split into the shared read width (1, 2 or 4).
  // TT: also B contiguous along K, its 4-vectors transposed into shared rows. (NN with vec4 loads: the sweep
  // test's aligned shape on 128x128x8.) The small auto tiles load scalars, so these force vec4-capable tiles.
  check({.M = 68, .N = 132, .K = 36, .transA = true, .tile = GemmTile{64, 64, 16, 2, 8, 4, 2}});
  check({.M = 68, .N = 36, .K = 52, .transA = true, .beta = -1.0f, .tile = GemmTile{64, 16, 16, 1, 4, 4, 2}});
  check(
      {.M = 68, .N = 132, .K = 36, .transA = true, .transB = true, .tile = GemmTile{64, 64, 8, 4, 4, 4, 2}});
}

TEST_CASE("tiled GEMM: bias and GELU epilogues", "[gemm][tiled][gpu]") {
  for (bool aligned : {false, true}) {
    const uint32_t M = aligned ? 128 : 33, N = aligned ? 64 : 127, K = aligned ? 64 : 7;
    check({.M = M, .N = N, .K = K, .bias = true});
    check({.M = M, .N = N, .K = K, .gelu = true});
    check({.M = M, .N = N, .K = K, .alpha = 2.0f, .beta = 0.25f, .bias = true, .gelu = true});
    check({.M = M,
           .N = N,
           .K = K,
           .transB = true,
           .bias = true,
           .gelu = true,
           .tile = GemmTile{16, 16, 8, 2, 2, 2, 1}});
  }
}

TEST_CASE("tiled GEMM: strided batches (gaps between batches stay untouched)", "[gemm][tiled][gpu]") {
  check({.M = 33, .N = 7, .K = 127, .batch = 3, .gap = 5});
  check({.M = 64, .N = 128, .K = 64, .batch = 3, .gap = 12}); // vec4 with strides
  check({.M = 64, .N = 33, .K = 128, .batch = 3, .transA = true, .beta = 1.0f, .bias = true, .gap = 3});
  check({.M = 127, .N = 64, .K = 33, .batch = 2, .transB = true, .gelu = true, .gap = 8, .tile = kOdd});
}

namespace {

// 16-bit storage (`type`) with f32 accumulation: every layout, bias and GELU, 16-bit C, batches with gaps,
// odd and aligned shapes, and a second tiling.
void checkHalfStorage(Elem type) {
  for (bool aligned : {false, true}) {
    const uint32_t M = aligned ? 128 : 127, N = aligned ? 64 : 33, K = aligned ? 256 : 513;
    check({.M = M, .N = N, .K = K, .aType = type});
    check({.M = M, .N = N, .K = K, .aType = type, .outType = type});
    check({.M = M, .N = N, .K = K, .transB = true, .aType = type, .outType = type});
    check({.M = M,
           .N = N,
           .K = K,
           .transA = true,
           .beta = 0.5f,
           .bias = true,
           .gelu = true,
           .aType = type,
           .outType = type});
    check({.M = M, .N = N, .K = K, .batch = 3, .transB = true, .aType = type, .gap = 4});
    check({.M = M, .N = N, .K = K, .batch = 3, .transA = true, .transB = true, .aType = type, .gap = 4});
    if (aligned)
      check({.M = M,
             .N = N,
             .K = K,
             .transA = true,
             .outType = type,
             .tile = GemmTile{64, 64, 16, 2, 8, 4, 2}});
  }
}

} // namespace

TEST_CASE("tiled GEMM: f16 storage with f32 accumulation", "[gemm][tiled][gpu][f16]") {
  if (!f16Supported()) SKIP("device lacks 16-bit storage / shaderFloat16");
  checkHalfStorage(Elem::F16);
}

// bf16 storage (no bf16 type: uint16 bits widened exactly to f32, C rounded to nearest even). The path bf16
// GEMMs take on devices without bf16 cooperative matrices.
TEST_CASE("tiled GEMM: bf16 storage with f32 accumulation", "[gemm][tiled][gpu][bf16]") {
  if (!ops::supportsElem(ctx().device().features(), Elem::BF16))
    SKIP("device lacks 16-bit storage / shaderInt16");
  checkHalfStorage(Elem::BF16);
}

TEST_CASE("tiled GEMM agrees with the glslang-compiled GLSL oracle on the same inputs",
          "[gemm][tiled][gpu]") {
  for (const auto& s : std::vector<std::array<uint32_t, 3>>{{33, 127, 7}, {128, 64, 256}}) {
    for (float beta : {0.0f, 0.5f}) {
      // Same seed for both runs: identical inputs.
      const uint64_t state = test::rng()();
      Case t{.M = s[0], .N = s[1], .K = s[2], .alpha = 1.25f, .beta = beta};
      test::rng().seed(state);
      t.useOracle = true;
      const RunResult oracle = run(t);
      test::rng().seed(state);
      t.useOracle = false;
      const RunResult ours = run(t);
      INFO(t.describe());
      CHECK(ref::relError(ours.cDense, ref::Vec(oracle.cDense.begin(), oracle.cDense.end())) <= kTolF32);
      CHECK(ref::relError(oracle.cDense, oracle.expect) <= kTolF32); // the oracle itself is right
      CHECK(ref::relError(ours.cDense, ours.expect) <= kTolF32);
    }
  }
}

TEST_CASE("matmul rejects bad arguments before dispatching", "[gemm][tiled][gpu]") {
  auto& c = ctx();
  vk::Buffer a = c.buffer(120 * 4, "A"), b = c.buffer(120 * 4, "B"), out = c.buffer(400 * 4, "C");
  ops::MatmulArgs args;
  args.a = a.range();
  args.b = b.range();
  args.c = out.range();
  args.M = 10;
  args.N = 10;
  args.K = 12;
  ops::ImmediateExecutor exec(c);
  const auto expectError = [&](const ops::MatmulArgs& bad, const std::string& text) {
    CHECK_THROWS_AS(ops::matmul(exec, bad), std::invalid_argument);
    CHECK_THROWS_WITH(ops::matmul(exec, bad), ContainsSubstring(text));
  };
  {
    auto bad = args;
    bad.a.size = 100 * 4;
    expectError(bad, "A has 100 elements, M*K = 120 needed");
  }
  {
    auto bad = args;
    bad.K = 13;
    expectError(bad, "A has 120 elements, M*K = 130 needed");
  }
  {
    auto bad = args;
    bad.b.size = 119 * 4;
    expectError(bad, "B has 119 elements, K*N = 120 needed");
  }
  {
    auto bad = args;
    bad.c.size = 99 * 4;
    expectError(bad, "C has 99 elements, M*N = 100 needed");
  }
  {
    auto bad = args;
    bad.batch = 4;
    bad.strideA = 0; // broadcast A is fine; C batches need 400 elements
    bad.strideB = 0;
    bad.strideC = 99;
    expectError(bad, "strideC = 99 < M*N = 100");
    bad.strideC = 101;
    expectError(bad, "C has 400 elements, (batch-1)*strideC + M*N = 403 needed");
  }
  {
    auto bad = args;
    bad.bias = a.range();
    bad.bias.size = 9 * 4;
    expectError(bad, "bias has 9 elements, N = 10 needed");
  }
  {
    auto bad = args;
    bad.M = 0;
    expectError(bad, "must be positive");
  }
  {
    auto bad = args;
    bad.c = a.range();
    expectError(bad, "A overlaps C");
  }
  {
    auto bad = args;
    bad.kernel = ops::MatmulKernel::Coop;
    expectError(bad, "coop GEMM not available");
  }
  {
    auto bad = args;
    bad.tile = GemmTile{128, 128, 8, 3, 8, 4, 2};
    expectError(bad, "multiple of TM");
  }
  CHECK(exec.dispatches() == 0);
  exec.flush();
  // The same arguments, valid, dispatch exactly once.
  ops::matmul(exec, args);
  CHECK(exec.dispatches() == 1);
  exec.flush();
}
