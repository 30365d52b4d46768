#pragma once
// Which cooperative-matrix shape the f16 x f16 -> f32 GEMM kernels use on a device, and whether bf16 x bf16
// -> f32 runs on it too. This is the library call the kernel generators ask; it scans every listed
// configuration, never just the first.
#include "probe/caps.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace helios::probe {

struct CoopShape {
  uint32_t M = 0, N = 0, K = 0;
  uint64_t score = 0; // M * N * K
  bool operator==(const CoopShape&) const = default;
};

// The outcome of scanning a property list, with the counts explainChoice reports.
// The input type of a configuration: A = B = float16, or A = B = bfloat16 (VK_KHR_shader_bfloat16); C and
// Result float32 either way.
enum class CoopInputs : uint8_t { F16, BF16 };

struct CoopChoice {
  std::optional<CoopShape> best;
  std::optional<CoopShape> runnerUp; // best eligible shape that differs from `best` in M, N or K
  std::size_t listed = 0;            // entries scanned
  std::size_t eligible = 0;          // A = B = the inputs, C = Result = float32, subgroup scope
  std::size_t wrongTypes = 0;        // rejected for component types
  std::size_t wrongScope = 0;        // right types, but not subgroup scope
};

// True when `a` is preferred over `b`: larger M*N*K, then larger M*N, then larger M (a fixed final order
// so equal lists always give the same answer).
bool preferShape(const CoopShape& a, const CoopShape& b);

CoopChoice chooseCoop(const std::vector<CoopMatrixProperty>& props, CoopInputs inputs);
CoopChoice chooseF16F32(const std::vector<CoopMatrixProperty>& props);

// The shape to use for f16 x f16 -> f32, or nullopt when the tiled (non-coopmat) kernel must be used.
std::optional<CoopShape> bestF16F32(const std::vector<CoopMatrixProperty>& props);
// The best bf16 x bf16 -> f32 subgroup shape listed (scored like f16's).
std::optional<CoopShape> bestBF16F32(const std::vector<CoopMatrixProperty>& props);

// A few sentences: which shape wins and why, how many entries were considered and rejected (and for what),
// or that there is none and the tiled fallback will be used.
std::string explainChoice(const std::vector<CoopMatrixProperty>& props, CoopInputs inputs = CoopInputs::F16);

// Whether the bf16 GEMM kernels run on bf16 coop matrices here: a bf16 x bf16 -> f32 subgroup shape equal to
// the f16 kernels' (the kernels share their tilings), and VK_KHR_shader_bfloat16's cooperative-matrix
// feature (assumed present in captures that predate the field). Otherwise bf16 storage computes through the
// tiled kernel, which widens bf16 exactly to f32.
bool bf16CoopUsable(const DeviceCaps& caps);
// One sentence for the coop line: which path bf16 GEMMs take on this device, and why.
std::string bf16GemmPath(const DeviceCaps& caps);

} // namespace helios::probe
