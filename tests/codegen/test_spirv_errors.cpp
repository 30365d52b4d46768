// Misuse of the builder is caught at build time with a clear BuildError.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "codegen/spirv/builder.hpp"

using namespace helios::spv;
using Catch::Matchers::ContainsSubstring;

TEST_CASE("a block without a terminator is rejected when building", "[spirv][errors]") {
  Module m;
  FunctionBuilder& f = m.entryPoint("main", {1, 1, 1});
  f.iadd(f.u32(1), f.u32(2)); // no ret()
  CHECK_THROWS_WITH(m.build(), ContainsSubstring("has no terminator") && ContainsSubstring("'main'"));
}

TEST_CASE("a created but never used block is rejected", "[spirv][errors]") {
  Module m;
  FunctionBuilder& f = m.entryPoint("main", {1, 1, 1});
  f.newBlock();
  f.ret();
  CHECK_THROWS_WITH(m.build(), ContainsSubstring("never filled"));
}

TEST_CASE("an instruction after a terminator is rejected", "[spirv][errors]") {
  Module m;
  FunctionBuilder& f = m.entryPoint("main", {1, 1, 1});
  f.ret();
  CHECK_THROWS_WITH(f.iadd(f.u32(1), f.u32(2)),
                    ContainsSubstring("OpIAdd appended after the terminator of block"));
  CHECK_THROWS_WITH(f.ret(), ContainsSubstring("OpReturn appended after the terminator"));
}

TEST_CASE("operand type mismatches are rejected", "[spirv][errors]") {
  Module m;
  FunctionBuilder& f = m.entryPoint("main", {1, 1, 1});
  CHECK_THROWS_WITH(f.fadd(f.f32(1.0f), f.f16(1.0f)),
                    ContainsSubstring("fadd: operand types differ (float32 vs float16)"));
  CHECK_THROWS_WITH(f.add(f.u32(1), f.i32(1)),
                    ContainsSubstring("add: operand types differ (uint32 vs int32)"));
  CHECK_THROWS_WITH(f.fadd(f.u32(1), f.u32(1)),
                    ContainsSubstring("fadd: expected a float operand, got uint32"));
  CHECK_THROWS_WITH(f.iadd(f.f32(1), f.f32(1)),
                    ContainsSubstring("iadd: expected an integer operand, got float32"));
  CHECK_THROWS_WITH(f.lt(f.f32(1), f.u32(1)),
                    ContainsSubstring("lt: operand types differ (float32 vs uint32)"));
  CHECK_THROWS_WITH(f.select(f.u32(1), f.u32(1), f.u32(2)),
                    ContainsSubstring("select: condition must be bool"));
  CHECK_THROWS_WITH(f.ifThen(f.u32(1), [] {}),
                    ContainsSubstring("ifThen: condition must be bool, got uint32"));
  CHECK_THROWS_WITH(f.forRange(f.u32(0), f.i32(4), [](Value) {}),
                    ContainsSubstring("forRange: operand types differ (uint32 vs int32)"));
  const Value v = f.variable(m.f32());
  CHECK_THROWS_WITH(f.store(v, f.u32(1)),
                    ContainsSubstring("store: value type uint32 differs from pointee type float32"));
  CHECK_THROWS_WITH(f.load(f.u32(1)), ContainsSubstring("load: operand %"));
  CHECK_THROWS_WITH(
      f.convert(f.vectorTimesScalar(f.splat(m.vectorType(m.f32(), 2), f.f32(1)), f.f32(2)), m.u32()),
      ContainsSubstring("convert: shapes differ"));
  f.ret();
  CHECK(m.build().size() > 5); // the module is still usable after caught errors
}

TEST_CASE("cooperative matrix misuse is rejected", "[spirv][errors][coop]") {
  Module m;
  const TypeId a = m.coopMatrixType(m.f16(), 16, 16, CoopUse::MatrixAKHR);
  const TypeId b = m.coopMatrixType(m.f16(), 16, 8, CoopUse::MatrixBKHR);
  const TypeId c = m.coopMatrixType(m.f32(), 16, 16, CoopUse::MatrixAccumulatorKHR);
  FunctionBuilder& f = m.entryPoint("main", {32, 1, 1});
  const Value ma = f.coopFill(a, f.f16(1.0f)), mb = f.coopFill(b, f.f16(1.0f)),
              mc = f.coopFill(c, f.f32(0.0f));
  CHECK_THROWS_WITH(f.coopMulAdd(ma, mb, mc), ContainsSubstring("coopMulAdd: shapes do not compose"));
  CHECK_THROWS_WITH(f.coopMulAdd(mb, ma, mc),
                    ContainsSubstring("coopMulAdd: operands must have uses A, B, Accumulator"));
  CHECK_THROWS_WITH(f.coopFill(a, f.f32(1.0f)), ContainsSubstring("constructed from one float16 scalar"));
  CHECK_THROWS_WITH(f.coopScale(mc, f.f16(1.0f)),
                    ContainsSubstring("coopScale: scalar type float16 differs"));
  CHECK_THROWS_WITH(f.exp(mc), ContainsSubstring("do not take cooperative matrices"));
}

