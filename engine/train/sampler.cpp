#include "engine/train/sampler.hpp"

#include "engine/graph/arena.hpp"
#include "engine/graph/graph_executor.hpp"
#include "engine/train/data.hpp"

#if HELIOS_TRAIN_HAVE_GPT
#include "engine/model/decoder.hpp"
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <stdexcept>

namespace helios::train {

namespace {

int32_t draw(const std::vector<std::pair<int32_t, double>>& dist, SplitMix64& rng) {
  if (dist.size() == 1) return dist[0].first;
  double u = double(rng.next() >> 11) / 9007199254740992.0;
  for (const auto& [id, p] : dist) {
    if (u < p) return id;
    u -= p;
  }
  return dist.back().first;
}

// Where the next token's logits come from: a full-window forward, or the KV-cache decoder.
class Stepper {
public:
  Stepper(vk::Context& ctx, Model& model, uint32_t T, bool kvCache)
      : model_(model), T_(T), graph_(ctx), arena_(ctx),
        tokens_(ctx.buffer(4ull * T, "sample tokens", vk::MemoryKind::Upload)),
        logits_(ctx.buffer(4ull * T * model.vocab(), "sample logits", vk::MemoryKind::Readback)),
        window_(T, 0), row_(model.vocab()) {
#if HELIOS_TRAIN_HAVE_GPT
    model::Gpt* gpt = model.gpt();
    if (kvCache && gpt && model::GptDecoder::unsupported(gpt->config()).empty())
      decoder_ = std::make_unique<model::GptDecoder>(ctx, *gpt, T);
#else
    (void)kvCache;
#endif
  }
  bool cached() const {
    return decoder_ != nullptr;
  }

  // The logits after ids (at most the last T of them count).
  const std::vector<float>& next(const std::vector<int32_t>& ids) {
    return decoder_ ? nextCached(ids) : nextWindow(ids);
  }

private:
  const std::vector<float>& nextWindow(const std::vector<int32_t>& ids) {
    const size_t len = std::min<size_t>(ids.size(), T_);
    std::fill(window_.begin(), window_.end(), 0);
    std::copy(ids.end() - static_cast<std::ptrdiff_t>(len), ids.end(), window_.begin());
    graph_.upload(tokens_, std::as_bytes(std::span<const int32_t>(window_)));
    graph_.replayable("sample.forward", [&] {
      arena_.reset();
      model_.forward(graph_, arena_, tokens_.range(), 1, T_, logits_.range());
    });
    graph_.download(logits_, std::as_writable_bytes(std::span<float>(row_)), 4ull * (len - 1) * row_.size());
    return row_;
  }

  // Feeds what the cache lacks; past the window, starts over from the last T tokens (as the window does).
  const std::vector<float>& nextCached(const std::vector<int32_t>& ids) {
#if HELIOS_TRAIN_HAVE_GPT
    if (ids.size() - start_ > T_) {
      start_ = ids.size() - T_;
      decoder_->reset();
    }
    const size_t from = start_ + decoder_->length();
    const uint32_t n = static_cast<uint32_t>(ids.size() - from);
    graph_.upload(tokens_, std::as_bytes(std::span<const int32_t>(ids.data() + from, n)));
    arena_.reset();
    decoder_->feed(graph_, arena_, tokens_.range(), n, logits_.range());
    graph_.download(logits_, std::as_writable_bytes(std::span<float>(row_)));
#else
    (void)ids;
#endif
    return row_;
  }

  Model& model_;
  uint32_t T_;
  graph::GraphExecutor graph_;
  graph::StepArena arena_;
  vk::Buffer tokens_, logits_;
  std::vector<int32_t> window_;
  std::vector<float> row_;
#if HELIOS_TRAIN_HAVE_GPT
  std::unique_ptr<model::GptDecoder> decoder_;
#else
  std::unique_ptr<int> decoder_;
#endif
  size_t start_ = 0; // ids[start_] sits at cache position 0
};

} // namespace

std::vector<std::pair<int32_t, double>> nextTokenDistribution(const std::vector<float>& logits,
                                                              float temperature, uint32_t topK, float topP) {
  if (logits.empty()) throw std::invalid_argument("nextTokenDistribution: no logits");
  if (temperature <= 0) {
    const auto best = std::max_element(logits.begin(), logits.end());
    return {{static_cast<int32_t>(best - logits.begin()), 1.0}};
  }
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  if (topK > 0 && topK < order.size()) order.resize(topK);
  std::vector<std::pair<int32_t, double>> dist;
  double sum = 0;
  for (int32_t id : order) {
    dist.emplace_back(id, std::exp(double(logits[id] - logits[order[0]]) / temperature));
    sum += dist.back().second;
  }
  for (auto& d : dist)
    d.second /= sum;
  if (topP < 1.0f) {
    double mass = 0;
    size_t keep = 0;
    while (keep < dist.size() && mass < topP)
      mass += dist[keep++].second;
    dist.resize(std::max<size_t>(keep, 1));
    for (auto& d : dist)
      d.second /= mass;
  }
  return dist;
}

std::string generate(vk::Context& ctx, Model& model, const Tokenizer& tokenizer, const SampleOptions& o,
                     const std::function<void(const std::string&)>& onText, SampleStats* stats) {
  if (!std::isfinite(o.temperature) || o.temperature < 0)
    throw std::invalid_argument(
        fmt::format("temperature must be a finite number >= 0 (0 = greedy), got {}", o.temperature));
  if (!(o.topP > 0 && o.topP <= 1))
    throw std::invalid_argument(fmt::format("top-p must be in (0, 1], got {}", o.topP));
  const std::optional<int32_t> eot = o.stopAtEot ? tokenizer.endOfText() : std::nullopt;
  if (o.stopAtEot && !eot)
    throw std::invalid_argument(
        fmt::format("stop at end-of-text: the {} tokenizer has no end-of-text token", tokenizer.kindName()));
  std::vector<int32_t> ids = o.promptIds.empty() ? tokenizer.encode(o.prompt) : o.promptIds;
  if (ids.empty()) {
    try {
      ids = tokenizer.encode("\n");
    } catch (const std::invalid_argument&) {
      ids = {0};
    }
  }
  const uint32_t want = static_cast<uint32_t>(ids.size()) + std::max(o.tokens, 1u);
  const uint32_t T = o.window ? o.window : std::min(model.context(), want);
  Stepper stepper(ctx, model, T, o.kvCache);
  SplitMix64 rng{o.seed};
  SampleStats st;
  st.kvCache = stepper.cached();
  st.promptIds = ids;
  const auto t0 = std::chrono::steady_clock::now();
  std::string out;
  for (uint32_t n = 0; n < o.tokens; ++n) {
    const int32_t next = draw(nextTokenDistribution(stepper.next(ids), o.temperature, o.topK, o.topP), rng);
    if ((eot && next == *eot) || std::find(o.stopIds.begin(), o.stopIds.end(), next) != o.stopIds.end()) {
      st.stoppedAtEot = true;
      break;
    }
    ids.push_back(next);
    st.generatedIds.push_back(next);
    ++st.tokens;
    const std::string piece = tokenizer.decode(next);
    out += piece;
    if (onText) onText(piece);
  }
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (stats) *stats = st;
  return out;
}

} // namespace helios::train
