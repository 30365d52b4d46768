#include "engine/graph/cut_plan.hpp"

#include <algorithm>
#include <map>

namespace helios::graph {

namespace {

// The dry run: counts dispatches as GraphExecutor does and remembers the last write to each watched range.
class LastWriteFinder final : public ops::Executor {
public:
  LastWriteFinder(vk::Context& ctx, StepArena& arena, std::span<const vk::BufferRange> ranges)
      : ctx_(ctx), arena_(arena), ranges_(ranges), last_(ranges.size(), 0) {}
  vk::Context& context() override { return ctx_; }
  void dispatch(const vk::Pipeline&, std::span<const ops::Binding> bindings, const void*, size_t,
                vk::Groups groups) override {
    if (groups.x == 0 || groups.y == 0 || groups.z == 0) return;
    ++dispatches_;
    for (const auto& b : bindings)
      if (b.access != ops::Access::Read)
        for (size_t i = 0; i < ranges_.size(); ++i)
          if (overlaps(b.range, ranges_[i])) last_[i] = dispatches_;
  }
  void flush() override {}
  void retain(vk::Buffer) override {} // nothing runs: it may go at once
  vk::BufferRange scratch(VkDeviceSize bytes, std::string_view what) override {
    return arena_.allocate(bytes, what);
  }
  const std::vector<uint64_t>& lastWrites() const { return last_; }

private:
  static bool overlaps(const vk::BufferRange& a, const vk::BufferRange& b) {
    return a.buffer == b.buffer && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
  }
  vk::Context& ctx_;
  StepArena& arena_;
  std::span<const vk::BufferRange> ranges_;
  std::vector<uint64_t> last_;
  uint64_t dispatches_ = 0;
};

} // namespace

std::vector<uint64_t> findLastWrites(vk::Context& ctx, StepArena& arena, const StepRecording& record,
                                     std::span<const vk::BufferRange> ranges) {
  LastWriteFinder finder(ctx, arena, ranges);
  arena.beginRecording(); // virtual ranges: the dry run allocates nothing
  try {
    record(finder);
  } catch (...) {
    arena.endRecording();
    throw;
  }
  arena.endRecording();
  return finder.lastWrites();
}

CutPlan planCuts(std::span<const uint64_t> lastWrites) {
  std::map<uint64_t, std::vector<uint32_t>> byCut;
  for (size_t i = 0; i < lastWrites.size(); ++i)
    byCut[std::max<uint64_t>(lastWrites[i], 1)].push_back(static_cast<uint32_t>(i));
  CutPlan plan;
  for (auto& [after, members] : byCut) {
    plan.after.push_back(after);
    plan.members.push_back(std::move(members));
  }
  return plan;
}

} // namespace helios::graph
