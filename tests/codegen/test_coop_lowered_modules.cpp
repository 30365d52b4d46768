// The coop lowering (spv::ModuleOptions::coopLowerSubgroup) at the module level: lowered modules carry no
// cooperative-matrix capability or instruction and pass spirv-val for Vulkan 1.3, from a tiny kernel to the
// coop GEMM's whole registered sweep, over subgroup sizes 4 to 64 and the shapes the engine can emulate,
// without a subgroup operation on a 16-bit type (which would need shaderSubgroupExtendedTypes); what cannot
// be lowered fails with a clear BuildError.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <iostream>
#include <stdexcept>
#include <string>

#include "codegen/kernels/attention_coop.hpp"
#include "codegen/kernels/gemm_coop.hpp"
#include "codegen/spirv/builder.hpp"
#include "codegen/spirv/tools.hpp"
#include "spirv_test_util.hpp"

using namespace helios::spv;
using Catch::Matchers::ContainsSubstring;

namespace {

// No coop capability or instruction left, and no subgroup operation on a 16-bit value: those need
// shaderSubgroupExtendedTypes, which the lowering must not ask of a device (it shuffles 32-bit words).
bool lowered(const std::vector<uint32_t>& words) {
  for (const test::Inst& i : test::decode(words)) {
    const std::string name = ::spv::OpToString(i.op);
    if (name.find("CooperativeMatrix") != std::string::npos) return false;
  }
  const auto narrow = test::narrowSubgroupOps(words);
  if (!narrow.empty())
    UNSCOPED_INFO(narrow.size() << " subgroup operations on 16-bit values, e.g. " << narrow[0]);
  return !test::hasCapability(words, Capability::CooperativeMatrixKHR) && test::extensions(words).empty() &&
         narrow.empty();
}

const uint32_t kShapes[][3] = {{16, 16, 16}, {16, 8, 16}, {16, 8, 8}, {8, 8, 16}, {8, 16, 16}};

} // namespace

TEST_CASE("coop lowering: a tiny kernel lowers for every subgroup size and validates", "[coop_lowering]") {
  for (uint32_t sg : {4u, 8u, 16u, 32u, 64u}) {
    INFO("subgroup " << sg);
    Module m(ModuleOptions{.coopLowerSubgroup = sg});
    const TypeId f16 = m.f16(), f32 = m.f32(), uvec4 = m.vectorType(m.u32(), 4);
    const Buffer a = m.storageBuffer(0, uvec4, Access::ReadOnly);
    const Buffer c = m.storageBuffer(1, f32);
    const Value sh = m.workgroupArray(uvec4, 64);
    const TypeId ta = m.coopMatrixType(f16, 16, 16, CoopUse::MatrixAKHR);
    const TypeId tb = m.coopMatrixType(f16, 16, 16, CoopUse::MatrixBKHR);
    const TypeId tc = m.coopMatrixType(f32, 16, 16, CoopUse::MatrixAccumulatorKHR);
    const TypeId th = m.coopMatrixType(f16, 16, 16, CoopUse::MatrixAccumulatorKHR);
    FunctionBuilder& f = m.entryPoint("main", {2 * sg, 1, 1});
    const Value ma = f.coopLoad(ta, f.at(a, f.u32(0)), f.u32(2), CoopLayout::RowMajorKHR);
    const Value mb = f.coopLoad(tb, f.accessChain(sh, {f.u32(4)}), f.u32(3), CoopLayout::ColumnMajorKHR);
    const Value acc = f.coopMulAdd(ma, mb, f.coopFill(tc, f.f32(0.0f)));
    CHECK(m.constantBits(f.coopLength(tc)) == 256 / sg);
    f.coopStore(f.accessChain(sh, {f.u32(0)}), f.convert(acc, th), f.u32(2), CoopLayout::RowMajorKHR);
    f.coopStore(f.at(c, f.u32(0)), f.fadd(acc, f.coopScale(acc, f.f32(2.0f))), f.u32(0),
                CoopLayout::ColumnMajorKHR);
    f.ret();
    const auto words = m.build();
    const ValidationResult r = validate(words, TargetEnv::Vulkan1_3);
    INFO(r.message);
    CHECK(r.ok);
    CHECK(lowered(words));
  }
}

TEST_CASE("coop lowering: what cannot be lowered fails with a clear message", "[coop_lowering]") {
  Module m(ModuleOptions{.coopLowerSubgroup = 64});
  const TypeId f16 = m.f16(), f32 = m.f32(), u32 = m.u32();
  REQUIRE_THROWS_WITH(m.coopMatrixType(f16, 8, 4, CoopUse::MatrixAKHR),
                      ContainsSubstring("does not split evenly over a subgroup of 64"));
  REQUIRE_THROWS_WITH(m.coopMatrixType(f16, 16, 16, CoopUse::MatrixAKHR, Scope::Workgroup),
                      ContainsSubstring("subgroup scope only"));
  const TypeId tc = m.coopMatrixType(f32, 16, 16, CoopUse::MatrixAccumulatorKHR);
  const TypeId ta = m.coopMatrixType(f16, 16, 16, CoopUse::MatrixAKHR);
  const TypeId th = m.coopMatrixType(f16, 16, 16, CoopUse::MatrixAccumulatorKHR);
  const Buffer packed = m.storageBuffer(0, u32);
  FunctionBuilder& f = m.entryPoint("main", {64, 1, 1});
  const Value acc = f.coopFill(tc, f.f32(1.0f));
  REQUIRE_THROWS_WITH(f.coopConvert(acc, ta), ContainsSubstring("not available with the coop lowering"));
  REQUIRE_THROWS_WITH(
      f.coopStore(f.at(packed, f.u32(0)), f.coopFill(th, f.f16(1.0f)), f.u32(8), CoopLayout::ColumnMajorKHR),
      ContainsSubstring("only row-major"));
  const Value loose = f.op(Op::OpAccessChain, m.pointerType(StorageClass::StorageBuffer, u32),
                           {f.ref(packed.var), f.ref(f.u32(0)), f.ref(f.u32(0))});
  REQUIRE_THROWS_WITH(f.coopLoad(th, loose, f.u32(8), CoopLayout::RowMajorKHR),
                      ContainsSubstring("to come from accessChain()"));
}

