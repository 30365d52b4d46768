// Complete tiny compute kernels built with the builder must pass spirv-val for Vulkan 1.3.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <set>

#include "codegen/spirv/builder.hpp"
#include "codegen/spirv/samples.hpp"
#include "codegen/spirv/tools.hpp"
#include "spirv_test_util.hpp"

using namespace helios::spv;
using Catch::Matchers::ContainsSubstring;

namespace {

void requireValid(const std::vector<uint32_t>& words) {
  const ValidationResult r = validate(words, TargetEnv::Vulkan1_3);
  INFO(r.message);
  INFO(disassemble(words));
  REQUIRE(r.ok);
  REQUIRE(r.message.empty());
}

} // namespace

TEST_CASE("sample kernels validate", "[spirv][kernels]") {
  SECTION("vector add with bounds check") {
    requireValid(samples::vectorAdd(256).spirv);
  }
  SECTION("grid-stride loop + workgroup-shared tree reduction") {
    requireValid(samples::reduceSum(256).spirv);
  }
  SECTION("subgroup reduction") {
    requireValid(samples::subgroupSum(128).spirv);
  }
  SECTION("f16 load / convert / store") {
    requireValid(samples::halfConvert(64).spirv);
  }
  SECTION("coop matrix 16x16x16 f16 -> f32") {
    requireValid(samples::coopMatMul16(32).spirv);
  }
  SECTION("spec-constant local size") {
    requireValid(samples::specScale().spirv);
  }
}

TEST_CASE("kernel registry: every sample generator's sweep validates", "[spirv][registry]") {
  helios::codegen::KernelRegistry reg;
  samples::registerSamples(reg);
  REQUIRE(reg.all().size() == 6);
  CHECK(reg.find("sample.vadd_f32") != nullptr);
  CHECK(reg.find("nope") == nullptr);
  CHECK_THROWS(samples::registerSamples(reg)); // duplicate names
  std::set<std::string> names, keys;
  for (const auto& g : reg.all()) {
    for (const auto& k : g.all()) {
      INFO(k.name);
      requireValid(k.spirv);
      CHECK(names.insert(k.name).second);
      CHECK(keys.insert(k.cacheKey).second);
    }
  }
  const auto vadd = reg.find("sample.vadd_f32")->makeDefault();
  CHECK(vadd.numBuffers == 3);
  CHECK(vadd.pushConstantBytes == 4);
  CHECK(vadd.localSize == std::array<uint32_t, 3>{256, 1, 1});
}

TEST_CASE("loops, breaks, early returns and function calls validate", "[spirv][kernels][cf]") {
  Module m;
  const TypeId u32 = m.u32();
  const Buffer out = m.storageBuffer(0, u32, Access::WriteOnly);
  FunctionBuilder& sq = m.function("square", u32, {u32});
  sq.ret(sq.imul(sq.param(0), sq.param(0)));

  FunctionBuilder& f = m.entryPoint("main", {64, 1, 1});
  const Value gid = f.globalId(0);
  f.ifThen(f.ge(gid, f.u32(1000)), [&] { f.ret(); }); // early return
  const Value acc = f.variable(u32, m.constU32(0));
  f.forRange(f.u32(0), f.u32(8), [&](Value i) {
    f.ifThen(f.eq(f.bitAnd(i, f.u32(1)), f.u32(1)), [&] { f.continueLoop(); });
    f.forRange(f.u32(0), i, f.u32(2),
               [&](Value j) { f.store(acc, f.iadd(f.load(acc), f.call(sq.id(), {j}))); });
  });
  const Value n = f.variable(u32, m.constU32(0));
  f.whileLoop([&] { return f.lt(f.load(n), f.u32(100)); },
              [&] {
                f.store(n, f.iadd(f.load(n), f.u32(7)));
                f.ifThenElse(
                    f.gt(f.load(n), f.u32(50)), [&] { f.breakLoop(); },
                    [&] { f.store(acc, f.iadd(f.load(acc), f.u32(1))); });
              });
  f.storeAt(out, gid, f.load(acc));
  f.ret();
  requireValid(m.build());
}

