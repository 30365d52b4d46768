#pragma once
// A subgroup-scope coop GEMM tile: BM x BN x BK, its subgroups laid out rows x cols over it, and its shared
// memory stages. The one spelling of a tile: the kernel's parameters (GemmCoopParams::setTiling, tiling()),
// the planner's menu, the Tuning record (tuning::CoopTile) and the tuner use it; its string form
// "BMxBNxBK_sgRxC_sS" (e.g. "64x64x32_sg2x2_s2") is printed and parsed only at the edge
// (engine/tuning/values.hpp: files, the CLI, the environment).
#include <cstdint>

namespace helios::codegen {

struct CoopTile {
  uint32_t bm = 0, bn = 0, bk = 0, rows = 0, cols = 0, stages = 0;
  bool operator==(const CoopTile&) const = default;
};

} // namespace helios::codegen
