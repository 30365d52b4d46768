#include "codegen/kernels/gemm_coop_parts.hpp"

namespace helios::codegen::coop {

using namespace helios::spv;

TileIndex tileIndex(FunctionBuilder& f, uint32_t groupM) {
  Value tileN = f.workgroupId(0), tileM = f.workgroupId(1);
  if (groupM > 1) {
    const Value tilesN = f.builtin(BuiltIn::NumWorkgroups, 0), tilesM = f.builtin(BuiltIn::NumWorkgroups, 1);
    const Value linear = f.iadd(f.imul(tileM, tilesN), tileN);
    const Value band = f.imul(f.u32(groupM), tilesN);
    const Value first = f.imul(f.udiv(linear, band), f.u32(groupM));
    const Value rows = f.umin(f.isub(tilesM, first), f.u32(groupM));
    const Value inBand = f.rem(linear, band);
    tileM = f.iadd(first, f.rem(inBand, rows));
    tileN = f.udiv(inBand, rows);
  }
  return {tileM, tileN};
}

BatchOffsets batchOffsets(FunctionBuilder& f, const PushConstants& pc, bool batched) {
  if (!batched) return {f.u32(0), f.u32(0), f.u32(0)};
  const Value z = f.workgroupId(2);
  return {f.imul(z, f.loadPush(pc, 5)), f.imul(z, f.loadPush(pc, 6)), f.imul(z, f.loadPush(pc, 7))};
}

namespace {

// GELU on every component this invocation holds: elementwise, so independent of how the implementation maps
// matrix elements to invocations. Components are addressed through the Function variable (OpAccessChain with
// a dynamic index below OpCooperativeMatrixLengthKHR).
void geluInPlace(const Epilogue& e, Value var) {
  FunctionBuilder& f = e.f;
  const TypeId f32 = e.m.f32();
  const TypeId ptrF32 = e.m.pointerType(StorageClass::Function, f32);
  f.forRange(f.u32(0), f.coopLength(e.tc), [&](Value i) {
    const Value ptr = f.op(Op::OpAccessChain, ptrF32, {f.ref(var), f.ref(i)});
    f.store(ptr, gelu(f, f.load(ptr)));
  });
}

} // namespace

Value gelu(FunctionBuilder& f, Value x) {
  const Value x3 = f.fmul(f.fmul(x, x), x);
  Value u = f.fmul(f.f32(0.7978845608028654f), f.fma(f.f32(0.044715f), x3, x));
  u = f.fmin(f.fmax(u, f.f32(-15.0f)), f.f32(15.0f)); // tanh is +-1 in f32 well before 15
  return f.fmul(f.fmul(f.f32(0.5f), x), f.fadd(f.f32(1.0f), f.tanh(u)));
}

void storeC(const Epilogue& e, Value acc, Value cIndex, Value biasIndex) {
  e.f.coopStore(e.f.at(e.c, cIndex), e.f.convert(epilogueValue(e, acc, cIndex, biasIndex), e.tcOut), e.N,
                CoopLayout::RowMajorKHR);
}

Value epilogueValue(const Epilogue& e, Value acc, Value cIndex, Value biasIndex) {
  FunctionBuilder& f = e.f;
  Value v = acc;
  if (e.p.alphaBeta) {
    f.store(e.tmp, f.coopScale(v, e.alpha));
    f.ifThen(f.ne(e.beta, f.f32(0.0f)), [&] {
      const Value old = f.convert(f.coopLoad(e.tcOut, f.at(e.c, cIndex), e.N, CoopLayout::RowMajorKHR), e.tc);
      f.store(e.tmp, f.fadd(f.load(e.tmp), f.coopScale(old, e.beta)));
    });
    v = f.load(e.tmp);
  }
  if (e.p.bias) {
    // Stride 0: every row of the tile is bias[n .. n + cols).
    const Value b = f.coopLoad(e.tcOut, f.at(e.bias, biasIndex), f.u32(0), CoopLayout::RowMajorKHR);
    v = f.fadd(v, f.convert(b, e.tc));
  }
  if (e.p.gelu) {
    f.store(e.tmp, v);
    geluInPlace(e, e.tmp);
    v = f.load(e.tmp);
  }
  return v;
}

} // namespace helios::codegen::coop
