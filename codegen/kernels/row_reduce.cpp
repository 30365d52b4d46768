#include "codegen/kernels/row_reduce.hpp"

namespace helios::codegen {

using namespace helios::spv;

const char* toString(ReduceStrategy s) {
  return s == ReduceStrategy::Subgroup ? "subgroup" : "tree";
}

void checkRowLocalSize(uint32_t localSize, const char* family) {
  if (localSize < 32 || localSize > 1024 || (localSize & (localSize - 1)) != 0)
    throw BuildError(std::string(family) + ": localSize must be a power of two in [32, 1024], got " +
                     std::to_string(localSize));
}

WorkgroupReducer::WorkgroupReducer(Module& m, uint32_t localSize, ReduceStrategy strategy)
    : localSize_(localSize), strategy_(strategy), f32_(m.f32()) {
  checkRowLocalSize(localSize, "WorkgroupReducer");
  // Slots [0, localSize): partials (at most one per invocation); slot localSize: the broadcast result.
  shared_ = m.workgroupArray(f32_, localSize + 1);
}

Value WorkgroupReducer::reduce(FunctionBuilder& f, Value v, Combine op) const {
  const auto combine = [&](Value a, Value b) { return op == Combine::Sum ? f.fadd(a, b) : f.fmax(a, b); };
  const Value result = f.accessChain(shared_, {f.u32(localSize_)});

  if (strategy_ == ReduceStrategy::Subgroup) {
    const auto subgroupReduce = [&](Value x) {
      return op == Combine::Sum ? f.subgroupAdd(x) : f.subgroupMax(x);
    };
    const Value part = subgroupReduce(v);
    const Value sgid = f.builtin(BuiltIn::SubgroupId);
    const Value lane = f.builtin(BuiltIn::SubgroupLocalInvocationId);
    f.ifThen(f.eq(lane, f.u32(0)), [&] { f.store(f.accessChain(shared_, {sgid}), part); });
    f.workgroupBarrier();
    // The first subgroup folds the NumSubgroups partials: lane-strided (there may be more partials than
    // lanes, e.g. 1024 invocations in subgroups of 8), then one more subgroup reduce.
    f.ifThen(f.eq(sgid, f.u32(0)), [&] {
      const Value acc = f.variable(f32_);
      f.store(acc, f.f32(op == Combine::Sum ? 0.0f : kMinFloat));
      f.forRange(lane, f.builtin(BuiltIn::NumSubgroups), f.builtin(BuiltIn::SubgroupSize), [&](Value k) {
        const Value partial = f.load(f.accessChain(shared_, {k}));
        f.store(acc, combine(f.load(acc), partial));
      });
      const Value total = subgroupReduce(f.load(acc));
      f.ifThen(f.eq(lane, f.u32(0)), [&] { f.store(result, total); });
    });
    f.workgroupBarrier();
    return f.load(result);
  }

  const Value lid = f.localId(0);
  f.store(f.accessChain(shared_, {lid}), v);
  f.workgroupBarrier();
  for (uint32_t s = localSize_ / 2; s > 0; s /= 2) {
    f.ifThen(f.lt(lid, f.u32(s)), [&] {
      const Value mine = f.load(f.accessChain(shared_, {lid}));
      const Value other = f.load(f.accessChain(shared_, {f.iadd(lid, f.u32(s))}));
      // The last step writes the separate result slot, so the next call may overwrite slots 0 and 1.
      f.store(s == 1 ? result : f.accessChain(shared_, {lid}), combine(mine, other));
    });
    f.workgroupBarrier();
  }
  return f.load(result);
}

Value rowIndex(FunctionBuilder& f) {
  return f.iadd(f.workgroupId(0), f.imul(f.workgroupId(1), f.builtin(BuiltIn::NumWorkgroups, 0)));
}

void forColumns(FunctionBuilder& f, Value cols, uint32_t localSize, const std::function<void(Value)>& body) {
  f.forRange(f.localId(0), cols, f.u32(localSize), body);
}

std::string rowKernelKeySuffix(uint32_t localSize, ReduceStrategy strategy) {
  return "wg" + std::to_string(localSize) + ":" + toString(strategy);
}

} // namespace helios::codegen
