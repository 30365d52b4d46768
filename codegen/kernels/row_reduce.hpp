#pragma once
// Shared building blocks of the row-wise kernel families (reduce, softmax, norm, cross_entropy): one
// workgroup owns one row (or a block of rows) and its invocations stride over the columns, then combine
// their per-invocation partials with a workgroup reduction emitted by WorkgroupReducer.
#include <cstdint>
#include <functional>
#include <string>

#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

// How a workgroup combines one float per invocation.
//  Subgroup:   GroupNonUniform reduce inside each subgroup, partials to shared memory, then the first
//              subgroup folds them (strided loop + a second subgroup reduce). Works for any subgroup size
//              (reads the SubgroupSize / NumSubgroups builtins; lavapipe 8/16, NVIDIA 32, AMD 32/64).
//  SharedTree: classic shared-memory halving tree, log2(localSize) barriers, no subgroup features.
// Both are deterministic for a given device and pipeline: the combination order is fixed.
enum class ReduceStrategy : uint8_t { Subgroup, SharedTree };
enum class Combine : uint8_t { Sum, Max };

const char* toString(ReduceStrategy s);

// Row kernels use a power-of-two workgroup size in [32, 1024]; throws spv::BuildError otherwise.
void checkRowLocalSize(uint32_t localSize, const char* family);

// The most negative finite float: the identity of Max (finite so that exp(identity - m) stays 0, not NaN).
inline constexpr float kMinFloat = -3.402823466e38f;

class WorkgroupReducer {
public:
  // Declares the workgroup-shared scratch (localSize + 1 floats) in `m`.
  WorkgroupReducer(spv::Module& m, uint32_t localSize, ReduceStrategy strategy);

  // Combines `v` over the whole workgroup and returns the result in every invocation. Must be reached by
  // all invocations of the workgroup (workgroup-uniform control flow): it contains barriers. Consecutive
  // calls need no extra barrier between them (the result lives in a slot the next call's partials never
  // touch before its own first barrier).
  spv::Value reduce(spv::FunctionBuilder& f, spv::Value v, Combine op) const;

private:
  uint32_t localSize_;
  ReduceStrategy strategy_;
  spv::Value shared_;
  spv::TypeId f32_;
};

// Row index of a one-workgroup-per-row grid. The grid is 2-D (x up to 65535, then y) so that more rows
// than maxComputeWorkGroupCount[0] work: row = WorkgroupId.x + WorkgroupId.y * NumWorkgroups.x.
spv::Value rowIndex(spv::FunctionBuilder& f);

// for (j = LocalInvocationId.x; j < cols; j += localSize) body(j)
void forColumns(spv::FunctionBuilder& f, spv::Value cols, uint32_t localSize,
                const std::function<void(spv::Value)>& body);

// "wg128:subgroup" - the common tail of the families' cache keys.
std::string rowKernelKeySuffix(uint32_t localSize, ReduceStrategy strategy);

} // namespace helios::codegen
