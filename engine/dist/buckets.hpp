#pragma once
// How the gradients are cut for averaging: buckets of at most a given size, last parameter group first (the
// backward produces the last layers' gradients first), each a run of floats of one group. Bucket starts, in
// the group and in the host staging, sit on `alignFloats` boundaries (storage-buffer offset alignment).
#include <cstdint>
#include <span>
#include <vector>

namespace helios::dist {

struct Bucket {
  uint32_t group = 0;
  uint32_t first = 0, count = 0; // floats of the group's flat buffer
  uint64_t stage = 0;            // first float in the staging buffer
};

// `capFloats` is rounded down to a multiple of alignFloats (at least one). Covers every float exactly once.
std::vector<Bucket> planBuckets(std::span<const uint32_t> groupFloats, uint64_t capFloats,
                                uint32_t alignFloats);
// Floats the staging needs for `buckets` (the last bucket's end).
uint64_t stagedFloats(std::span<const Bucket> buckets);

} // namespace helios::dist
