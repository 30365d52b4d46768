#pragma once
// What `helios-bench peak` measures on a device, decided from device facts alone (so it is unit-tested on
// captured property lists): one MMA case per cooperative-matrix configuration the device lists (every
// VK_KHR_cooperative_matrix entry, every workgroup-scope VK_NV_cooperative_matrix2 granularity, or the
// lowered shape HELIOS_COOP_EMULATE names), each with the accumulator grid its invocations hold, or the
// reason it is left out; and the grid sizes of the MMA loop and of the bandwidth copy.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernels/peak_mma.hpp"
#include "engine/tuning/tuning.hpp"
#include "engine/vk/context.hpp"
#include "probe/caps.hpp"

namespace helios::bench {

struct PeakDevice {
  std::vector<probe::CoopMatrixProperty> khr;         // VK_KHR_cooperative_matrix's list
  std::vector<probe::FlexibleDimensionsProperty> nv2; // VK_NV_cooperative_matrix2's list
  uint32_t subgroupSize = 32;                         // what coop pipelines require (ops::coopSubgroupSize)
  uint32_t maxInvocations = 1024;                     // maxComputeWorkGroupInvocations
  bool f16 = true;                                    // shaderFloat16 and 16-bit storage
  bool int8 = false;                                  // shaderInt8
  std::optional<tuning::MatShape> lowered; // HELIOS_COOP_EMULATE: f16 MulAdds lowered at this shape
};

// The live device's facts (the lists are queried; the emulated shape comes from its Tuning record).
PeakDevice peakDevice(vk::Context& ctx);

struct PeakCase {
  codegen::PeakMmaParams params;
  std::string source; // "VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix2", "lowered"
  std::string skip;   // why it is not measured; "" = measured
};

// Bytes of accumulators one invocation may hold: 128 32-bit registers, what the coop GEMM's largest
// subgroup tiles hold (64x64 of f32 on 32 lanes).
inline constexpr uint32_t kPeakAccumulatorLaneBytes = 512;

// The accumulator grid (rows x cols) for one M x N accumulator of `cBytes` components shared by `lanes`
// invocations: the first of 4x4, 4x2, 2x2, 2x1, 1x1 within kPeakAccumulatorLaneBytes; lowered at most 2x2
// (llvmpipe's compile time grows with every lowered MulAdd).
std::pair<uint32_t, uint32_t> peakAccumulatorGrid(uint32_t M, uint32_t N, uint32_t cBytes, uint32_t lanes,
                                                  bool lowered);

// Every MMA case of `device`, in the order the device lists them (KHR, then NV2's workgroup scope).
// Subgroup-scope cases run 4 subgroups per workgroup (fewer where the device allows fewer invocations).
std::vector<PeakCase> planPeakMma(const PeakDevice& device);

// Workgroups of the MMA loop: 24 per compute unit, so a grid of 1, 2, 3, 4, 6 or 8 workgroups resident per
// unit ends in whole waves.
uint32_t peakMmaWorkgroups(uint32_t computeUnits);

// Bytes each of the copy's two buffers holds: 256 MiB (several times any GPU's last-level cache), within
// maxStorageBufferRange and an eighth of the device-local heap, in whole 16-byte vectors.
uint64_t peakCopyBytes(uint64_t maxStorageBufferRange, uint64_t deviceHeapBytes);
// Workgroups of 256 invocations for the copy: enough for every vector once, at most 64 per compute unit
// (the grid-stride loop covers the rest).
uint32_t peakCopyWorkgroups(uint64_t vectors, uint32_t computeUnits);

} // namespace helios::bench
