#include "engine/dist/data_parallel.hpp"

#include "engine/ops/elementwise.hpp"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>

namespace helios::dist {

uint64_t hashValues(std::span<const float> values) {
  uint64_t h = 0xcbf29ce484222325ull;
  const size_t words = values.size() / 2;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, values.data() + 2 * i, 8);
    h = (h ^ w) * 0x100000001b3ull;
  }
  if (values.size() % 2) {
    uint32_t w;
    std::memcpy(&w, &values.back(), 4);
    h = (h ^ w) * 0x100000001b3ull;
  }
  return h;
}

DataParallel::DataParallel(vk::Context& ctx, Communicator& comm,
                           const std::vector<model::ParameterGroup>& groups, uint64_t bucketBytes,
                           uint32_t extraFloats)
    : comm_(comm), groups_(groups) {
  const auto alignF = static_cast<uint32_t>(ctx.allocator().alignment() / 4);
  std::vector<uint32_t> floats;
  for (const auto& gr : groups)
    floats.push_back(gr.elements);
  buckets_ = planBuckets(floats, bucketBytes / 4, alignF);
  extraStage_ = (stagedFloats(buckets_) + alignF - 1) / alignF * alignF;
  uint64_t total = extraStage_ + extraFloats;
  for (const auto& gr : groups) // broadcasts and hashes stage one group at a time
    total = std::max<uint64_t>(total, gr.elements);
  stage_ = ctx.buffer(4 * total, "data-parallel staging", vk::MemoryKind::Readback);
  alignFloats_ = alignF;
  openWindow(ctx);
}

// The window when the communicator offers one and the device imports it; otherwise the copy path stays.
void DataParallel::openWindow(vk::Context& ctx) {
  const vk::Device& device = ctx.device();
  const uint64_t align = device.hostImportAlignment();
  if (!device.features().externalMemoryHost || align == 0 || align > 4096) return; // within one page
  half_ = (stagedFloats(buckets_) + alignFloats_ - 1) / alignFloats_ * alignFloats_;
  const uint64_t lead = alignFloats_; // room to move each segment's use onto a descriptor-aligned float
  SharedWindow* w = comm_.sharedWindow(lead + 2 * half_, "opening the gradient window");
  if (!w || w->memory().empty()) return;
  // Import whole pages around the window: they belong to the same mapping.
  const auto base = reinterpret_cast<uintptr_t>(w->memory().data());
  const uintptr_t first = base / align * align;
  const uintptr_t end = (base + w->memory().size_bytes() + align - 1) / align * align;
  const uint64_t alignBytes = 4ull * alignFloats_;
  const uint64_t offset = base - first; // segment 0's first byte in the imported buffer
  bufferLead_ = offset / 4;
  segmentLead_ = ((offset + alignBytes - 1) / alignBytes * alignBytes - offset) / 4;
  try {
    windowBuffer_ = vk::ImportedHostBuffer(device, reinterpret_cast<void*>(first), end - first,
                                           "the data-parallel gradient window");
  } catch (const std::exception&) { // the driver refused this memory: the copy path stays (same results)
    return;
  }
  window_ = w;
}

std::span<float> DataParallel::toHost(graph::GraphExecutor& g, std::span<const Piece> pieces) {
  uint64_t end = 0;
  for (const auto& p : pieces) {
    ops::copy(g, p.range, vk::subrange(stage_.range(), 4 * p.stage, 4ull * p.count), p.count);
    end = std::max(end, p.stage + p.count);
  }
  g.syncHost(vk::subrange(stage_.range(), 0, 4 * end), false);
  return {reinterpret_cast<float*>(stage_.mapped()), end};
}

std::span<float> DataParallel::forHost(graph::GraphExecutor& g, uint64_t floats) {
  g.syncHost(vk::subrange(stage_.range(), 0, 4 * floats), true);
  return {reinterpret_cast<float*>(stage_.mapped()), floats};
}

void DataParallel::fromHost(graph::GraphExecutor& g, std::span<const Piece> pieces) {
  for (const auto& p : pieces) // coherent memory: the host's writes are visible to work submitted after them
    ops::copy(g, vk::subrange(stage_.range(), 4 * p.stage, 4ull * p.count), p.range, p.count);
}

vk::BufferRange DataParallel::windowRange(int rank, uint64_t first, uint64_t count) const {
  const uint64_t at =
      bufferLead_ + uint64_t(rank) * window_->segmentFloats() + segmentLead_ + parity_ * half_ + first;
  return vk::subrange(windowBuffer_.range(), 4 * at, 4 * count);
}

