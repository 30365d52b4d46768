#include "engine/train/chat_pack.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <stdexcept>

namespace helios::train {

namespace {

// Best-fit decreasing: for each sequence, the examples placed in it, in placement order.
std::vector<std::vector<size_t>> placeExamples(const std::vector<ChatExample>& examples, uint32_t T) {
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return examples[a].ids.size() > examples[b].ids.size(); });
  std::vector<std::vector<size_t>> sequences;
  std::multimap<uint32_t, size_t> room; // free tokens -> sequence (ties: the one that got there first)
  for (size_t e : order) {
    const uint32_t length = static_cast<uint32_t>(examples[e].ids.size() - 1);
    auto it = room.lower_bound(length);
    size_t s = sequences.size();
    uint32_t left = T;
    if (it != room.end()) {
      s = it->second;
      left = it->first;
      room.erase(it);
    } else {
      sequences.emplace_back();
    }
    sequences[s].push_back(e);
    if (left > length) room.emplace(left - length, s);
  }
  return sequences;
}

} // namespace

PackedChat packChat(const std::vector<ChatExample>& examples, uint32_t T, int32_t padId) {
  if (T == 0) throw std::invalid_argument("packChat: the sequence length is 0");
  for (const ChatExample& e : examples)
    if (e.ids.size() < 2 || e.ids.size() > uint64_t(T) + 1 || e.trained.size() != e.ids.size())
      throw std::invalid_argument(fmt::format(
          "packChat: the example of line {} has {} ids, not 2 to T + 1 = {}", e.line, e.ids.size(), T + 1));
  const std::vector<std::vector<size_t>> placed = placeExamples(examples, T);
  PackedChat p;
  p.T = T;
  p.examples = examples.size();
  p.tokens.assign(placed.size() * T, padId);
  p.targets.assign(placed.size() * T, -1);
  p.positions.assign(placed.size() * T, 0);
  p.trained.assign(placed.size(), 0);
  for (size_t s = 0; s < placed.size(); ++s) {
    size_t at = s * T;
    for (size_t e : placed[s]) {
      const ChatExample& x = examples[e];
      for (size_t k = 0; k + 1 < x.ids.size(); ++k, ++at) {
        p.tokens[at] = x.ids[k];
        p.targets[at] = x.trained[k + 1] ? x.ids[k + 1] : -1;
        p.positions[at] = static_cast<int32_t>(k);
        p.trained[s] += x.trained[k + 1];
      }
      p.exampleTokens += x.ids.size() - 1;
    }
    for (int32_t k = 0; at < (s + 1) * T; ++at, ++k) // the padding: a document of its own
      p.positions[at] = k;
  }
  return p;
}

} // namespace helios::train
