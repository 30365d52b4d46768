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

void DataParallel::reduceGradients(graph::GraphExecutor& g, const vk::BufferRange& losses) {
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
