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

void DispatchLog::add(std::span<const ops::Binding> b) {
  starts.push_back(bindings.size());
  bindings.insert(bindings.end(), b.begin(), b.end());
}

std::span<const ops::Binding> DispatchLog::dispatch(size_t i) const {
  const size_t end = i + 1 < starts.size() ? starts[i + 1] : bindings.size();
  return std::span(bindings).subspan(starts[i], end - starts[i]);
}

std::vector<uint32_t> barrierEpochs(const DispatchLog& log) {
  HazardTracker h;
  std::vector<uint32_t> epochs(log.size());
  uint32_t barriers = 0;
  for (size_t i = 0; i < log.size(); ++i) {
    const auto d = log.dispatch(i);
    if (h.needsBarrier(d)) {
      h.barrier();
      ++barriers;
    }
    h.record(d);
    epochs[i] = barriers;
  }
  return epochs;
}

} // namespace helios::graph
