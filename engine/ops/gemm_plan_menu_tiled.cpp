// The tiled kernel's menu and the heuristic walking it (gemm_plan_menu.hpp).
#include <algorithm>
#include <stdexcept>

#include "engine/ops/gemm_plan_menu.hpp"

namespace helios::ops {

using codegen::GemmTile;

std::vector<GemmTile> gemmTiledCandidates() {
  return {
      GemmTile{128, 128, 8, 8, 8, 4, 2}, // 256 invocations, 64 accumulators each: big problems
      GemmTile{64, 64, 16, 4, 4, 4, 2},  // 256 invocations, 16 accumulators
      GemmTile{32, 32, 8, 2, 2, 4, 2},   // 256 invocations, 4 accumulators: small or skinny problems
  };
}

codegen::GemmTiledParams chooseGemmTiling(uint32_t M, uint32_t N, uint32_t K, uint32_t batch,
                                          const codegen::GemmDeviceLimits& limits,
                                          codegen::GemmTiledParams base) {
  (void)K; // K sets the loop length, not the parallelism: every candidate streams K the same way.
  const auto fits = [&](const GemmTile& t) {
    codegen::GemmTiledParams p = base;
    p.tile = t;
    try {
      p.validate(limits);
    } catch (const std::invalid_argument&) {
      return false;
    }
    return limits.subgroupSize == 0 || t.threads() % limits.subgroupSize == 0; // no partial subgroups
  };
  const auto workgroups = [&](const GemmTile& t) {
    return uint64_t{(M + t.BM - 1) / t.BM} * ((N + t.BN - 1) / t.BN) * std::max(batch, 1u);
  };
  // 64 invocations and 1.2 KiB of shared memory: fits the smallest limits Vulkan allows.
  GemmTile chosen{16, 16, 8, 2, 2, 2, 1};
  for (const GemmTile& t : gemmTiledCandidates()) {
    if (!fits(t)) continue;
    chosen = t; // the smallest fitting one so far
    if (workgroups(t) >= limits.targetWorkgroups) break;
  }
  base.tile = chosen;
  return base;
}

} // namespace helios::ops