TEST_CASE("module-level misuse is rejected", "[spirv][errors]") {
  SECTION("no entry point") {
    Module m;
    m.f32();
    CHECK_THROWS_WITH(m.build(), ContainsSubstring("module has no entry point"));
  }
  SECTION("value from another function") {
    Module m;
    FunctionBuilder& helper = m.function("helper", m.u32(), {m.u32()});
    const Value x = helper.iadd(helper.param(0), helper.u32(1));
    helper.ret(x);
    FunctionBuilder& f = m.entryPoint("main", {1, 1, 1});
    CHECK_THROWS_WITH(f.iadd(x, f.u32(1)), ContainsSubstring("belongs to function 'helper'"));
    CHECK_THROWS_WITH(f.branch(helper.currentBlock()), ContainsSubstring("is not in this function"));
  }
  SECTION("duplicate binding") {
    Module m;
    m.storageBuffer(0, m.f32());
    CHECK_THROWS_WITH(m.storageBuffer(0, m.u32()), ContainsSubstring("set 0 binding 0 already used"));
    CHECK_NOTHROW(m.storageBuffer(0, m.u32(), Access::ReadWrite, 1));
  }
  SECTION("bad types") {
    Module m;
    CHECK_THROWS_WITH(m.floatType(8), ContainsSubstring("unsupported width 8"));
    CHECK_THROWS_WITH(m.vectorType(m.vectorType(m.f32(), 2), 2), ContainsSubstring("must be a scalar type"));
    CHECK_THROWS_WITH(m.typeInfo(TypeId{9999}), ContainsSubstring("unknown type id %9999"));
  }
  SECTION("control-flow misuse") {
    Module m;
    FunctionBuilder& f = m.entryPoint("main", {1, 1, 1});
    CHECK_THROWS_WITH(f.breakLoop(), ContainsSubstring("breakLoop: not inside a loop"));
    CHECK_THROWS_WITH(f.ret(f.u32(0)), ContainsSubstring("differs from return type void"));
    const Value s = f.variable(m.structType({m.u32(), m.f32()}));
    CHECK_THROWS_WITH(f.accessChain(s, {f.globalId(0)}),
                      ContainsSubstring("struct index must be a constant"));
    CHECK_THROWS_WITH(f.accessChain(s, {f.u32(2)}), ContainsSubstring("struct index 2 out of range"));
  }
}

TEST_CASE("tensor layout and view misuse is rejected", "[spirv][errors][coop]") {
  Module m;
  const TypeId layout2 = m.tensorLayoutType(2), layout3 = m.tensorLayoutType(3);
  const TypeId view2 = m.tensorViewType(false, {1, 0});
  CHECK_THROWS_WITH(m.tensorLayoutType(0), ContainsSubstring("1 to 5 dimensions"));
  CHECK_THROWS_WITH(m.tensorViewType(false, {0, 0}), ContainsSubstring("list 0..1 once each"));
  CHECK_THROWS_WITH(m.tensorViewType(true, {2, 0}), ContainsSubstring("list 0..1 once each"));
  const TypeId tc = m.coopMatrixType(m.f32(), 64, 64, CoopUse::MatrixAccumulatorKHR, Scope::Workgroup);
  const Buffer c = m.storageBuffer(0, m.f32());
  FunctionBuilder& f = m.entryPoint("main", {128, 1, 1});
  const Value l2 = f.createTensorLayout(layout2), l3 = f.createTensorLayout(layout3);
  CHECK_THROWS_WITH(f.createTensorLayout(view2), ContainsSubstring("is not a tensor layout type"));
  CHECK_THROWS_WITH(f.createTensorView(layout2), ContainsSubstring("is not a tensor view type"));
  CHECK_THROWS_WITH(f.tensorLayoutDimensions(l2, {f.u32(4)}),
                    ContainsSubstring("1 operands for a 2-dimensional layout (want 2)"));
  CHECK_THROWS_WITH(f.tensorLayoutDimensions(l2, {f.u32(4), f.f32(1.0f)}),
                    ContainsSubstring("is not a 32-bit integer"));
  CHECK_THROWS_WITH(f.tensorLayoutSlice(l2, {{f.u32(0), f.u32(4)}}),
                    ContainsSubstring("2 operands for a 2-dimensional layout (want 4)"));
  const Value view = f.createTensorView(view2);
  const Value zero = f.coopFill(tc, f.f32(0.0f));
  CHECK_THROWS_WITH(f.coopStoreTensor(f.at(c, f.u32(0)), zero, l3, view),
                    ContainsSubstring("is not a tensor view of the layout's 3 dimensions"));
  CHECK_THROWS_WITH(f.coopLoadTensor(m.f32(), f.at(c, f.u32(0)), l2),
                    ContainsSubstring("is not a cooperative matrix"));
  CHECK_THROWS_WITH(f.coopStoreTensor(f.at(c, f.u32(0)), zero, view),
                    ContainsSubstring("is not a tensor layout"));
  f.ret();
}