TEST_CASE("math, conversions and vectors validate", "[spirv][kernels][math]") {
  Module m;
  const TypeId f32 = m.f32(), f16 = m.f16(), u32 = m.u32(), i32 = m.i32();
  const TypeId v4 = m.vectorType(f32, 4);
  const Buffer in = m.storageBuffer(0, v4, Access::ReadOnly);
  const Buffer out = m.storageBuffer(1, f32, Access::WriteOnly);
  const Buffer outh = m.storageBuffer(2, f16, Access::WriteOnly);
  const Buffer outi = m.storageBuffer(3, i32, Access::WriteOnly);
  FunctionBuilder& f = m.entryPoint("main", {128, 1, 1});
  const Value gid = f.globalId(0);
  const Value x = f.loadAt(in, gid, MemoryAccess::aligned(16));
  const Value e = f.exp(x), t = f.tanh(x), r = f.inverseSqrt(f.fabs(x));
  const Value y = f.fma(e, t, r);
  const Value z = f.pow(f.fmax(y, m.constant(v4, 0.0)), f.fmin(x, m.constant(v4, 2.0)));
  const Value s = f.dot(z, f.shuffle(z, z, {3, 2, 1, 0}));
  const Value lane = f.extractDynamic(x, f.bitAnd(gid, f.u32(3)));
  const Value h = f.convert(f.fadd(s, lane), f16);
  const Value h2 = f.exp2(f.fmul(h, f.f16(0.5f))); // f16 arithmetic + GLSL on f16
  f.storeAt(outh, gid, h2);
  const Value asInt = f.convert(f.convert(h2, f32), i32);
  const Value asUint = f.bitcast(asInt, u32);
  const Value clamped = f.umin(f.umax(asUint, f.u32(1)), f.u32(1000));
  const Value back = f.bitcast(f.shr(f.shl(clamped, f.u32(2)), f.u32(1)), i32);
  f.storeAt(outi, gid, f.smax(f.select(f.lt(back, f.i32(0)), f.neg(back), back), f.i32(-5)));
  const Value anyBig =
      f.logicalOr(f.extract(f.gt(x, m.constant(v4, 1.0)), {0}), f.logicalNot(f.boolean(true)));
  f.storeAt(out, gid, f.select(anyBig, f.convert(clamped, f32), f.sqrt(f.fabs(s))));
  f.ret();
  requireValid(m.build());
}

TEST_CASE("subgroup operations validate", "[spirv][kernels][subgroup]") {
  Module m;
  const TypeId f32 = m.f32(), u32 = m.u32();
  const Buffer in = m.storageBuffer(0, f32, Access::ReadOnly);
  const Buffer out = m.storageBuffer(1, f32, Access::WriteOnly);
  const Buffer outu = m.storageBuffer(2, u32, Access::WriteOnly);
  FunctionBuilder& f = m.entryPoint("main", {64, 1, 1});
  const Value gid = f.globalId(0);
  const Value lane = f.builtin(BuiltIn::SubgroupLocalInvocationId);
  Value v = f.loadAt(in, gid);
  for (uint32_t off = 16; off > 0; off /= 2)
    v = f.fadd(v, f.subgroupShuffleXor(v, f.u32(off)));
  const Value mx = f.subgroupMax(v);
  const Value first = f.subgroupBroadcastFirst(mx);
  const Value b0 = f.subgroupBroadcast(v, f.u32(0));
  const Value sh = f.subgroupShuffle(v, f.bitXor(lane, f.u32(1)));
  f.storeAt(out, gid, f.fadd(f.fadd(first, b0), f.fadd(sh, f.subgroupAdd(v, GroupOperation::InclusiveScan))));
  f.storeAt(outu, gid, f.iadd(f.subgroupAdd(lane), f.builtin(BuiltIn::SubgroupSize)));
  f.ret();
  const auto words = m.build();
  CHECK(test::hasCapability(words, Capability::GroupNonUniformShuffle));
  CHECK(test::hasCapability(words, Capability::GroupNonUniformBallot));
  requireValid(words);
}

TEST_CASE("atomics validate", "[spirv][kernels][atomics]") {
  Module m;
  const TypeId u32 = m.u32(), f32 = m.f32();
  const Buffer counters = m.storageBuffer(0, u32);
  const Buffer sums = m.storageBuffer(1, f32);
  const Value shared = m.workgroupArray(u32, 1);
  FunctionBuilder& f = m.entryPoint("main", {64, 1, 1});
  const Value gid = f.globalId(0);
  f.atomicIAdd(f.at(counters, f.u32(0)), f.u32(1));
  f.atomicUMax(f.at(counters, f.u32(1)), gid);
  f.atomicFAdd(f.at(sums, f.u32(0)), f.f32(1.5f));
  const Value slot = f.accessChain(shared, {f.u32(0)});
  f.atomicCompareExchange(slot, gid, f.u32(0), Scope::Workgroup);
  f.ret();
  const auto words = m.build();
  CHECK(test::hasCapability(words, Capability::AtomicFloat32AddEXT));
  requireValid(words);
}

