#pragma once
// The device-ceiling kernels as ops (helios-bench peak, helios-probe --peak): the MMA loop and the 16-byte
// copy (codegen/kernels/peak_mma.hpp, peak_copy.hpp), with their sizes checked before anything is
// dispatched, and what the MMA loop must compute, in float64.
#include <cstdint>
#include <span>
#include <vector>

#include "codegen/kernels/peak_copy.hpp"
#include "codegen/kernels/peak_mma.hpp"
#include "engine/ops/executor.hpp"

namespace helios::ops {

// Bytes of the operand buffer (rows A then cols B matrices) and of one workgroup's sums in `out`.
uint64_t peakMmaOperandBytes(const codegen::PeakMmaParams& p);
uint64_t peakMmaOutBytesPerWorkgroup(const codegen::PeakMmaParams& p);

// `iterations` trips of p's MulAdd loop on `workgroups` workgroups. Throws std::invalid_argument when a
// range is too small, the grid is empty or the params do not validate.
void peakMma(Executor& exec, const vk::BufferRange& operands, const vk::BufferRange& out,
             const codegen::PeakMmaParams& p, uint32_t workgroups, uint32_t iterations);

// What one unit stores after `iterations` trips (M x N, row-major: the sum over its accumulators of
// iterations x A_r B_c), from the operands as numbers (rows A then cols B matrices, the layout of the
// operand buffer), in float64; `magnitude`, when given, receives the same sums of absolute products (what
// the rounding of each addition scales with).
std::vector<double> peakMmaExpected(const codegen::PeakMmaParams& p, std::span<const double> operands,
                                    uint32_t iterations, std::vector<double>* magnitude = nullptr);

// dst = src over `vectors` 16-byte vectors on `workgroups` workgroups (a grid-stride loop covers the rest).
void peakCopy(Executor& exec, const vk::BufferRange& src, const vk::BufferRange& dst, uint32_t vectors,
              uint32_t workgroups);

} // namespace helios::ops
