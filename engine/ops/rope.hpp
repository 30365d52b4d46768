#pragma once
// Rotary position embedding (codegen/kernels/rope.hpp), rotate-half form, f32.
#include "codegen/kernels/rope.hpp"
#include "engine/ops/executor.hpp"

#include <cstdint>
#include <vector>

namespace helios::ops {

// The host table the kernel reads: [rows, D/2, 2] floats (cos, sin) of t * base^(-2i/D), t < rows, computed
// in double. D must be even.
std::vector<float> ropeTable(uint32_t rows, uint32_t headDim, double base = 10000.0);
// The same for given inverse frequencies (D/2 of them; e.g. rescaled ones, engine/model/rope_frequencies).
std::vector<float> ropeTable(uint32_t rows, const std::vector<double>& inverseFrequencies);

// Per-token positions instead of r % T (sequence packing): rows of x are [B, heads, T], and row r sits at
// positions[b, t] (int32 [B, T], below the table's rows) of its batch b and step t.
struct RopePositions {
  vk::BufferRange positions; // empty: r % T
  uint32_t heads = 0;
};

// y = rope(x) (inverse = false) or the transposed rotation (inverse = true: the backward, dx from dy).
// x, y: rows x headDim f32 (row r at position r % T, or as `given`); table: ropeTable(>= T, headDim). y may
// not alias x.
void rope(Executor& exec, vk::BufferRange x, vk::BufferRange table, vk::BufferRange y, uint32_t rows,
          uint32_t headDim, uint32_t T, bool inverse = false, const RopePositions& given = {});

} // namespace helios::ops
