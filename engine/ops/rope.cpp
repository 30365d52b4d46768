#include "engine/ops/rope.hpp"

#include "engine/ops/elementwise.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace helios::ops {

std::vector<float> ropeTable(uint32_t rows, uint32_t headDim, double base) {
  if (headDim == 0 || headDim % 2 != 0)
    throw std::invalid_argument("ops::ropeTable: head dim must be even and positive, got " +
                                std::to_string(headDim));
  std::vector<double> freqs(headDim / 2);
  for (uint32_t i = 0; i < freqs.size(); ++i)
    freqs[i] = std::pow(base, -2.0 * double(i) / double(headDim));
  return ropeTable(rows, freqs);
}

std::vector<float> ropeTable(uint32_t rows, const std::vector<double>& inverseFrequencies) {
  if (inverseFrequencies.empty()) throw std::invalid_argument("ops::ropeTable: no frequencies");
  const size_t half = inverseFrequencies.size();
  std::vector<float> t(size_t(rows) * half * 2);
  for (uint32_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < half; ++i) {
      const double theta = double(r) * inverseFrequencies[i];
      t[(size_t(r) * half + i) * 2] = static_cast<float>(std::cos(theta));
      t[(size_t(r) * half + i) * 2 + 1] = static_cast<float>(std::sin(theta));
    }
  return t;
}

void rope(Executor& exec, vk::BufferRange x, vk::BufferRange table, vk::BufferRange y, uint32_t rows,
          uint32_t headDim, uint32_t T, bool inverse, const RopePositions& given) {
  if (headDim == 0 || headDim % 2 != 0)
    throw std::invalid_argument("ops::rope: head dim must be even and positive, got " +
                                std::to_string(headDim));
  if (T == 0) throw std::invalid_argument("ops::rope: T is 0");
  const uint64_t elems = uint64_t(rows) * headDim;
  if (elems >= (1ull << 31)) throw std::invalid_argument("ops::rope: more than 2^31 elements");
  if (rows == 0) return;
  const auto need = [](const char* name, const vk::BufferRange& r, uint64_t n) {
    if (r.size != 0 && r.size < n * 4)
      throw std::invalid_argument(std::string("ops::rope: ") + name + " holds " + std::to_string(r.size) +
                                  " bytes, " + std::to_string(n * 4) + " needed");
  };
  need("x", x, elems);
  need("y", y, elems);
  need("table", table, uint64_t(std::min(rows, T)) * headDim);
  const bool positions = given.positions.buffer != VK_NULL_HANDLE;
  const uint64_t sequenceRows = uint64_t(given.heads) * T;
  if (positions) {
    if (given.heads == 0 || rows % sequenceRows != 0)
      throw std::invalid_argument("ops::rope: " + std::to_string(rows) + " rows are not whole sequences of " +
                                  std::to_string(given.heads) + " heads x " + std::to_string(T) + " steps");
    need("positions", given.positions, rows / given.heads);
  }
  codegen::RopePush push;
  push.pairs = static_cast<uint32_t>(elems / 2);
  push.half = headDim / 2;
  push.T = T;
  push.sign = inverse ? -1.0f : 1.0f;
  push.sequenceRows = static_cast<uint32_t>(sequenceRows);
  const codegen::RopeParams params{256, positions ? codegen::RopePositions::Given
                                                  : codegen::RopePositions::RowInSequence};
  const vk::Pipeline& pipe =
      exec.pipeline(params, [](const codegen::RopeParams& p) { return codegen::generateRope(p); });
  std::vector<Binding> bindings{{x, Access::Read}, {table, Access::Read}, {y, Access::Write}};
  if (positions) bindings.push_back({given.positions, Access::Read});
  exec.dispatch(pipe, bindings, &push, sizeof push,
                {gridStrideGroups(exec.context(), push.pairs, params.localSize), 1, 1});
}

} // namespace helios::ops
