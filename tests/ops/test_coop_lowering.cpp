// The coop lowering (spv::ModuleOptions::coopLowerSubgroup) executed on this device: a tiny kernel (coop
// loads, two MulAdds, scale, subtract, store) per shape, layout, C type, memory element type and stride-0
// rows, two subgroups per workgroup, against float64 with fresh random inputs and poisoned outputs. Hidden
// [coop_emulated] cases run under HELIOS_COOP_EMULATE (the coop-emulated/* ctest entries): the engine's coop
// GEMM itself, lowered.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "codegen/kernel.hpp"
#include "codegen/spirv/builder.hpp"
#include "engine/core/half.hpp"
#include "engine/ops/coop_stats.hpp"
#include "engine/ops/executor.hpp"
#include "engine/ops/matmul.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "support/device_io.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

using namespace helios;
using namespace helios::spv;
using helios::test::ctx;

namespace {

// How the kernel's buffers hold their components (f16 A and B; f32 or f16 C and D).
enum class Elem { F16, U32, UVec4, F32, Vec4 };

uint32_t bytesOf(Elem e) {
  switch (e) {
  case Elem::F16:
    return 2;
  case Elem::U32:
  case Elem::F32:
    return 4;
  default:
    return 16;
  }
}

struct Case {
  uint32_t M, N, K, sg;
  bool colA, colB, f16C, biasRows;
  Elem ea, eb, ec;