TEST_CASE("cooperative matrix tiled loop with shared memory validates", "[spirv][kernels][coop]") {
  Module m;
  const TypeId f16 = m.f16(), f32 = m.f32(), u32 = m.u32();
  const Buffer a = m.storageBuffer(0, f16, Access::ReadOnly);
  const Buffer b = m.storageBuffer(1, f16, Access::ReadOnly);
  const Buffer c = m.storageBuffer(2, f32, Access::WriteOnly);
  const Buffer ch = m.storageBuffer(3, f16, Access::WriteOnly);
  const PushConstants pc = m.pushConstants({u32, u32});
  const Value tileElems = m.specConstU32(0, 256);
  const Value shA = m.workgroupArray(f16, m.specConstOp(u32, Op::OpIMul, {tileElems, m.constU32(1)}));
  const TypeId ta = m.coopMatrixType(f16, 16, 16, CoopUse::MatrixAKHR);
  const TypeId tb = m.coopMatrixType(f16, 16, 16, CoopUse::MatrixBKHR);
  const TypeId tc = m.coopMatrixType(f32, 16, 16, CoopUse::MatrixAccumulatorKHR);
  const TypeId tch = m.coopMatrixType(f16, 16, 16, CoopUse::MatrixAccumulatorKHR);
  FunctionBuilder& f = m.entryPoint("main", {32, 1, 1});
  const Value k = f.loadPush(pc, 0), ld = f.loadPush(pc, 1);
  const Value lid = f.localId(0);
  const Value acc = f.variable(tc);
  f.store(acc, f.coopFill(tc, f.f32(0.0f)));
  f.forRange(f.u32(0), k, f.u32(16), [&](Value kk) {
    // stage A's tile through shared memory: each invocation copies 8 halves
    f.forRange(f.u32(0), f.u32(8), [&](Value e) {
      const Value idx = f.iadd(f.imul(lid, f.u32(8)), e);
      f.store(f.accessChain(shA, {idx}), f.loadAt(a, f.iadd(f.imul(kk, f.u32(16)), idx)));
    });
    f.workgroupBarrier();
    const Value ma = f.coopLoad(ta, f.accessChain(shA, {f.u32(0)}), f.u32(16), CoopLayout::RowMajorKHR);
    const Value mb =
        f.coopLoad(tb, f.at(b, f.imul(kk, ld)), ld, CoopLayout::ColumnMajorKHR, MemoryAccess::aligned(16));
    f.store(acc, f.coopMulAdd(ma, mb, f.load(acc)));
    f.workgroupBarrier();
  });
  const Value len = f.coopLength(tc);
  const Value scaled = f.coopScale(f.load(acc), f.f32(0.5f));
  const Value summed = f.fadd(scaled, f.coopFill(tc, f.f32(1.0f)));
  const Value first = f.extract(summed, {0});
  const Value adjusted = f.insert(summed, f.fadd(first, f.convert(len, f32)), {0});
  f.coopStore(f.at(c, f.u32(0)), adjusted, ld, CoopLayout::RowMajorKHR);
  f.coopStore(f.at(ch, f.u32(0)), f.convert(adjusted, tch), ld, CoopLayout::RowMajorKHR);
  f.ret();
  const auto words = m.build();
  requireValid(words);
  CHECK_THAT(disassemble(words), ContainsSubstring("OpCooperativeMatrixMulAddKHR"));
}

TEST_CASE("Vulkan memory model option validates", "[spirv][kernels]") {
  ModuleOptions opts;
  opts.memoryModel = MemoryModel::Vulkan;
  Module m(opts);
  const Buffer b = m.storageBuffer(0, m.f32());
  const Value sh = m.workgroupArray(m.f32(), 64);
  FunctionBuilder& f = m.entryPoint("main", {64, 1, 1});
  const Value lid = f.localId(0);
  f.store(f.accessChain(sh, {lid}), f.loadAt(b, lid));
  f.workgroupBarrier();
  f.storeAt(b, lid, f.load(f.accessChain(sh, {f.isub(f.u32(63), lid)})));
  f.ret();
  const auto words = m.build();
  CHECK(test::hasCapability(words, Capability::VulkanMemoryModel));
  requireValid(words);
}

TEST_CASE("validate() reports invalid modules", "[spirv][tools]") {
  auto words = samples::vectorAdd(64).spirv;
  // Drop OpMemoryModel: the module becomes invalid.
  std::vector<uint32_t> broken(words.begin(), words.begin() + 5);
  forEachInstruction(words, [&](const ParsedInst& p) {
    if (p.op == Op::OpMemoryModel) return;
    InstBuilder(p.op).words(p.operands).appendTo(broken);
  });
  REQUIRE(broken.size() == words.size() - 3);
  const ValidationResult r = validate(broken);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.message, ContainsSubstring("memory model"));
  CHECK(validate(words).ok);
}