// The GPU writes its gradients into its own segment, the ranks sum slices in place, and the GPU reads each
// summed slice from its owner's segment. The losses take the copy path (a few floats).
void DataParallel::reduceThroughWindow(graph::GraphExecutor& g, const vk::BufferRange& losses) {
  const auto lossFloats = static_cast<uint32_t>(losses.size / 4);
  for (const auto& b : buckets_)
    ops::copy(g, vk::subrange(groups_[b.group].grad, 4ull * b.first, 4ull * b.count),
              windowRange(rank(), b.stage, b.count), b.count);
  ops::copy(g, losses, vk::subrange(stage_.range(), 0, 4 * lossFloats), lossFloats);
  g.syncHost(windowRange(rank(), 0, half_), false);
  g.syncHost(vk::subrange(stage_.range(), 0, 4 * lossFloats), false);

  std::vector<Slice> ranges;
  const uint64_t segmentHalf = segmentLead_ + parity_ * half_; // the ranges in segment coordinates
  for (const auto& b : buckets_)
    ranges.push_back({segmentHalf + b.stage, b.count});
  window_->sumSlices(ranges, alignFloats_, "summing gradients");
  comm_.allreduceMean({reinterpret_cast<float*>(stage_.mapped()), lossFloats}, "averaging losses");

  for (const auto& b : buckets_)
    for (int r = 0; r < size(); ++r) {
      const Slice s = sliceOf(b.count, r, size(), alignFloats_);
      if (!s.count) continue;
      ops::copy(g, windowRange(r, b.stage + s.first, s.count),
                vk::subrange(groups_[b.group].grad, 4ull * (b.first + s.first), 4ull * s.count),
                static_cast<uint32_t>(s.count));
    }
  ops::copy(g, vk::subrange(stage_.range(), 0, 4 * lossFloats), losses, lossFloats);
  parity_ ^= 1;
}

void DataParallel::reduceGradients(graph::GraphExecutor& g, const vk::BufferRange& losses) {
  if (window_) return reduceThroughWindow(g, losses);
  std::vector<Piece> pieces;
  for (const auto& b : buckets_)
    pieces.push_back({vk::subrange(groups_[b.group].grad, 4ull * b.first, 4ull * b.count), b.stage, b.count});
  pieces.push_back({losses, extraStage_, static_cast<uint32_t>(losses.size / 4)});
  std::span<float> host = toHost(g, pieces);
  for (size_t i = 0; i + 1 < pieces.size(); ++i) // in bucket order: the last layers' gradients first
    comm_.allreduceSum(host.subspan(pieces[i].stage, pieces[i].count), "summing gradients");
  comm_.allreduceMean(host.subspan(pieces.back().stage, pieces.back().count), "averaging losses");
  fromHost(g, pieces);
}

void DataParallel::broadcastState(graph::GraphExecutor& g) {
  for (const auto& gr : groups_)
    for (const vk::BufferRange* r : {&gr.data, &gr.m, &gr.v}) {
      const Piece p{*r, 0, gr.elements};
      if (rank() == 0) {
        comm_.broadcast(std::as_writable_bytes(toHost(g, {&p, 1})), "sending rank 0's parameters");
      } else {
        comm_.broadcast(std::as_writable_bytes(forHost(g, p.count)), "receiving rank 0's parameters");
        fromHost(g, {&p, 1});
      }
    }
  g.flush();
}

uint64_t DataParallel::parameterHash(graph::GraphExecutor& g) {
  uint64_t h = 0;
  for (const auto& gr : groups_) {
    const Piece p{gr.data, 0, gr.elements};
    h = h * 0x9e3779b97f4a7c15ull ^ hashValues(toHost(g, {&p, 1}));
  }
  return h;
}

void DataParallel::checkIdentical(graph::GraphExecutor& g, uint64_t step) {
  const std::vector<uint64_t> hashes = comm_.allgather(parameterHash(g), "comparing parameter hashes");
  std::string differ;
  for (size_t r = 1; r < hashes.size(); ++r)
    if (hashes[r] != hashes[0]) differ += fmt::format(", rank {} {:016x}", r, hashes[r]);
  if (!differ.empty())
    throw Error(fmt::format("after step {}: the parameters differ across ranks (hash of rank 0 {:016x}{}): "
                            "the ranks no longer train the same model",
                            step, hashes[0], differ));
}

} // namespace helios::dist