  uint32_t compC() const { return f16C ? 2 : 4; }
  uint32_t perA() const { return bytesOf(ea) / 2; } // components per element
  uint32_t perB() const { return bytesOf(eb) / 2; }
  uint32_t perC() const { return bytesOf(ec) / compC(); }
  // D column-major where no two lanes share a word; packed f16 pairs need row-major.
  bool colD() const { return colA && !(f16C && ec != Elem::F16); }
  std::string cacheKey() const {
    return "test_coop_lowering:" + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
           ":" + std::to_string(sg) + ":" + std::to_string(colA) + std::to_string(colB) +
           std::to_string(f16C) + std::to_string(biasRows) + ":" + std::to_string(int(ea)) +
           std::to_string(int(eb)) + std::to_string(int(ec));
  }
};

// A matrix stored with its lines `ld` components apart (rows x cols, or cols x rows column-major) after one
// leading element, each subgroup's copy `region` components after the previous one.
struct Placement {
  uint32_t rows, cols, per, ld, region;
  bool col;
  uint32_t at(uint32_t g, uint32_t r, uint32_t c) const {
    return g * region + per + (col ? c * ld + r : r * ld + c);
  }
};

Placement place(uint32_t rows, uint32_t cols, uint32_t per, bool col) {
  const uint32_t ld = ((col ? rows : cols) + 8 + 7) / 8 * 8; // padded, a whole number of elements
  const uint32_t lines = col ? cols : rows;
  return {rows, cols, per, ld, (lines * ld + 2 * per + 7) / 8 * 8, col};
}

uint16_t toHalf(float f) {
  return helios::floatToHalf(f);
}
double fromHalf(uint16_t h) {
  return helios::halfToFloat(h);
}

TypeId typeOf(Module& m, Elem e) {
  switch (e) {
  case Elem::F16:
    return m.f16();
  case Elem::U32:
    return m.u32();
  case Elem::UVec4:
    return m.vectorType(m.u32(), 4);
  case Elem::F32:
    return m.f32();
  case Elem::Vec4:
    return m.vectorType(m.f32(), 4);
  }
  return {};
}

codegen::Kernel generate(const Case& t) {
  Module m(ModuleOptions{.coopLowerSubgroup = t.sg});
  const TypeId comp = t.f16C ? m.f16() : m.f32();
  const Buffer a = m.storageBuffer(0, typeOf(m, t.ea), helios::spv::Access::ReadOnly);
  const Buffer b = m.storageBuffer(1, typeOf(m, t.eb), helios::spv::Access::ReadOnly);
  const Buffer c = m.storageBuffer(2, typeOf(m, t.ec), helios::spv::Access::ReadOnly);
  const Buffer d = m.storageBuffer(3, typeOf(m, t.ec), helios::spv::Access::WriteOnly);
  const TypeId ta = m.coopMatrixType(m.f16(), t.M, t.K, CoopUse::MatrixAKHR);
  const TypeId tb = m.coopMatrixType(m.f16(), t.K, t.N, CoopUse::MatrixBKHR);
  const TypeId tc = m.coopMatrixType(comp, t.M, t.N, CoopUse::MatrixAccumulatorKHR);
  FunctionBuilder& f = m.entryPoint("main", {2 * t.sg, 1, 1});
  const Value g = f.builtin(BuiltIn::SubgroupId);
  const Placement pa = place(t.M, t.K, t.perA(), t.colA), pb = place(t.K, t.N, t.perB(), t.colB);
  const Placement pc = place(t.M, t.N, t.perC(), false), pd = place(t.M, t.N, t.perC(), t.colD());
  // Element index of a subgroup's matrix: its region, then one element.
  const auto index = [&](const Placement& p) { return f.iadd(f.imul(g, f.u32(p.region / p.per)), f.u32(1)); };
  const auto layout = [](bool col) { return col ? CoopLayout::ColumnMajorKHR : CoopLayout::RowMajorKHR; };
  const Value ma = f.coopLoad(ta, f.at(a, index(pa)), f.u32(pa.ld / pa.per), layout(t.colA));
  const Value mb = f.coopLoad(tb, f.at(b, index(pb)), f.u32(pb.ld / pb.per), layout(t.colB));
  const Value mc =
      f.coopLoad(tc, f.at(c, index(pc)), f.u32(t.biasRows ? 0 : pc.ld / pc.per), CoopLayout::RowMajorKHR);
  // 2AB + C/2, through two MulAdds (the scratch reused), a scale and a subtraction.
  const Value twice = f.coopMulAdd(ma, mb, f.coopMulAdd(ma, mb, mc));
  const Value out = f.fsub(twice, f.coopScale(mc, f.constant(comp, 0.5)));
  f.coopStore(f.at(d, index(pd)), out, f.u32(pd.ld / pd.per), layout(t.colD()));
  f.ret();
  codegen::Kernel k;
  k.name = "test_coop_lowering";
  k.cacheKey = t.cacheKey();
  k.spirv = m.build();
  k.numBuffers = 4;
  k.localSize = {2 * t.sg, 1, 1};
  k.requiredSubgroupSize = t.sg;
  return k;
}

// Host copies of the buffers as f16 bits or f32 values, `comps` components rounded up to whole 16 bytes.
template <class T> std::vector<T> filled(uint32_t comps, T value) {
  return std::vector<T>((comps + 7) / 8 * 8, value);
}

void run(const Case& t) {
  INFO(t.cacheKey());
  const Placement pa = place(t.M, t.K, t.perA(), t.colA), pb = place(t.K, t.N, t.perB(), t.colB);
  const Placement pc = place(t.M, t.N, t.perC(), false), pd = place(t.M, t.N, t.perC(), t.colD());
  auto ha = filled<uint16_t>(2 * pa.region, 0), hb = filled<uint16_t>(2 * pb.region, 0);
  std::vector<double> ra(2 * t.M * t.K), rb(2 * t.K * t.N), rc(2 * t.M * t.N);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const auto uniform = [&] { return dist(test::rng()); };
  for (uint32_t g = 0; g < 2; ++g) {
    for (uint32_t r = 0; r < t.M; ++r)
      for (uint32_t k = 0; k < t.K; ++k) {
        const uint16_t h = toHalf(uniform());
        ha[pa.at(g, r, k)] = h;
        ra[(g * t.M + r) * t.K + k] = fromHalf(h);
      }
    for (uint32_t k = 0; k < t.K; ++k)
      for (uint32_t n = 0; n < t.N; ++n) {
        const uint16_t h = toHalf(uniform());
        hb[pb.at(g, k, n)] = h;
        rb[(g * t.K + k) * t.N + n] = fromHalf(h);
      }
  }
  // C: the bias rows are row 0 of each subgroup's matrix.
  auto hc16 = filled<uint16_t>(2 * pc.region, 0);
  auto hc32 = filled<float>(2 * pc.region, 0.0f);
  for (uint32_t g = 0; g < 2; ++g)
    for (uint32_t r = 0; r < t.M; ++r)
      for (uint32_t n = 0; n < t.N; ++n) {
        const float v = uniform();
        const double stored = t.f16C ? fromHalf(toHalf(v)) : double(v);
        if (t.f16C)
          hc16[pc.at(g, r, n)] = toHalf(v);
        else
          hc32[pc.at(g, r, n)] = v;
        rc[(g * t.M + r) * t.N + n] = stored;
      }
  ops::ImmediateExecutor exec(ctx());
  const auto& pipeline = exec.pipeline(t, generate);
  vk::Buffer A = test::input(ha, "A"), B = test::input(hb, "B");
  vk::Buffer C = t.f16C ? test::input(hc16, "C") : test::input(hc32, "C");
  vk::Buffer D = t.f16C ? test::input(filled<uint16_t>(2 * pd.region, test::kPoisonF16), "D")
                        : test::input(filled<float>(2 * pd.region, test::poisonF32()), "D");
  const ops::Binding bindings[] = {{A.range(), ops::Access::Read},
                                   {B.range(), ops::Access::Read},
                                   {C.range(), ops::Access::Read},
                                   {D.range(), ops::Access::Write}};
  exec.dispatch(pipeline, bindings, nullptr, 0, vk::Groups{1, 1, 1});
  exec.flush();
  const size_t n = (2 * pd.region + 7) / 8 * 8;
  std::vector<double> got(n);
  std::vector<bool> poisoned(n);
  if (t.f16C) {
    const auto v = ctx().downloadVector<uint16_t>(D, n);
    for (size_t i = 0; i < n; ++i)
      got[i] = fromHalf(v[i]), poisoned[i] = v[i] == test::kPoisonF16;
  } else {
    const auto v = ctx().downloadVector<float>(D, n);
    for (size_t i = 0; i < n; ++i)
      got[i] = v[i], poisoned[i] = test::isPoison(v[i]);
  }
  size_t bad = 0, written = 0;
  std::vector<bool> owned(n);
  for (uint32_t g = 0; g < 2; ++g)
    for (uint32_t r = 0; r < t.M; ++r)
      for (uint32_t c = 0; c < t.N; ++c) {
        double sum = 0, mag = 0;
        for (uint32_t k = 0; k < t.K; ++k) {
          const double p = ra[(g * t.M + r) * t.K + k] * rb[(g * t.K + k) * t.N + c];
          sum += p, mag += std::fabs(p);
        }
        const double cv = rc[(g * t.M + (t.biasRows ? 0 : r)) * t.N + c];
        const double want = 2 * sum + 0.5 * cv;
        // f32: K products summed twice; f16: every partial sum rounded to half precision.
        const double tol = (t.f16C ? 4e-3 * (t.K + 2) : 1e-6 * (t.K + 2)) * (2 * mag + std::fabs(cv)) + 1e-6;
        const uint32_t at = pd.at(g, r, c);
        owned[at] = true;
        written += !poisoned[at];
        if (std::fabs(got[at] - want) > tol && bad++ < 5)
          UNSCOPED_INFO("D[" << g << "](" << r << ", " << c << ") = " << got[at] << ", want " << want);
      }
  size_t stray = 0;
  for (size_t i = 0; i < n; ++i)
    stray += !owned[i] && !poisoned[i];
  CHECK(written == 2u * t.M * t.N);
  CHECK(stray == 0);
  CHECK(bad == 0);
}

} // namespace