TEST_CASE("coop lowering: the coop GEMM sweep lowers and validates over subgroup sizes and shapes",
          "[coop_lowering][gemm_coop]") {
  using helios::codegen::GemmCoopParams;
  const auto sweep = helios::codegen::gemmCoopSweep();
  size_t built = 0, rejected = 0, failures = 0;
  const auto check = [&](GemmCoopParams p) {
    p.lowered = true;
    p.maxSharedBytes = 65536;
    try {
      p.validate();
    } catch (const std::invalid_argument&) {
      ++rejected; // e.g. a staged store whose rows do not split over the subgroup
      return;
    }
    const auto k = helios::codegen::generateGemmCoop(p);
    ++built;
    const ValidationResult r = validate(k.spirv, TargetEnv::Vulkan1_3);
    if (!r.ok || !lowered(k.spirv)) {
      ++failures;
      UNSCOPED_INFO(k.name << ": " << r.message);
    }
  };
  // Every 5th subgroup-scope kernel of the sweep at 8 lanes (lavapipe's AVX2 width) on 16x16x16, and every
  // 100th at each other subgroup size and shape (spirv-val takes ~0.2 s a lowered kernel).
  size_t i = 0;
  for (GemmCoopParams p : sweep) {
    if (p.workgroupScope) continue;
    p.subgroupSize = 8;
    if (i % 5 == 0) check(p);
    if (i++ % 100 != 0) continue;
    for (uint32_t sg : {4u, 8u, 16u, 32u, 64u})
      for (const auto& s : kShapes) {
        GemmCoopParams q = p;
        q.subgroupSize = sg;
        q.coopM = s[0], q.coopN = s[1], q.coopK = s[2];
        if (sg != 8 || s[1] != 16 || s[0] != 16 || s[2] != 16) check(q);
      }
  }
  std::cout << "lowered gemm.coop: " << built << " kernels validated, " << rejected
            << " rejected by validate()\n";
  CHECK(built > 300);
  CHECK(failures == 0);
}

TEST_CASE("coop lowering: coop attention lowers and validates where it builds",
          "[coop_lowering][attention]") {
  using namespace helios::codegen;
  size_t built = 0, failures = 0;
  for (AttentionPass pass : {AttentionPass::Forward, AttentionPass::QueryGrad, AttentionPass::KeyValueGrad})
    for (bool causal : {false, true})
      for (uint32_t d : {64u, 128u}) {
        AttentionCoopParams p = attentionCoopParams(pass, d, causal, 65536, false);
        p.lowered = true;
        p.maxSharedBytes = 65536;
        try {
          p.validate();
        } catch (const std::invalid_argument&) {
          continue;
        }
        const auto k = generateAttentionCoop(p);
        ++built;
        const ValidationResult r = validate(k.spirv, TargetEnv::Vulkan1_3);
        if (!r.ok || !lowered(k.spirv)) {
          ++failures;
          UNSCOPED_INFO(k.name << ": " << r.message);
        }
      }
  CHECK(built > 0);
  CHECK(failures == 0);
}

TEST_CASE("coop lowering: a MulAdd shuffles where every lane reads one source slot", "[coop_lowering]") {
  for (const auto& [m, n, k] : kShapes)
    for (uint32_t sg : {4u, 8u, 16u, 32u, 64u}) {
      INFO(m << "x" << n << "x" << k << " at " << sg);
      CHECK(coopLoweredMulAddShuffles(m, n, k, sg) ==
            (m * n % sg == 0 && m * k % sg == 0 && k * n % sg == 0));
    }
  CHECK_FALSE(coopLoweredMulAddShuffles(4, 12, 8, 8)); // rows of C straddle B's slots
  Module m(ModuleOptions{.coopLowerSubgroup = 8});
  const TypeId ta = m.coopMatrixType(m.f16(), 4, 8, CoopUse::MatrixAKHR);
  const TypeId tb = m.coopMatrixType(m.f16(), 8, 12, CoopUse::MatrixBKHR);
  const TypeId tc = m.coopMatrixType(m.f32(), 4, 12, CoopUse::MatrixAccumulatorKHR);
  FunctionBuilder& f = m.entryPoint("main", {8, 1, 1});
  REQUIRE_THROWS_WITH(
      f.coopMulAdd(f.coopFill(ta, f.f16(1.0f)), f.coopFill(tb, f.f16(1.0f)), f.coopFill(tc, f.f32(0.0f))),
      ContainsSubstring("cannot shuffle a 4x12x8 MulAdd over 8 lanes"));
}
