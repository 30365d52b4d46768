// Module-level behaviour of the SPIR-V builder: de-duplication, sections, header, capabilities, layouts.
#include <catch2/catch_test_macros.hpp>

#include "codegen/spirv/builder.hpp"
#include "codegen/spirv/samples.hpp"
#include "codegen/spirv/tools.hpp"
#include "spirv_test_util.hpp"

using namespace helios::spv;
using helios::spv::test::decode;
using helios::spv::test::Inst;

namespace {

// A small kernel touching most sections: extension import, names, decorations, spec constants, functions.
std::vector<uint32_t> sectionsKernel() {
  Module m;
  const Buffer in = m.storageBuffer(0, m.f32(), Access::ReadOnly);
  const Buffer out = m.storageBuffer(1, m.f32(), Access::WriteOnly);
  const Value alpha = m.specConstF32(7, 0.5f);
  FunctionBuilder& f = m.entryPoint("main", {64, 1, 1});
  const Value i = f.globalId(0);
  f.storeAt(out, i, f.fmul(f.exp(f.loadAt(in, i)), alpha));
  f.ret();
  return m.build();
}

int sectionRank(Op op, bool inFunction) {
  if (inFunction) return 9;
  switch (op) {
  case Op::OpCapability:
    return 0;
  case Op::OpExtension:
    return 1;
  case Op::OpExtInstImport:
    return 2;
  case Op::OpMemoryModel:
    return 3;
  case Op::OpEntryPoint:
    return 4;
  case Op::OpExecutionMode:
  case Op::OpExecutionModeId:
    return 5;
  case Op::OpString:
  case Op::OpSource:
  case Op::OpName:
  case Op::OpMemberName:
    return 6;
  case Op::OpDecorate:
  case Op::OpMemberDecorate:
  case Op::OpDecorateId:
    return 7;
  default:
    return 8; // types, constants, global variables
  }
}

} // namespace

TEST_CASE("types are de-duplicated", "[spirv][types]") {
  Module m;
  CHECK(m.f32() == m.f32());
  CHECK(m.floatType(32) == m.f32());
  CHECK(m.intType(32, true) == m.i32());
  CHECK(m.i32() != m.u32());
  CHECK(m.f16() != m.f32());
  CHECK(m.vectorType(m.f32(), 4) == m.vectorType(m.f32(), 4));
  CHECK(m.vectorType(m.f32(), 4) != m.vectorType(m.f32(), 3));
  CHECK(m.pointerType(StorageClass::StorageBuffer, m.f32()) ==
        m.pointerType(StorageClass::StorageBuffer, m.f32()));
  CHECK(m.pointerType(StorageClass::StorageBuffer, m.f32()) !=
        m.pointerType(StorageClass::Workgroup, m.f32()));
  CHECK(m.arrayType(m.f32(), 16) == m.arrayType(m.f32(), 16));
  CHECK(m.arrayType(m.f32(), 16) != m.arrayType(m.f32(), 16, 4)); // laid-out array is a distinct type
  CHECK(m.structType({m.f32(), m.u32()}) == m.structType({m.f32(), m.u32()}));
  CHECK(m.functionType(m.voidType(), {}) == m.functionType(m.voidType(), {}));
  CHECK(m.coopMatrixType(m.f16(), 16, 16, CoopUse::MatrixAKHR) ==
        m.coopMatrixType(m.f16(), 16, 16, CoopUse::MatrixAKHR));
  CHECK(m.coopMatrixType(m.f16(), 16, 16, CoopUse::MatrixAKHR) !=
        m.coopMatrixType(m.f16(), 16, 16, CoopUse::MatrixBKHR));
  CHECK(m.typeName(m.vectorType(m.u32(), 3)) == "vec3<uint32>");
  CHECK(m.typeName(m.pointerType(StorageClass::StorageBuffer, m.f16())) == "ptr<StorageBuffer, float16>");
}

TEST_CASE("constants are de-duplicated, spec constants are not", "[spirv][constants]") {
  Module m;
  CHECK(m.constU32(5).id == m.constU32(5).id);
  CHECK(m.constU32(5).id != m.constU32(6).id);
  CHECK(m.constU32(1).id != m.constI32(1).id);
  CHECK(m.constF32(1.0f).id != m.constU32(0x3f800000u).id); // same bits, different type
  CHECK(m.constant(m.f32(), 2.0).id == m.constF32(2.0f).id);
  CHECK(m.constBool(true).id == m.constBool(true).id);
  const Value v4 = m.constant(m.vectorType(m.f32(), 4), 1.0);
  CHECK(v4.id == m.constComposite(m.vectorType(m.f32(), 4), std::vector<Value>(4, m.constF32(1.0f))).id);
  CHECK(m.constNull(m.f32()).id == m.constNull(m.f32()).id);
  CHECK(m.specConstU32(0, 64).id != m.specConstU32(1, 64).id);
  CHECK_THROWS_AS(m.specConstU32(0, 1), BuildError); // SpecId 0 used twice
}