TEST_CASE("coop lowering: load, MulAdd and store on this device equal float64", "[coop_lowering]") {
  const uint32_t sg = ctx().device().subgroupSize();
  const uint32_t shapes[][3] = {{16, 16, 16}, {16, 8, 16}, {16, 8, 8}, {8, 8, 16}, {8, 16, 16}};
  const Elem halves[] = {Elem::F16, Elem::U32, Elem::UVec4};
  uint32_t cases = 0;
  for (const auto& s : shapes) {
    if ((s[0] * s[2]) % sg || (s[2] * s[1]) % sg || (s[0] * s[1]) % sg) continue;
    for (uint32_t v = 0; v < 8; ++v) {
      Case t{s[0], s[1], s[2], sg, bool(v & 1), bool(v & 2), bool(v & 4), false, {}, {}, {}};
      t.ea = halves[(v + cases) % 3];
      t.eb = halves[(v + cases + 1) % 3];
      const Elem c32[] = {Elem::F32, Elem::Vec4, Elem::UVec4};
      t.ec = t.f16C ? halves[v % 3] : c32[v % 3];
      t.biasRows = (v + cases) % 2 == 1;
      run(t);
      ++cases;
    }
  }
  CHECK(cases >= 8);
}

TEST_CASE("coop lowering: the engine's coop GEMM runs lowered and equals float64", "[.][coop_emulated]") {
  if (!ops::coopDeviceInfo(ctx().device()).lowered) SKIP("HELIOS_COOP_EMULATE is not set");
  // Aligned to the default tile (a direct coop plan), + bias: coop loads of stride 0 in the epilogue.
  const uint32_t M = 256, N = 128, K = 128;
  const auto rounded = [](size_t n) {
    auto v = test::randomFloats(n);
    for (auto& x : v)
      x = helios::halfToFloat(helios::floatToHalf(x));
    return v;
  };
  const auto a = rounded(size_t(M) * K), b = rounded(size_t(K) * N), bias = test::randomFloats(N);
  const auto half = [](const std::vector<float>& v) {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      h[i] = helios::floatToHalf(v[i]);
    return h;
  };
  vk::Buffer A = test::input(half(a), "A"), B = test::input(half(b), "B"), Bias = test::input(bias, "bias");
  vk::Buffer C = test::output(size_t(M) * N, "C");
  ops::MatmulArgs args;
  args.a = A.range();
  args.b = B.range();
  args.c = vk::BufferRange{C.range().buffer, C.range().offset, size_t(M) * N * 4};
  args.bias = Bias.range();
  args.M = M, args.N = N, args.K = K;
  args.aType = ops::MatmulDType::F16;
  const uint64_t before = ops::coopStats().snapshot().coop();
  ops::ImmediateExecutor exec(ctx());
  ops::matmul(exec, args);
  exec.flush();
  CHECK(ops::coopStats().snapshot().coop() == before + 1);
  const auto got = test::result(C, size_t(M) * N);
  ref::Vec want(size_t(M) * N);
  ref::gemm({.M = M, .N = N, .K = K, .bias = true}, a, b, bias, want);
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i])));
  INFO("worst relative error " << worst);
  CHECK(worst < 1e-5);
}
