#include "engine/dist/buckets.hpp"

#include <algorithm>

namespace helios::dist {

std::vector<Bucket> planBuckets(std::span<const uint32_t> groupFloats, uint64_t capFloats,
                                uint32_t alignFloats) {
  const uint64_t align = std::max<uint32_t>(alignFloats, 1);
  const uint64_t cap = std::max<uint64_t>(capFloats / align * align, align);
  std::vector<Bucket> out;
  uint64_t stage = 0;
  for (size_t g = groupFloats.size(); g-- > 0;) {
    const uint64_t n = groupFloats[g];
    if (n == 0) continue;
    for (uint64_t start = (n - 1) / cap * cap;; start -= cap) { // aligned starts, the group's end first
      const auto count = static_cast<uint32_t>(std::min(cap, n - start));
      out.push_back({static_cast<uint32_t>(g), static_cast<uint32_t>(start), count, stage});
      stage += (count + align - 1) / align * align;
      if (start == 0) break;
    }
  }
  return out;
}

uint64_t stagedFloats(std::span<const Bucket> buckets) {
  return buckets.empty() ? 0 : buckets.back().stage + buckets.back().count;
}

} // namespace helios::dist
