#include "engine/dist/data_parallel.hpp"

#include "engine/ops/elementwise.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>
#include <thread>

namespace helios::dist {

namespace {

using Clock = DataParallel::Clock;

double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// A group's values as 32-bit words (bf16 values travel in pairs: a group's bf16 element count is even).
uint32_t valueWords(const model::ParameterGroup& gr) {
  return gr.elements / (4 / codegen::elemBytes(gr.dtype));
}

} // namespace

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
                           uint32_t extraFloats, PeerOptions options)
    : comm_(comm), options_(options), groups_(groups) {
  if (options_.weight <= 0) options_.weight = 1.0 / comm.size();
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

vk::BufferRange DataParallel::windowRange(int rank, uint64_t first, uint64_t count) const {
  const uint64_t at = bufferLead_ + uint64_t(rank) * window_->segmentFloats() + segmentLead_ + half() + first;
  return vk::subrange(windowBuffer_.range(), 4 * at, 4 * count);
}

void DataParallel::toWindow(graph::GraphExecutor& g, uint32_t b) {
  const Piece p = bucketPiece(b);
  ops::copy(g, p.range, windowRange(rank(), p.stage, p.count), p.count);
}

void DataParallel::sumInWindow(std::span<const uint32_t> buckets) {
  std::vector<Slice> ranges; // in segment coordinates
  for (uint32_t b : buckets)
    ranges.push_back({segmentLead_ + half() + buckets_[b].stage, buckets_[b].count});
  window_->sumSlices(ranges, alignFloats_, "summing gradients");
}

// Each bucket's summed slices, read by the GPU from their owners' segments.
void DataParallel::fromWindow(graph::GraphExecutor& g) {
  for (const auto& b : buckets_)
    for (int r = 0; r < size(); ++r) {
      const Slice s = sliceOf(b.count, r, size(), alignFloats_);
      if (!s.count) continue;
      ops::copy(g, windowRange(r, b.stage + s.first, s.count),
                vk::subrange(groups_[b.group].grad, 4ull * (b.first + s.first), 4ull * s.count),
                static_cast<uint32_t>(s.count));
    }
}

void DataParallel::sumWeighted(std::span<float> values, const char* what) {
  const auto w = static_cast<float>(options_.weight);
  for (float& v : values)
    v *= w;
  comm_.allreduceSum(values, what);
}

// The losses' weighted sum, through the staging (a few floats): the copy there, the wait, the sum, the copy
// back.
void DataParallel::averageLosses(graph::GraphExecutor& g, const vk::BufferRange& losses) {
  const Piece loss = lossPiece(losses);
  std::span<float> lossHost = toHost(g, {&loss, 1}).subspan(loss.stage, loss.count);
  sumWeighted(lossHost, "averaging losses");
  fromHost(g, {&loss, 1});
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

DataParallel::Piece DataParallel::bucketPiece(size_t b) const {
  const Bucket& k = buckets_[b];
  return {vk::subrange(groups_[k.group].grad, 4ull * k.first, 4ull * k.count), k.stage, k.count};
}

DataParallel::Piece DataParallel::lossPiece(const vk::BufferRange& losses) const {
  return {losses, extraStage_, static_cast<uint32_t>(losses.size / 4)};
}

DataParallel::Clock::time_point DataParallel::reduceGradients(graph::GraphExecutor& g,
                                                              const vk::BufferRange& losses, uint64_t step) {
  const Clock::time_point t0 = Clock::now();
  if (window_) { // the GPU writes its own segment, the ranks sum in place, the GPU reads the owners' slices
    std::vector<uint32_t> all;
    for (uint32_t b = 0; b < buckets_.size(); ++b) {
      toWindow(g, b);
      all.push_back(b);
    }
    g.syncHost(windowRange(rank(), 0, half_), false);
    const Clock::time_point readyAt = Clock::now();
    const double ready = msSince(t0);
    sumInWindow(all);
    averageLosses(g, losses);
    fromWindow(g);
    if (trace_) writeTrace(step, false, {ready}, {msSince(t0)}, ready);
    return readyAt;
  }
  std::vector<Piece> pieces;
  for (size_t b = 0; b < buckets_.size(); ++b)
    pieces.push_back(bucketPiece(b));
  pieces.push_back(lossPiece(losses));
  std::span<float> host = toHost(g, pieces);
  const Clock::time_point readyAt = Clock::now();
  const double ready = msSince(t0);
  for (size_t i = 0; i + 1 < pieces.size(); ++i) // in bucket order: the last layers' gradients first
    comm_.allreduceSum(host.subspan(pieces[i].stage, pieces[i].count), "summing gradients");
  sumWeighted(host.subspan(pieces.back().stage, pieces.back().count), "averaging losses");
  fromHost(g, pieces);
  if (trace_) writeTrace(step, false, {ready}, {msSince(t0)}, ready);
  return readyAt;
}

std::vector<vk::BufferRange> DataParallel::bucketRanges() const {
  std::vector<vk::BufferRange> out;
  for (size_t b = 0; b < buckets_.size(); ++b)
    out.push_back(bucketPiece(b).range);
  return out;
}

void DataParallel::planOverlap(graph::GraphExecutor& g, std::span<const uint64_t> lastWrites) {
  if (lastWrites.size() != buckets_.size())
    throw std::logic_error("planOverlap: one last write per bucket expected");
  plan_ = graph::planCuts(lastWrites);
  cuts_.after = plan_.after;
  cuts_.final.clear();
  for (const auto& members : plan_.members) {
    cuts_.final.emplace_back();
    for (uint32_t b : members)
      cuts_.final.back().push_back(bucketPiece(b).range);
  }
  cuts_.atCut = [this, &g](size_t cut) { // recorded once per token set: the window half goes with the set
    for (uint32_t b : plan_.members[cut]) {
      const Piece p = bucketPiece(b);
      if (window_)
        toWindow(g, b);
      else
        ops::copy(g, p.range, vk::subrange(stage_.range(), 4 * p.stage, 4ull * p.count), p.count);
    }
  };
}

DataParallel::Clock::time_point DataParallel::reduceOverlapped(graph::GraphExecutor& g,
                                                               const vk::BufferRange& losses, uint64_t step) {
  if (!overlapPlanned()) throw std::logic_error("reduceOverlapped before planOverlap");
  const Clock::time_point t0 = Clock::now();
  // When the GPU finished the last part: this rank's own work, which the host cannot see once an early
  // part's exchange has it waiting for the other ranks (the trace and the share balancer need it).
  double backwardEnd = 0;
  std::thread watcher([&, last = g.submittedValue()] {
    try {
      g.waitSubmitted(last);
      backwardEnd = msSince(t0);
    } catch (const std::exception&) {
      backwardEnd = -1; // the main thread reports what failed
    }
  });
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join{watcher};
  float* host = reinterpret_cast<float*>(stage_.mapped());
  std::vector<double> ready, exchanged;
  for (const auto& members : plan_.members) { // in the order the backward finishes them
    for (uint32_t b : members) {
      const Piece p = bucketPiece(b);
      g.syncHost(window_ ? windowRange(rank(), p.stage, p.count)
                         : vk::subrange(stage_.range(), 4 * p.stage, 4ull * p.count),
                 false); // its part is done
    }
    ready.push_back(msSince(t0));
    if (window_) {
      sumInWindow(members);
    } else {
      for (uint32_t b : members) {
        const Piece p = bucketPiece(b);
        comm_.allreduceSum({host + p.stage, p.count}, "summing gradients");
      }
    }
    exchanged.push_back(msSince(t0));
  }
  averageLosses(g, losses);
  if (window_) {
    fromWindow(g);
  } else {
    std::vector<Piece> pieces;
    for (size_t b = 0; b < buckets_.size(); ++b)
      pieces.push_back(bucketPiece(b));
    fromHost(g, pieces);
  }
  watcher.join();
  if (trace_) writeTrace(step, true, ready, exchanged, backwardEnd);
  return t0 + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double, std::milli>(std::max(backwardEnd, 0.0)));
}

void DataParallel::writeTrace(uint64_t step, bool overlapped, const std::vector<double>& ready,
                              const std::vector<double>& exchanged, double backwardEnd) {
  fmt::print(trace_.get(),
             "{{\"step\": {}, \"overlap\": {}, \"ready_ms\": [{:.3f}], \"exchanged_ms\": [{:.3f}], "
             "\"backward_end_ms\": {:.3f}}}\n",
             step, overlapped, fmt::join(ready, ", "), fmt::join(exchanged, ", "), backwardEnd);
}

void DataParallel::traceTo(const std::filesystem::path& path) {
  trace_.reset(std::fopen(path.c_str(), "w"));
  if (!trace_) throw std::runtime_error(fmt::format("cannot write the exchange trace {}", path.string()));
}

void DataParallel::broadcastState(graph::GraphExecutor& g) {
  for (const auto& gr : groups_)
    for (const vk::BufferRange* r : {&gr.data, &gr.m, &gr.v}) {
      const Piece p{*r, 0, r == &gr.data ? valueWords(gr) : gr.elements};
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
    const Piece p{gr.data, 0, valueWords(gr)};
    h = h * 0x9e3779b97f4a7c15ull ^ hashValues(toHost(g, {&p, 1}));
  }
  return h;
}

void DataParallel::adoptRankZero(graph::GraphExecutor& g, std::span<const vk::BufferRange> ranges) {
  std::vector<Piece> pieces;
  uint64_t at = 0;
  for (const auto& r : ranges) {
    pieces.push_back({r, at, static_cast<uint32_t>(r.size / 4)});
    at += (r.size / 4 + alignFloats_ - 1) / alignFloats_ * alignFloats_;
  }
  if (rank() == 0) {
    comm_.broadcast(std::as_writable_bytes(toHost(g, pieces)), "sending rank 0's optimizer control");
  } else {
    comm_.broadcast(std::as_writable_bytes(forHost(g, at)), "receiving rank 0's optimizer control");
    fromHost(g, pieces);
  }
}

// Unlike devices round the optimizer's arithmetic (division, square root, fused multiply-adds) their own
// way, so the ranks' parameters may drift apart by a few units in the last place; rank 0's state replaces the
// others'. A larger difference than rounding explains means the ranks train different models: an error.
void DataParallel::resynchronise(graph::GraphExecutor& g, uint64_t step) {
  constexpr double kRoundingOnly = 1e-3; // relative to the group's largest magnitude
  double worst = 0;
  std::string where;
  for (size_t k = 0; k < groups_.size(); ++k) {
    const model::ParameterGroup& gr = groups_[k];
    std::vector<float> mine;
    if (rank() != 0) {
      const Piece p{gr.data, 0, gr.elements};
      const std::span<float> own = toHost(g, {&p, 1});
      mine.assign(own.begin(), own.end());
    }
    for (const vk::BufferRange* r : {&gr.data, &gr.m, &gr.v}) {
      const Piece p{*r, 0, gr.elements};
      if (rank() == 0) {
        comm_.broadcast(std::as_writable_bytes(toHost(g, {&p, 1})), "sending rank 0's parameters");
        continue;
      }
      const std::span<float> root = forHost(g, p.count);
      comm_.broadcast(std::as_writable_bytes(root), "receiving rank 0's parameters");
      if (r == &gr.data) {
        double diff = 0, scale = 0;
        for (size_t i = 0; i < mine.size(); ++i) {
          diff = std::max(diff, double(std::abs(mine[i] - root[i])));
          scale = std::max(scale, double(std::abs(root[i])));
        }
        if (scale > 0 && diff / scale > worst) worst = diff / scale, where = fmt::format("group {}", k);
      }
      fromHost(g, {&p, 1});
    }
  }
  g.flush();
  if (worst > kRoundingOnly)
    throw Error(fmt::format("after step {}: {}'s parameters ({}) differ from rank 0's by {:.3g} of their "
                            "largest value, more than rounding on unlike devices explains",
                            step, comm_.rankName(rank()), where, worst));
}

void DataParallel::checkIdentical(graph::GraphExecutor& g, uint64_t step) {
  if (!options_.alike) {
    const std::vector<uint64_t> hashes = comm_.allgather(parameterHash(g), "comparing parameter hashes");
    if (std::adjacent_find(hashes.begin(), hashes.end(), std::not_equal_to<>()) != hashes.end())
      resynchronise(g, step);
    return;
  }
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
