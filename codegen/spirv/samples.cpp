#include "codegen/spirv/samples.hpp"

#include <string>

#include "codegen/spirv/builder.hpp"

namespace helios::spv::samples {

using codegen::Kernel;

Kernel vectorAdd(uint32_t localSize) {
  Module m;
  const TypeId f32 = m.f32();
  const Buffer a = m.storageBuffer(0, f32, Access::ReadOnly);
  const Buffer b = m.storageBuffer(1, f32, Access::ReadOnly);
  const Buffer c = m.storageBuffer(2, f32, Access::WriteOnly);
  const PushConstants pc = m.pushConstants({m.u32()});
  FunctionBuilder& f = m.entryPoint("main", {localSize, 1, 1});
  const Value i = f.globalId(0);
  f.ifThen(f.lt(i, f.loadPush(pc, 0)), [&] { f.storeAt(c, i, f.add(f.loadAt(a, i), f.loadAt(b, i))); });
  f.ret();
  return Kernel{"sample.vadd_f32_" + std::to_string(localSize),
                "vadd:" + std::to_string(localSize),
                m.build(),
                3,
                pc.size,
                {localSize, 1, 1},
                0};
}

Kernel reduceSum(uint32_t localSize) {
  if (localSize == 0 || (localSize & (localSize - 1)) != 0)
    throw BuildError("reduceSum: localSize must be a power of two");
  Module m;
  const TypeId f32 = m.f32(), u32 = m.u32();
  const Buffer in = m.storageBuffer(0, f32, Access::ReadOnly);
  const Buffer out = m.storageBuffer(1, f32, Access::WriteOnly);
  const PushConstants pc = m.pushConstants({u32});
  const Value shared = m.workgroupArray(f32, localSize);
  FunctionBuilder& f = m.entryPoint("main", {localSize, 1, 1});
  const Value lid = f.localId(0);
  const Value n = f.loadPush(pc, 0);
  const Value stride = f.imul(f.builtin(BuiltIn::NumWorkgroups, 0), f.u32(localSize));
  const Value acc = f.variable(f32, m.constF32(0.0f));
  f.forRange(f.globalId(0), n, stride, [&](Value i) { f.store(acc, f.fadd(f.load(acc), f.loadAt(in, i))); });
  f.store(f.accessChain(shared, {lid}), f.load(acc));
  f.workgroupBarrier();
  for (uint32_t s = localSize / 2; s > 0; s /= 2) {
    f.ifThen(f.lt(lid, f.u32(s)), [&] {
      const Value mine = f.accessChain(shared, {lid});
      const Value other = f.load(f.accessChain(shared, {f.iadd(lid, f.u32(s))}));
      f.store(mine, f.fadd(f.load(mine), other));
    });
    f.workgroupBarrier();
  }
  f.ifThen(f.eq(lid, f.u32(0)),
           [&] { f.storeAt(out, f.workgroupId(0), f.load(f.accessChain(shared, {f.u32(0)}))); });
  f.ret();
  return Kernel{"sample.reduce_sum_f32_" + std::to_string(localSize),
                "reduce:" + std::to_string(localSize),
                m.build(),
                2,
                pc.size,
                {localSize, 1, 1},
                0};
}

Kernel subgroupSum(uint32_t localSize) {
  Module m;
  const TypeId f32 = m.f32();
  const Buffer in = m.storageBuffer(0, f32, Access::ReadOnly);
  const Buffer out = m.storageBuffer(1, f32, Access::WriteOnly);
  FunctionBuilder& f = m.entryPoint("main", {localSize, 1, 1});
  const Value sum = f.subgroupAdd(f.loadAt(in, f.globalId(0)));
  const Value slot =
      f.iadd(f.imul(f.workgroupId(0), f.builtin(BuiltIn::NumSubgroups)), f.builtin(BuiltIn::SubgroupId));
  f.ifThen(f.subgroupElect(), [&] { f.storeAt(out, slot, sum); });
  f.ret();
  return Kernel{"sample.subgroup_sum_f32_" + std::to_string(localSize),
                "sgsum:" + std::to_string(localSize),
                m.build(),
                2,
                0,
                {localSize, 1, 1},
                0};
}

Kernel halfConvert(uint32_t localSize) {
  Module m;
  const TypeId f16 = m.f16(), f32 = m.f32();
  const Buffer in = m.storageBuffer(0, f16, Access::ReadOnly);
  const Buffer out32 = m.storageBuffer(1, f32, Access::WriteOnly);
  const Buffer out16 = m.storageBuffer(2, f16, Access::WriteOnly);
  const PushConstants pc = m.pushConstants({m.u32(), f32});
  FunctionBuilder& f = m.entryPoint("main", {localSize, 1, 1});
  const Value i = f.globalId(0);
  f.ifThen(f.lt(i, f.loadPush(pc, 0)), [&] {
    const Value x = f.fmul(f.convert(f.loadAt(in, i), f32), f.loadPush(pc, 1));
    f.storeAt(out32, i, x);
    f.storeAt(out16, i, f.convert(x, f16));
  });
  f.ret();
  return Kernel{"sample.half_convert_" + std::to_string(localSize),
                "h2f:" + std::to_string(localSize),
                m.build(),
                3,
                pc.size,
                {localSize, 1, 1},
                0};
}

Kernel coopMatMul16(uint32_t subgroupSize) {
  Module m;
  const TypeId f16 = m.f16(), f32 = m.f32();
  const Buffer a = m.storageBuffer(0, f16, Access::ReadOnly);
  const Buffer b = m.storageBuffer(1, f16, Access::ReadOnly);
  const Buffer c = m.storageBuffer(2, f32);
  const TypeId ta = m.coopMatrixType(f16, 16, 16, CoopUse::MatrixAKHR);
  const TypeId tb = m.coopMatrixType(f16, 16, 16, CoopUse::MatrixBKHR);
  const TypeId tc = m.coopMatrixType(f32, 16, 16, CoopUse::MatrixAccumulatorKHR);
  FunctionBuilder& f = m.entryPoint("main", {subgroupSize, 1, 1});
  const Value zero = f.u32(0), stride = f.u32(16);
  const Value ma = f.coopLoad(ta, f.at(a, zero), stride, CoopLayout::RowMajorKHR);
  const Value mb = f.coopLoad(tb, f.at(b, zero), stride, CoopLayout::RowMajorKHR);
  const Value mc = f.coopLoad(tc, f.at(c, zero), stride, CoopLayout::RowMajorKHR);
  const Value r = f.coopMulAdd(ma, mb, mc);
  f.coopStore(f.at(c, zero), r, stride, CoopLayout::RowMajorKHR);
  f.ret();
  return Kernel{"sample.coopmat_16x16x16_f16f32_sg" + std::to_string(subgroupSize),
                "coop16:" + std::to_string(subgroupSize),
                m.build(),
                3,
                0,
                {subgroupSize, 1, 1},
                subgroupSize};
}

Kernel specScale() {
  Module m;
  const TypeId f32 = m.f32();
  const Buffer x = m.storageBuffer(0, f32, Access::ReadOnly);
  const Buffer y = m.storageBuffer(1, f32, Access::WriteOnly);
  const Value sx = m.specConstU32(0, 64), sy = m.specConstU32(1, 1), sz = m.specConstU32(2, 1);
  const Value alpha = m.specConstF32(3, 2.0f);
  FunctionBuilder& f = m.entryPointLocalSizeId("main", {sx, sy, sz});
  const Value i = f.globalId(0);
  f.ifThen(f.lt(i, f.arrayLength(x)), [&] { f.storeAt(y, i, f.fmul(f.loadAt(x, i), alpha)); });
  f.ret();
  return Kernel{"sample.spec_scale_f32", "specscale", m.build(), 2, 0, {64, 1, 1}, 0};
}

void registerSamples(codegen::KernelRegistry& registry) {
  const auto sweepLocal = [](Kernel (*fn)(uint32_t), std::vector<uint32_t> sizes) {
    return [fn, sizes] {
      std::vector<Kernel> ks;
      for (uint32_t s : sizes)
        ks.push_back(fn(s));
      return ks;
    };
  };
  registry.add({"sample.vadd_f32", "c[i] = a[i] + b[i] with bounds check", [] { return vectorAdd(); },
                sweepLocal(&vectorAdd, {64, 128, 256, 512})});
  registry.add({"sample.reduce_sum_f32", "grid-stride loop + workgroup-shared tree reduction",
                [] { return reduceSum(); }, sweepLocal(&reduceSum, {32, 64, 256, 1024})});
  registry.add({"sample.subgroup_sum_f32", "subgroup reduction (GroupNonUniformArithmetic)",
                [] { return subgroupSum(); }, sweepLocal(&subgroupSum, {32, 64, 128, 256})});
  registry.add({"sample.half_convert", "f16 load, convert to f32, scale, store f32 and f16",
                [] { return halfConvert(); }, sweepLocal(&halfConvert, {64, 256})});
  registry.add({"sample.coopmat_16x16x16", "cooperative matrix KHR: C += A*B, f16 inputs, f32 accumulator",
                [] { return coopMatMul16(); }, sweepLocal(&coopMatMul16, {32, 64})});
  registry.add(
      {"sample.spec_scale_f32", "LocalSizeId + float spec constant", [] { return specScale(); }, {}});
}

} // namespace helios::spv::samples
