#include "engine/graph/arena.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace helios::graph {

namespace {
VkDeviceSize alignUp(VkDeviceSize v, VkDeviceSize a) {
  return (std::max<VkDeviceSize>(v, 1) + a - 1) / a * a;
}
} // namespace

VkDeviceSize StepArena::alignment() const {
  return std::max<VkDeviceSize>(ctx_.allocator().alignment(), 256);
}

void StepArena::reset() {
  chunk_ = 0;
  offset_ = 0;
  used_ = 0;
}

vk::BufferRange StepArena::allocate(VkDeviceSize bytes, std::string_view what) {
  switch (mode_) {
  case Mode::Recording: {
    const VkDeviceSize at =
        recorded_.empty() ? 0 : recorded_.back().offset + alignUp(recorded_.back().bytes, alignment());
    recorded_.push_back({at, bytes, std::string(what)});
    return {virtualBuffer(), at, bytes};
  }
  case Mode::Planned:
    return planned(bytes);
  case Mode::Bump:
    break;
  }
  return bump(bytes, what);
}

vk::BufferRange StepArena::bump(VkDeviceSize bytes, std::string_view what) {
  const VkDeviceSize size = alignUp(bytes, ctx_.allocator().alignment());
  // First fit in chunk order; a chunk that is too small for this request is skipped for the rest of the step.
  while (chunk_ < chunks_.size() && offset_ + size > chunks_[chunk_].size()) {
    ++chunk_;
    offset_ = 0;
  }
  if (chunk_ == chunks_.size()) {
    chunks_.push_back(ctx_.buffer(std::max(size, chunkBytes_), what));
    offset_ = 0;
  }
  vk::BufferRange range = chunks_[chunk_].range();
  range.offset += offset_;
  range.size = bytes;
  offset_ += size;
  used_ += size;
  peak_ = std::max(peak_, used_);
  return range;
}

vk::BufferRange StepArena::planned(VkDeviceSize bytes) {
  if (next_ >= planSizes_.size() || planSizes_[next_] != bytes)
    throw std::logic_error(fmt::format(
        "StepArena: request {} of the planned step asks for {} bytes, the plan has {}", next_, bytes,
        next_ < planSizes_.size() ? fmt::format("{} bytes there", planSizes_[next_])
                                  : fmt::format("only {} requests", planSizes_.size())));
  const Placement& p = plan_->placements[next_++];
  vk::BufferRange range = bins_[p.bin].range();
  range.offset += p.offset;
  range.size = bytes;
  return range;
}

VkDeviceSize StepArena::reservedBytes() const {
  VkDeviceSize total = binBytes();
  for (const auto& c : chunks_)
    total += c.size();
  return total;
}

VkDeviceSize StepArena::binBytes() const {
  VkDeviceSize total = 0;
  for (const auto& b : bins_)
    total += b.size();
  return total;
}

void StepArena::beginRecording() {
  if (mode_ != Mode::Bump) throw std::logic_error("StepArena::beginRecording: already recording or planned");
  mode_ = Mode::Recording;
  recorded_.clear();
}

std::vector<StepArena::Request> StepArena::endRecording() {
  if (mode_ != Mode::Recording) throw std::logic_error("StepArena::endRecording without beginRecording");
  mode_ = Mode::Bump;
  return std::move(recorded_);
}

bool StepArena::fits(const MemoryPlan& plan) const {
  if (plan.binBytes.size() > bins_.size()) return false;
  for (size_t i = 0; i < plan.binBytes.size(); ++i)
    if (plan.binBytes[i] > bins_[i].size()) return false;
  return true;
}

void StepArena::provideBins(const MemoryPlan& plan) {
  std::vector<VkDeviceSize> sizes(std::max(plan.binBytes.size(), bins_.size()), 0);
  for (size_t i = 0; i < sizes.size(); ++i)
    sizes[i] =
        std::max(i < bins_.size() ? bins_[i].size() : 0, i < plan.binBytes.size() ? plan.binBytes[i] : 0);
  bins_.clear(); // the old bins go first: the new ones may take their memory
  for (VkDeviceSize s : sizes)
    bins_.push_back(ctx_.buffer(s, "step memory plan"));
  peak_ = std::max(peak_, binBytes());
}

void StepArena::usePlan(const MemoryPlan& plan, std::vector<VkDeviceSize> sizes) {
  if (mode_ != Mode::Bump) throw std::logic_error("StepArena::usePlan: already recording or planned");
  if (!fits(plan)) throw std::logic_error("StepArena::usePlan: the bins do not hold the plan (provideBins)");
  if (sizes.size() != plan.placements.size())
    throw std::logic_error("StepArena::usePlan: the plan places another number of requests");
  mode_ = Mode::Planned;
  plan_ = &plan;
  planSizes_ = std::move(sizes);
  next_ = 0;
}

void StepArena::endPlan() {
  if (mode_ != Mode::Planned) throw std::logic_error("StepArena::endPlan without usePlan");
  mode_ = Mode::Bump;
  plan_ = nullptr;
  if (next_ != planSizes_.size())
    throw std::logic_error(
        fmt::format("StepArena: the planned step made {} of its {} requests", next_, planSizes_.size()));
}

} // namespace helios::graph