TEST_CASE("edge cases of structured control flow validate", "[spirv][kernels][cf]") {
  Module m;
  const Buffer b = m.storageBuffer(0, m.u32());
  FunctionBuilder& f = m.entryPoint("main", {1, 1, 1});
  const Value gid = f.globalId(0);
  // loop whose body always breaks (its continue block is unreachable)
  f.forRange(f.u32(0), f.u32(4), [&](Value i) {
    f.storeAt(b, i, gid);
    f.breakLoop();
  });
  // nested loops, break from the inner one only
  f.forRange(f.i32(0), f.i32(3), [&](Value i) {
    f.whileLoop([&] { return f.boolean(true); },
                [&] {
                  f.storeAt(b, f.bitcast(i, m.u32()), gid);
                  f.breakLoop();
                });
  });
  // both branches return: the merge block is unreachable and still gets a terminator
  f.ifThenElse(
      f.lt(gid, f.u32(2)), [&] { f.ret(); }, [&] { f.ret(); });
  f.unreachable();
  requireValid(m.build());
}

TEST_CASE("workgroup-scope GEMM through tensor layouts and views validates", "[spirv][kernels][coop]") {
  Module m;
  const TypeId f16 = m.f16(), f32 = m.f32(), u32 = m.u32();
  const Buffer a = m.storageBuffer(0, f16, Access::ReadOnly);
  const Buffer b = m.storageBuffer(1, f16, Access::ReadOnly);
  const Buffer c = m.storageBuffer(2, f32, Access::WriteOnly);
  const PushConstants pc = m.pushConstants({u32, u32, u32});
  const TypeId ta = m.coopMatrixType(f16, 64, 32, CoopUse::MatrixAKHR, Scope::Workgroup);
  const TypeId tb = m.coopMatrixType(f16, 32, 64, CoopUse::MatrixBKHR, Scope::Workgroup);
  const TypeId tc = m.coopMatrixType(f32, 64, 64, CoopUse::MatrixAccumulatorKHR, Scope::Workgroup);
  const TypeId layout2 = m.tensorLayoutType(2);
  CHECK(m.tensorLayoutType(2) == layout2);
  CHECK(m.tensorLayoutType(2, TensorClampMode::Constant) != layout2);
  const TypeId transposed = m.tensorViewType(false, {1, 0});
  CHECK(m.tensorViewType(false, {1, 0}) == transposed);
  FunctionBuilder& f = m.entryPoint("main", {128, 1, 1});
  const Value M = f.loadPush(pc, 0), N = f.loadPush(pc, 1), K = f.loadPush(pc, 2);
  // A is M x K; B is stored N x K and read transposed through the view; C is M x N with explicit strides.
  const Value la = f.tensorLayoutDimensions(f.createTensorLayout(layout2), {M, K});
  const Value lb = f.tensorLayoutDimensions(f.createTensorLayout(layout2), {N, K});
  const Value lc =
      f.tensorLayoutStrides(f.tensorLayoutDimensions(f.createTensorLayout(layout2), {M, N}), {N, f.u32(1)});
  const Value view = f.createTensorView(transposed);
  const Value acc = f.variable(tc);
  f.store(acc, f.coopFill(tc, f.f32(0.0f)));
  f.forRange(f.u32(0), K, f.u32(32), [&](Value k0) {
    const Value ma = f.coopLoadTensor(ta, f.at(a, f.u32(0)),
                                      f.tensorLayoutSlice(la, {{f.u32(0), f.u32(64)}, {k0, f.u32(32)}}));
    const Value mb = f.coopLoadTensor(
        tb, f.at(b, f.u32(0)), f.tensorLayoutSlice(lb, {{f.u32(0), f.u32(64)}, {k0, f.u32(32)}}), view);
    f.store(acc, f.coopMulAdd(ma, mb, f.load(acc)));
  });
  f.coopStoreTensor(f.at(c, f.u32(0)), f.load(acc),
                    f.tensorLayoutSlice(lc, {{f.u32(0), f.u32(64)}, {f.u32(0), f.u32(64)}}));
  f.ret();
  const auto words = m.build();
  requireValid(words);
  CHECK(test::hasCapability(words, Capability::TensorAddressingNV));
  CHECK(test::hasCapability(words, Capability::CooperativeMatrixTensorAddressingNV));
  const auto exts = test::extensions(words);
  CHECK(std::set<std::string>(exts.begin(), exts.end()) == std::set<std::string>{"SPV_KHR_cooperative_matrix",
                                                                                 "SPV_NV_cooperative_matrix2",
                                                                                 "SPV_NV_tensor_addressing"});
  const std::string dis = disassemble(words);
  CHECK_THAT(dis, ContainsSubstring("OpCooperativeMatrixLoadTensorNV"));
  CHECK_THAT(dis, ContainsSubstring("TensorView"));
  CHECK_THAT(dis, ContainsSubstring("OpCooperativeMatrixStoreTensorNV"));
}
