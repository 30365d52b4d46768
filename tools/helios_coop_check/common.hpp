#pragma once
// helios-coop-check internals: host data, the float64 reference, and the report both halves write into.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "engine/core/half.hpp"
#include "engine/ops/executor.hpp"
#include "engine/ops/matmul_coop.hpp"

namespace helios::coopcheck {

struct Options {
  bool quick = false;      // fewer cases and tilings (a first smoke run)
  bool tiledInner = false; // padded cases with the tiled kernel standing in (devices without coop)
  uint32_t repeats = 10;   // timed dispatches per kernel (median reported)
  uint32_t warmup = 3;
  double warmupMs = 200;    // keep warming up until this much wall time has passed (GPU clocks)
  uint32_t size = 4096;     // the square size every tiling is timed at
  uint32_t stressRuns = 20; // repeated runs of one kernel that must all be bit-identical
  bool checks = true, timing = true;
  bool explore = false;      // also check and time candidate tilings outside the menus (explorationTilings)
  bool onlyExplored = false; // only those candidates, and only the tiling sweep is timed
  std::vector<uint32_t> rasters{0, 8}; // raster swizzles (groupM) every tiling is timed with
  uint64_t seed = 0;
};

struct Report {
  nlohmann::json json = nlohmann::json::object();
  int failures = 0;
  int passes = 0;
};

// A GEMM as the reference sees it (row-major, batches dense).
struct Case {
  std::string name;
  uint32_t M = 0, N = 0, K = 0, batch = 1;
  bool transA = false, transB = false, outF16 = false, bias = false, gelu = false, sharedB = false;
  float alpha = 1.0f, beta = 0.0f;
  std::optional<codegen::GemmCoopParams> tiling; // force a tiling (else the policy's)
  std::string expect;                            // expected decision name ("" = any)
  bool viaMatmul = false; // through ops::matmul (MatmulKernel::Auto) instead of matmulCoop
  bool padOnly = false;   // policy without the bounded kernel (the padded path's own cases)
  bool alongRows = false; // the bounded kernel's scalar copies along rows, not crosswise
};

std::mt19937_64& rng();
std::vector<float> randomHalfs(size_t n, float lo = -1.0f,
                               float hi = 1.0f); // values exactly representable in f16
// C (batch*M*N) = epilogue(alpha * op(A) op(B) + beta * C0), in double.
std::vector<double> referenceGemm(const Case& c, const std::vector<float>& a, const std::vector<float>& b,
                                  const std::vector<float>& bias, const std::vector<float>& c0);
double relFrobenius(const std::vector<float>& out, const std::vector<double>& ref); // NaN -> inf

// Every tiling the device can run: workgroup scope (NV coopmat2) first, then the subgroup-scope menu; with
// `explore`, then the candidates of explorationTilings() (with `onlyExplored`, those alone).
std::vector<codegen::GemmCoopParams> allTilings(const ops::CoopDeviceInfo& dev, bool explore,
                                                bool onlyExplored = false);
// Candidates not (yet) on a menu: coopmat2 tiles over K slices and unroll depths, and subgroup-scope tiles
// with copy subgroups. Those the device cannot hold are left out.
std::vector<codegen::GemmCoopParams> explorationTilings(const ops::CoopDeviceInfo& dev);

void runChecks(vk::Context& ctx, const ops::CoopDeviceInfo& dev, const Options& opt, Report& report);
void runTiming(vk::Context& ctx, const ops::CoopDeviceInfo& dev, const Options& opt, Report& report);

} // namespace helios::coopcheck
