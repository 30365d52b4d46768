#pragma once
// Rotary position embedding (RoPE), "rotate half" form (GPT-NeoX / Hugging Face Llama): each row of D
// elements is split into halves x1 = x[0 : D/2), x2 = x[D/2 : D); pair i rotates by angle t * theta_i:
//   y1 = x1 * cos - x2 * sin,   y2 = x2 * cos + x1 * sin.
// The backward is the transposed rotation, i.e. the same kernel with sin negated (push `sign` = -1).
// Rows are consecutive [rows, D] vectors whose position is t = row % T (a [B, H, T, D] tensor), or with
// RopePositions::Given positions[(row / sequenceRows) * T + row % T] (per-token positions [B, T] int32, e.g.
// restarting with every document of a packed sequence; sequenceRows = H * T).
// cos/sin come from a table [tableRows > every position, D/2, 2] (cos, sin interleaved), computed once on the
// host. Bindings: 0 x (read), 1 table (read), 2 y (write; must not alias x), 3 positions (Given only).
#include <cstdint>
#include <string>

#include "codegen/kernel.hpp"
#include "codegen/kernels/push_block.hpp"
#include "codegen/registry.hpp"

namespace helios::codegen {

struct RopePush {
  uint32_t pairs = 0; // rows * D/2
  uint32_t half = 0;  // D/2
  uint32_t T = 0;
  float sign = 1.0f;         // +1 forward, -1 backward
  uint32_t sequenceRows = 0; // RopePositions::Given: rows per sequence (H * T)
};
static_assert(isPushBlock<RopePush>);

enum class RopePositions : uint8_t { RowInSequence, Given };

struct RopeParams {
  uint32_t localSize = 256;
  RopePositions positions = RopePositions::RowInSequence;
  std::string cacheKey() const; // "rope:f32:wg256" (":given" with given positions)
};

Kernel generateRope(const RopeParams& p);
void registerRope(KernelRegistry& registry);

} // namespace helios::codegen