TEST_CASE("f16 constants round to nearest even", "[spirv][constants]") {
  Module m;
  CHECK(m.constantBits(m.constF16(1.0f)) == 0x3c00u);
  CHECK(m.constantBits(m.constF16(-2.5f)) == 0xc100u);
  CHECK(m.constantBits(m.constF16(65504.0f)) == 0x7bffu);
  CHECK(m.constantBits(m.constF16(1e6f)) == 0x7c00u);                  // overflow -> inf
  CHECK(m.constantBits(m.constF16(5.9604645e-8f)) == 0x0001u);         // smallest subnormal
  CHECK(m.constantBits(m.constF16(1.0f + 1.0f / 2048.0f)) == 0x3c00u); // tie -> even
  CHECK(m.constantBits(m.constF16(1.0f + 3.0f / 2048.0f)) == 0x3c02u); // tie -> even (up)
  CHECK(m.constantBits(m.constant(m.intType(16, true), -1.0)) == 0xffffu);
}

TEST_CASE("sections are emitted in the order the spec fixes", "[spirv][sections]") {
  const auto words = sectionsKernel();
  const auto insts = decode(words);
  int last = -1;
  bool inFunction = false;
  std::vector<int> seen(10, 0);
  for (const Inst& i : insts) {
    if (i.op == Op::OpFunction) inFunction = true;
    const int r = sectionRank(i.op, inFunction);
    INFO("opcode " << static_cast<uint32_t>(i.op) << " rank " << r << " after rank " << last);
    CHECK(r >= last);
    last = r;
    seen[static_cast<size_t>(r)]++;
  }
  // Every section is present in this kernel (extensions aside).
  for (int r : {0, 2, 3, 4, 5, 6, 7, 8, 9})
    CHECK(seen[static_cast<size_t>(r)] > 0);
  CHECK(insts.front().op == Op::OpCapability);
  CHECK(insts.front().operands[0] == static_cast<uint32_t>(Capability::Shader));
  CHECK(insts.back().op == Op::OpFunctionEnd);
}

TEST_CASE("header: magic, version, generator, id bound = max id + 1, schema 0", "[spirv][header]") {
  ModuleOptions opts;
  opts.version = 0x00010500;
  opts.generator = 0x12340001u;
  Module m(opts);
  const Buffer b = m.storageBuffer(0, m.u32());
  FunctionBuilder& f = m.entryPoint("main", {32, 1, 1});
  f.storeAt(b, f.globalId(0), f.u32(7));
  f.ret();
  const auto words = m.build();
  const Header h = parseHeader(words);
  CHECK(h.magic == 0x07230203u);
  CHECK(h.version == 0x00010500u);
  CHECK(h.generator == 0x12340001u);
  CHECK(h.schema == 0u);
  uint32_t maxId = 0;
  for (const Inst& i : decode(words)) {
    bool hasResult = false, hasType = false;
    ::spv::HasResultAndType(i.op, &hasResult, &hasType);
    if (hasResult) maxId = std::max(maxId, i.operands[hasType ? 1 : 0]);
  }
  CHECK(h.bound == maxId + 1);
  CHECK(validate(words, TargetEnv::Vulkan1_2).ok);
}

TEST_CASE("capabilities and extensions are derived from use", "[spirv][capabilities]") {
  using helios::spv::test::capabilities;
  using helios::spv::test::extensions;
  using helios::spv::test::hasCapability;

  SECTION("f32 only: just Shader, no extensions, no GLSL import") {
    const auto words = helios::spv::samples::vectorAdd(64).spirv;
    CHECK(capabilities(words) == std::vector<Capability>{Capability::Shader});
    CHECK(extensions(words).empty());
    CHECK(helios::spv::test::count(words, Op::OpExtInstImport) == 0);
  }
  SECTION("f16 in a storage buffer: Float16 + StorageBuffer16BitAccess") {
    const auto words = helios::spv::samples::halfConvert(64).spirv;
    CHECK(hasCapability(words, Capability::Float16));
    CHECK(hasCapability(words, Capability::StorageBuffer16BitAccess));
    CHECK_FALSE(hasCapability(words, Capability::Int16));
  }
  SECTION("cooperative matrix: CooperativeMatrixKHR + SPV_KHR_cooperative_matrix") {
    const auto words = helios::spv::samples::coopMatMul16(32).spirv;
    CHECK(hasCapability(words, Capability::CooperativeMatrixKHR));
    CHECK(extensions(words) == std::vector<std::string>{"SPV_KHR_cooperative_matrix"});
  }
  SECTION("subgroup reduce: GroupNonUniform + GroupNonUniformArithmetic") {
    const auto words = helios::spv::samples::subgroupSum(64).spirv;
    CHECK(hasCapability(words, Capability::GroupNonUniform));
    CHECK(hasCapability(words, Capability::GroupNonUniformArithmetic));
    CHECK_FALSE(hasCapability(words, Capability::GroupNonUniformShuffle));
  }
  SECTION("int64 / float64 types") {
    Module m;
    m.u64();
    m.f64();
    m.entryPoint("main", {1, 1, 1}).ret();
    const auto words = m.build();
    CHECK(hasCapability(words, Capability::Int64));
    CHECK(hasCapability(words, Capability::Float64));
  }
  SECTION("GLSL.std.450 imported once on first use") {
    Module m;
    FunctionBuilder& f = m.entryPoint("main", {1, 1, 1});
    f.exp(f.f32(1.0f));
    f.sqrt(f.f32(2.0f));
    f.ret();
    const auto words = m.build();
    CHECK(helios::spv::test::count(words, Op::OpExtInstImport) == 1);
  }
}

