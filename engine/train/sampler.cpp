#include "engine/train/sampler.hpp"

#include "engine/graph/arena.hpp"
#include "engine/graph/graph_executor.hpp"
#include "engine/train/data.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <stdexcept>

namespace helios::train {

namespace {

int32_t pick(std::vector<float> logits, const SampleOptions& o, SplitMix64& rng) {
  const auto best = std::max_element(logits.begin(), logits.end());
  if (o.temperature <= 0) return static_cast<int32_t>(best - logits.begin());
  std::vector<uint32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0u);
  if (o.topK > 0 && o.topK < order.size()) {
    std::partial_sort(order.begin(), order.begin() + o.topK, order.end(),
                      [&](uint32_t a, uint32_t b) { return logits[a] > logits[b]; });
    order.resize(o.topK);
  }
  std::vector<double> p(order.size());
  double sum = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    p[i] = std::exp(double(logits[order[i]] - *best) / o.temperature);
    sum += p[i];
  }
  double u = double(rng.next() >> 11) / 9007199254740992.0 * sum;
  for (size_t i = 0; i < order.size(); ++i) {
    if (u < p[i]) return static_cast<int32_t>(order[i]);
    u -= p[i];
  }
  return static_cast<int32_t>(order.back());
}

} // namespace

std::string generate(vk::Context& ctx, Model& model, const Tokenizer& tokenizer, const SampleOptions& o,
                     const std::function<void(const std::string&)>& onText) {
  if (!std::isfinite(o.temperature) || o.temperature < 0)
    throw std::invalid_argument(
        fmt::format("temperature must be a finite number >= 0 (0 = greedy), got {}", o.temperature));
  std::vector<int32_t> ids = tokenizer.encode(o.prompt);
  if (ids.empty()) {
    try {
      ids = tokenizer.encode("\n");
    } catch (const std::invalid_argument&) {
      ids = {0};
    }
  }
  const uint32_t V = model.vocab();
  const uint32_t want = static_cast<uint32_t>(ids.size()) + std::max(o.tokens, 1u);
  const uint32_t T = o.window ? o.window : std::min(model.context(), want);
  graph::GraphExecutor graph(ctx);
  graph::StepArena arena(ctx);
  vk::Buffer tokens = ctx.buffer(4ull * T, "sample tokens", vk::MemoryKind::Upload);
  vk::Buffer logits = ctx.buffer(4ull * T * V, "sample logits", vk::MemoryKind::Readback);
  SplitMix64 rng{o.seed};
  std::string out;
  std::vector<int32_t> window(T, 0);
  std::vector<float> row(V);
  for (uint32_t n = 0; n < o.tokens; ++n) {
    const size_t len = std::min<size_t>(ids.size(), T);
    std::fill(window.begin(), window.end(), 0);
    std::copy(ids.end() - static_cast<std::ptrdiff_t>(len), ids.end(), window.begin());
    graph.upload(tokens, std::as_bytes(std::span<const int32_t>(window)));
    graph.replayable("sample.forward", [&] {
      arena.reset();
      model.forward(graph, arena, tokens.range(), 1, T, logits.range());
    });
    graph.download(logits, std::as_writable_bytes(std::span<float>(row)), 4ull * (len - 1) * V);
    const int32_t next = pick(row, o, rng);
    ids.push_back(next);
    const std::string piece = tokenizer.decode(next);
    out += piece;
    if (onText) onText(piece);
  }
  return out;
}

} // namespace helios::train
