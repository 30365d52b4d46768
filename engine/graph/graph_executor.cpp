#include "engine/graph/graph_executor.hpp"

#include "engine/vk/error.hpp"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>

namespace helios::graph {

namespace {
bool isWrite(ops::Access a) {
  return a != ops::Access::Read;
}
} // namespace

GraphExecutor::GraphExecutor(vk::Context& ctx, GraphOptions options) : ctx_(ctx), options_(options) {
  const auto& dev = ctx.device();
  if (!dev.features().timelineSemaphore)
    throw std::runtime_error("the graph submitter needs timeline semaphores (Vulkan 1.2 core), which " +
                             dev.name() + " does not enable");
  if (options_.profile && dev.timestampPeriodNs() <= 0)
    throw std::runtime_error("profiling needs GPU timestamps, which the compute queue of " + dev.name() +
                             " cannot write");
  VkCommandPoolCreateInfo poolInfo{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  poolInfo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  poolInfo.queueFamilyIndex = dev.queueFamily();
  vk::check(vkCreateCommandPool(dev.handle(), &poolInfo, nullptr, &pool_),
            "creating the graph's command pool");
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo semInfo{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  semInfo.pNext = &type;
  vk::check(vkCreateSemaphore(dev.handle(), &semInfo, nullptr, &timeline_),
            "creating the graph's timeline semaphore");
}

GraphExecutor::~GraphExecutor() {
  const VkDevice dev = ctx_.device().handle();
  try {
    flush();
  } catch (...) {
    // Destruction must not throw; the device may be lost. Wait for idle as a last resort below.
  }
  vkDeviceWaitIdle(dev);
  for (auto& s : freshRing_)
    destroySegment(*s);
  for (auto& [key, parts] : replays_)
    for (auto& s : parts)
      destroySegment(*s);
  vkDestroySemaphore(dev, timeline_, nullptr);
  vkDestroyCommandPool(dev, pool_, nullptr);
}

uint64_t GraphExecutor::completedValue() const {
  uint64_t value = 0;
  vk::check(vkGetSemaphoreCounterValue(ctx_.device().handle(), timeline_, &value),
            "reading the graph's timeline");
  return value;
}

void GraphExecutor::waitValue(uint64_t value) {
  if (value == 0) return;
  if (value > submittedValue_) submitPending(); // the work is still being recorded: send it first
  waitSubmitted(value);
}

void GraphExecutor::waitSubmitted(uint64_t value) const {
  VkSemaphoreWaitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  info.semaphoreCount = 1;
  info.pSemaphores = &timeline_;
  info.pValues = &value;
  vk::check(vkWaitSemaphores(ctx_.device().handle(), &info, UINT64_MAX),
            fmt::format("waiting for GPU work (timeline value {})", value));
}

void GraphExecutor::destroySegment(Segment& seg) {
  vkFreeCommandBuffers(ctx_.device().handle(), pool_, 1, &seg.cmd);
  if (seg.queries) vkDestroyQueryPool(ctx_.device().handle(), seg.queries, nullptr);
}

std::unique_ptr<GraphExecutor::Segment> GraphExecutor::newSegment(bool replayable) {
  auto seg = std::make_unique<Segment>();
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  vk::check(vkAllocateCommandBuffers(ctx_.device().handle(), &alloc, &seg->cmd),
            "allocating a graph command buffer");
  if (options_.profile) {
    VkQueryPoolCreateInfo q{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    q.queryType = VK_QUERY_TYPE_TIMESTAMP;
    q.queryCount = options_.maxPendingDispatches + 1;
    vk::check(vkCreateQueryPool(ctx_.device().handle(), &q, nullptr, &seg->queries),
              "creating a timestamp pool");
  }
  seg->replayable = replayable;
  return seg;
}

GraphExecutor::Segment& GraphExecutor::openSegment() {
  if (recording_) return *recording_;
  Segment* seg = nullptr;
  if (freshRing_.size() < options_.ring) {
    freshRing_.push_back(newSegment(false));
    seg = freshRing_.back().get();
  } else {
    // Reuse the oldest fresh segment once the GPU is done with it (the only place the CPU may block on the
    // ring).
    seg = freshRing_[ringNext_].get();
    ringNext_ = (ringNext_ + 1) % freshRing_.size();
    if (std::find(pending_.begin(), pending_.end(), seg) != pending_.end()) submitPending();
    waitValue(seg->value);
    collectProfile(*seg);
  }
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk::check(vkResetCommandBuffer(seg->cmd, 0), "resetting a graph command buffer");
  vk::check(vkBeginCommandBuffer(seg->cmd, &begin), "beginning a graph command buffer");
  seg->names.clear();
  seg->touched.clear();
  seg->dispatches = seg->barriers = 0;
  if (seg->queries) {
    vkCmdResetQueryPool(seg->cmd, seg->queries, 0, options_.maxPendingDispatches + 1);
    vkCmdWriteTimestamp2(seg->cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, seg->queries, 0);
  }
  recording_ = seg;
  return *seg;
}

void GraphExecutor::recordBarrier(Segment& seg) {
  vk::recordFullBarrier(seg.cmd);
  seg.barriers++;
  hazards_.barrier();
}

void GraphExecutor::dispatch(const vk::Pipeline& pipeline, std::span<const ops::Binding> bindings,
                             const void* push, size_t pushBytes, vk::Groups groups) {
  // Validate before touching the command buffer so that a bad op leaves the graph usable.
  if (bindings.size() != pipeline.numBuffers)
    throw std::invalid_argument(fmt::format("kernel {} takes {} buffers, {} given", pipeline.name,
                                            pipeline.numBuffers, bindings.size()));
  if (pushBytes != pipeline.pushConstantBytes)
    throw std::invalid_argument(fmt::format("kernel {} takes {} bytes of push constants, {} given",
                                            pipeline.name, pipeline.pushConstantBytes, pushBytes));
  if (groups.x == 0 || groups.y == 0 || groups.z == 0) return;

  if (recording_ && !recording_->replayable && recording_->dispatches >= options_.maxPendingDispatches)
    closeSegment();
  Segment& seg = openSegment();
  if (hazards_.needsBarrier(bindings)) recordBarrier(seg);

  vk::BufferRange ranges[16]; // recording is a hot path: no allocation per dispatch
  if (bindings.size() > 16) throw std::invalid_argument("a kernel may bind at most 16 buffers");
  for (size_t i = 0; i < bindings.size(); ++i)
    ranges[i] = bindings[i].range;
  vk::recordDispatch(seg.cmd, pipeline, std::span(ranges, bindings.size()), push, pushBytes, groups);
  hazards_.record(bindings);
  seg.dispatches++;
  if (seg.queries) {
    if (seg.dispatches > options_.maxPendingDispatches)
      throw std::logic_error("profiled replayable segment longer than maxPendingDispatches");
    vkCmdWriteTimestamp2(seg.cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, seg.queries, seg.dispatches);
    seg.names.push_back(pipeline.name);
  }
  seg.touched.insert(seg.touched.end(), bindings.begin(), bindings.end());
  noteUses(bindings, pendingValue());
  if (inStep_) step_.dispatches++;
  if (!cutting_.cuts || cutting_.inAtCut) return;
  checkNotFinal(pipeline, bindings);
  ++cutting_.dispatches;
  if (cutting_.next < cutting_.cuts->after.size() &&
      cutting_.dispatches == cutting_.cuts->after[cutting_.next])
    cutHere();
}

void GraphExecutor::checkNotFinal(const vk::Pipeline& pipeline,
                                  std::span<const ops::Binding> bindings) const {
  const auto& final = cutting_.cuts->final;
  for (size_t cut = 0; cut < std::min(cutting_.next, final.size()); ++cut)
    for (const auto& r : final[cut])
      for (const auto& b : bindings)
        if (isWrite(b.access) && b.range.buffer == r.buffer && b.range.offset < r.offset + r.size &&
            r.offset < b.range.offset + b.range.size)
          throw std::logic_error(fmt::format("kernel {} (dispatch {} of the recording) writes a range final "
                                             "since cut {} (after dispatch {}): the cut plan does not match "
                                             "the recording",
                                             pipeline.name, cutting_.dispatches + 1, cut,
                                             cutting_.cuts->after[cut]));
}

void GraphExecutor::cutHere() {
  cutting_.inAtCut = true; // its dispatches belong to the part that ends here and do not count
  try {
    cutting_.cuts->atCut(cutting_.next);
  } catch (...) {
    cutting_.inAtCut = false;
    throw;
  }
  cutting_.inAtCut = false;
  ++cutting_.next;
  closeSegment();
  submitPending();
  cutting_.parts->push_back(newSegment(true));
  beginReplayableSegment(*cutting_.parts->back());
}

void GraphExecutor::closeSegment() {
  if (!recording_) return;
  vk::check(vkEndCommandBuffer(recording_->cmd), "ending a graph command buffer");
  if (inStep_) step_.barriers += recording_->barriers;
  pending_.push_back(recording_);
  recording_ = nullptr;
}

void GraphExecutor::submitPending() {
  closeSegment();
  if (pending_.empty()) return;
  const uint64_t value = ++submittedValue_;
  std::vector<VkCommandBufferSubmitInfo> cmds;
  for (Segment* s : pending_) {
    VkCommandBufferSubmitInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO};
    info.commandBuffer = s->cmd;
    cmds.push_back(info);
    s->value = value;
    s->profiled = false;
  }
  VkSemaphoreSubmitInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO};
  signal.semaphore = timeline_;
  signal.value = value;
  signal.stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
  VkSubmitInfo2 submit{VK_STRUCTURE_TYPE_SUBMIT_INFO_2};
  submit.commandBufferInfoCount = static_cast<uint32_t>(cmds.size());
  submit.pCommandBufferInfos = cmds.data();
  submit.signalSemaphoreInfoCount = 1;
  submit.pSignalSemaphoreInfos = &signal;
  vk::check(vkQueueSubmit2(ctx_.device().queue(), 1, &submit, VK_NULL_HANDLE),
            fmt::format("submitting {} graph command buffer(s) (vkQueueSubmit2)", cmds.size()));
  pending_.clear();
  totalSubmits_++;
  if (inStep_) step_.submits++;
}

void GraphExecutor::retain(vk::Buffer buffer) {
  if (recording_ && recording_->replayable)
    recording_->retained.push_back(std::move(buffer));
  else
    retained_.emplace_back(pendingValue(), std::move(buffer));
}

vk::BufferRange GraphExecutor::scratch(VkDeviceSize bytes, std::string_view what) {
  return scratchArena_ ? scratchArena_->allocate(bytes, what) : Executor::scratch(bytes, what);
}

void GraphExecutor::releaseCompleted() {
  if (retained_.empty()) return;
  const uint64_t done = completedValue();
  std::erase_if(retained_, [&](const auto& r) { return r.first <= done; });
}

void GraphExecutor::flush() {
  submitPending();
  waitValue(submittedValue_);
  releaseCompleted();
  for (auto& s : freshRing_)
    collectProfile(*s);
  for (auto& [key, parts] : replays_)
    for (auto& s : parts)
      collectProfile(*s);
}

void GraphExecutor::beginStep() {
  if (inStep_) throw std::logic_error("beginStep: the previous step was not ended");
  inStep_ = true;
  step_ = {};
  stepStartReserved_ = ctx_.allocator().stats().bytesReserved;
}

StepStats GraphExecutor::endStep() {
  if (!inStep_) throw std::logic_error("endStep without beginStep");
  submitPending();
  releaseCompleted();
  step_.bytesAllocated = ctx_.allocator().stats().bytesReserved - stepStartReserved_;
  inStep_ = false;
  ++steps_;
  if (options_.syncEvery && steps_ % options_.syncEvery == 0) waitValue(submittedValue_);
  return step_;
}

void GraphExecutor::beginReplayableSegment(Segment& seg) {
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT; // may be queued again before it finishes
  vk::check(vkBeginCommandBuffer(seg.cmd, &begin), "beginning a replayable command buffer");
  if (seg.queries) {
    vkCmdResetQueryPool(seg.cmd, seg.queries, 0, options_.maxPendingDispatches + 1);
    vkCmdWriteTimestamp2(seg.cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, seg.queries, 0);
  }
  recording_ = &seg;
}

void GraphExecutor::replay(std::vector<std::unique_ptr<Segment>>& parts, bool submitEach) {
  for (auto& part : parts) {
    Segment& seg = *part;
    if (seg.queries && !seg.profiled) {
      waitValue(seg.value); // its timestamps are about to be overwritten
      collectProfile(seg);
    }
    pending_.push_back(&seg);
    noteUses(seg.touched, pendingValue());
    if (inStep_) {
      step_.dispatches += seg.dispatches;
      step_.barriers += seg.barriers;
      step_.replayedSegments++;
    }
    if (submitEach) submitPending();
  }
  hazards_.barrier(); // the last part ends with a barrier (below), so nothing before it is pending
}

void GraphExecutor::replayable(const std::string& key, const std::function<void()>& record,
                               const Cuts* cuts) {
  closeSegment(); // a replayed segment stands alone in submission order
  if (auto it = replays_.find(key); it != replays_.end()) {
    replay(it->second, cuts != nullptr);
    return;
  }
  std::vector<std::unique_ptr<Segment>> parts;
  parts.push_back(newSegment(true));
  beginReplayableSegment(*parts.back());
  // Whatever runs before a replay is unknown when it is recorded: start and end with a barrier. Between the
  // parts none is needed: a barrier orders everything earlier in submission order, other submissions too.
  recordBarrier(*parts.back());
  if (cuts) cutting_ = {cuts, &parts};
  try {
    record();
    if (cuts && cutting_.next != cuts->after.size())
      throw std::logic_error(
          fmt::format("replayable '{}': the recording made {} dispatches, its cuts expected "
                      "one after dispatch {}",
                      key, cutting_.dispatches, cuts->after[cutting_.next]));
  } catch (...) {
    cutting_ = {};
    if (recording_) vkEndCommandBuffer(recording_->cmd);
    recording_ = nullptr;
    std::erase_if(pending_, [&](const Segment* s) {
      return std::any_of(parts.begin(), parts.end(), [&](const auto& p) { return p.get() == s; });
    });
    waitValue(submittedValue_); // parts already submitted
    for (auto& p : parts)
      destroySegment(*p);
    hazards_.barrier();
    throw;
  }
  cutting_ = {};
  recordBarrier(*parts.back());
  closeSegment();
  if (cuts) submitPending();
  replays_.emplace(key, std::move(parts));
}

void GraphExecutor::forgetReplays() {
  flush();
  for (auto& [key, parts] : replays_)
    for (auto& s : parts)
      destroySegment(*s);
  replays_.clear();
}

void GraphExecutor::noteUses(std::span<const ops::Binding> bindings, uint64_t value) {
  for (const auto& b : bindings) {
    auto& list = uses_[b.range.buffer];
    const VkDeviceSize begin = b.range.offset, end = b.range.offset + b.range.size;
    bool merged = false;
    for (auto& u : list)
      if (u.begin == begin && u.end == end) {
        u.lastUse = value;
        if (isWrite(b.access)) u.lastWrite = value;
        merged = true;
        break;
      }
    if (!merged) list.push_back({begin, end, isWrite(b.access) ? value : 0, value});
  }
}

uint64_t GraphExecutor::lastValueFor(const vk::BufferRange& range, bool writesOnly) const {
  auto it = uses_.find(range.buffer);
  if (it == uses_.end()) return 0;
  uint64_t value = 0;
  for (const auto& u : it->second)
    if (u.begin < range.offset + range.size && range.offset < u.end)
      value = std::max(value, writesOnly ? u.lastWrite : u.lastUse);
  return value;
}

void GraphExecutor::syncHost(const vk::BufferRange& range, bool write) {
  waitValue(lastValueFor(range, !write));
}

void GraphExecutor::download(const vk::Buffer& src, std::span<std::byte> dst, VkDeviceSize srcOffset) {
  vk::BufferRange range = src.range();
  range.offset += srcOffset;
  range.size = dst.size();
  waitValue(lastValueFor(range, true));
  ctx_.download(src, dst, srcOffset);
}

void GraphExecutor::upload(const vk::Buffer& dst, std::span<const std::byte> src, VkDeviceSize dstOffset) {
  vk::BufferRange range = dst.range();
  range.offset += dstOffset;
  range.size = src.size();
  waitValue(lastValueFor(range, false)); // no GPU work may still read or write what we overwrite
  ctx_.upload(dst, src, dstOffset);
}

void GraphExecutor::collectProfile(Segment& seg) {
  if (!seg.queries || seg.profiled || seg.value > completedValue()) return;
  seg.profiled = true;
  const uint32_t n = static_cast<uint32_t>(seg.names.size()) + 1;
  std::vector<uint64_t> ticks(n);
  if (vkGetQueryPoolResults(ctx_.device().handle(), seg.queries, 0, n, n * sizeof(uint64_t), ticks.data(),
                            sizeof(uint64_t), VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
    return;
  // Each dispatch is charged the time between the timestamp before it and the one after it; overlapping
  // independent dispatches therefore share their time approximately.
  for (uint32_t i = 1; i < n; ++i) {
    auto& p = profile_[seg.names[i - 1]];
    p.name = seg.names[i - 1];
    p.calls++;
    p.totalUs += static_cast<double>(ticks[i] - ticks[i - 1]) * ctx_.device().timestampPeriodNs() * 1e-3;
  }
}

std::vector<KernelProfile> GraphExecutor::profile() const {
  std::vector<KernelProfile> out;
  for (const auto& [name, p] : profile_)
    out.push_back(p);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.totalUs > b.totalUs; });
  return out;
}

} // namespace helios::graph