TEST_CASE("std430 layout of push constants", "[spirv][layout]") {
  Module m;
  const TypeId f32 = m.f32(), u32 = m.u32();
  const PushConstants pc =
      m.pushConstants({u32, f32, m.vectorType(f32, 3), f32, m.vectorType(f32, 2), m.arrayType(f32, 3)});
  CHECK(pc.offsets == std::vector<uint32_t>{0, 4, 16, 28, 32, 40});
  CHECK(pc.size == 52);
  CHECK(m.sizeOf(m.vectorType(f32, 3)) == 12);
  CHECK(m.alignOf(m.vectorType(f32, 3)) == 16);
  CHECK(m.sizeOf(m.structType({u32, m.vectorType(f32, 4)})) == 32);
  CHECK_THROWS_AS(m.pushConstants({u32}), BuildError); // one block per module
}

TEST_CASE("entry point interface lists exactly the globals used", "[spirv][entry]") {
  Module m;
  const Buffer used = m.storageBuffer(0, m.f32());
  const Buffer unused = m.storageBuffer(1, m.f32());
  FunctionBuilder& f = m.entryPoint("main", {1, 1, 1});
  f.storeAt(used, f.u32(0), f.f32(1.0f));
  f.ret();
  const auto words = m.build();
  for (const Inst& i : decode(words)) {
    if (i.op != Op::OpEntryPoint) continue;
    const std::string name = decodeString(std::span<const uint32_t>(i.operands).subspan(2));
    CHECK(name == "main");
    const size_t ifaceStart = 2 + name.size() / 4 + 1;
    const std::vector<uint32_t> iface(i.operands.begin() + static_cast<long>(ifaceStart), i.operands.end());
    CHECK(iface == std::vector<uint32_t>{used.var.id});
    CHECK(unused.var.id != used.var.id);
  }
  CHECK(validate(words).ok);
}

TEST_CASE("LocalSizeId uses OpExecutionModeId with spec constants", "[spirv][entry]") {
  const auto words = helios::spv::samples::specScale().spirv;
  CHECK(helios::spv::test::count(words, Op::OpExecutionModeId) == 1);
  CHECK(helios::spv::test::count(words, Op::OpExecutionMode) == 0);
  CHECK(helios::spv::test::count(words, Op::OpSpecConstant) == 4);
  const auto r = validate(words);
  INFO(r.message);
  CHECK(r.ok);
}

TEST_CASE("Function variables are hoisted to the first block", "[spirv][function]") {
  Module m;
  const Buffer b = m.storageBuffer(0, m.u32());
  FunctionBuilder& f = m.entryPoint("main", {1, 1, 1});
  const Value gid = f.globalId(0);
  f.ifThen(f.lt(gid, f.u32(4)), [&] {
    const Value v = f.variable(m.u32(), m.constU32(3)); // requested inside a nested block
    f.store(v, f.iadd(f.load(v), gid));
    f.storeAt(b, gid, f.load(v));
  });
  f.ret();
  const auto words = m.build();
  const auto insts = decode(words);
  auto it = std::find_if(insts.begin(), insts.end(), [](const Inst& i) { return i.op == Op::OpFunction; });
  REQUIRE(it != insts.end());
  ++it;
  REQUIRE(it->op == Op::OpLabel);
  ++it;
  CHECK(it->op == Op::OpVariable);
  CHECK(it->operands[2] == static_cast<uint32_t>(StorageClass::Function));
  CHECK(helios::spv::test::count(words, Op::OpVariable) == 3); // buffer, GlobalInvocationId, v
  const auto r = validate(words);
  INFO(r.message);
  CHECK(r.ok);
}
