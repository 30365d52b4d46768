#pragma once
// Which cooperative-matrix shape the f16 x f16 -> f32 GEMM kernels use on a device. This is the library
// call the kernel generators ask; it scans every listed configuration, never just the first.
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
struct CoopChoice {
  std::optional<CoopShape> best;
  std::optional<CoopShape> runnerUp; // best eligible shape that differs from `best` in M, N or K
  std::size_t listed = 0;            // entries scanned
  std::size_t eligible = 0;          // A = B = float16, C = Result = float32, subgroup scope
  std::size_t wrongTypes = 0;        // rejected for component types
  std::size_t wrongScope = 0;        // right types, but not subgroup scope
};

// True when `a` is preferred over `b`: larger M*N*K, then larger M*N, then larger M (a fixed final order
// so equal lists always give the same answer).
bool preferShape(const CoopShape& a, const CoopShape& b);

CoopChoice chooseF16F32(const std::vector<CoopMatrixProperty>& props);

// The shape to use for f16 x f16 -> f32, or nullopt when the tiled (non-coopmat) kernel must be used.
std::optional<CoopShape> bestF16F32(const std::vector<CoopMatrixProperty>& props);

// A few sentences: which shape wins and why, how many entries were considered and rejected (and for what),
// or that there is none and the tiled fallback will be used.
std::string explainChoice(const std::vector<CoopMatrixProperty>& props);

} // namespace helios::probe
