#include "engine/graph/hazards.hpp"

namespace helios::graph {

namespace {
bool writes(ops::Access a) {
  return a != ops::Access::Read;
}
bool reads(ops::Access a) {
  return a != ops::Access::Write;
}
} // namespace

bool HazardTracker::overlaps(const std::vector<Range>& set, const Range& r) {
  for (const auto& s : set)
    if (s.buffer == r.buffer && s.begin < r.end && r.begin < s.end) return true;
  return false;
}

bool HazardTracker::needsBarrier(std::span<const ops::Binding> bindings) const {
  for (const auto& b : bindings) {
    Range r{b.range.buffer, b.range.offset, b.range.offset + b.range.size};
    if (overlaps(writes_, r)) return true;                    // RAW or WAW
    if (writes(b.access) && overlaps(reads_, r)) return true; // WAR
  }
  return false;
}

void HazardTracker::record(std::span<const ops::Binding> bindings) {
  for (const auto& b : bindings) {
    Range r{b.range.buffer, b.range.offset, b.range.offset + b.range.size};
    if (writes(b.access)) writes_.push_back(r);
    if (reads(b.access)) reads_.push_back(r);
  }
}

void HazardTracker::barrier() {
  reads_.clear();
  writes_.clear();
}

} // namespace helios::graph
