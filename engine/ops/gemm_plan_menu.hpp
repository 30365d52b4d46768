#pragma once
// The GEMM planner's kernel menus and their order (policy, measured on the cards bench/results names; codegen
// only generates the parameters it is given).
#include <cstdint>
#include <vector>

#include "codegen/kernels/gemm_tiled.hpp"

namespace helios::ops {

// The tiled kernel's candidate tilings, largest first (the heuristic's menu).
std::vector<codegen::GemmTile> gemmTiledCandidates();

// Tile choice, a pure function of the problem and the limits. Heuristic: walk the candidates from the largest
// tile down and take the first one that (a) fits the limits and (b) launches at least targetWorkgroups
// workgroups (ceil(M/BM) * ceil(N/BN) * batch), so that big problems get the high-intensity 128x128 tile and
// small ones trade intensity for occupancy. When none launches enough, take the fitting tile that launches
// the most workgroups with the least padding waste (the smallest). Returns `base` with `tile` replaced.
codegen::GemmTiledParams chooseGemmTiling(uint32_t M, uint32_t N, uint32_t K, uint32_t batch,
                                          const codegen::GemmDeviceLimits& limits,
                                          codegen::GemmTiledParams base = {});

} // namespace helios::ops
