#include "engine/dist/shares.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <stdexcept>

namespace helios::dist {

namespace {

double parseWeight(std::string_view entry, size_t index, std::string_view all) {
  double w = 0;
  const auto [end, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), w);
  if (entry.empty() || ec != std::errc() || end != entry.data() + entry.size() || !std::isfinite(w))
    throw std::invalid_argument(
        fmt::format("--share {}: share {} ('{}') is not a number (give auto, even, or "
                    "one positive number per rank, e.g. 7,1)",
                    all, index + 1, entry));
  if (w <= 0)
    throw std::invalid_argument(fmt::format("--share {}: share {} is {}: every rank needs a positive share "
                                            "(start fewer ranks to leave a device out)",
                                            all, index + 1, entry));
  return w;
}

} // namespace

const char* shareModeName(ShareMode mode) {
  switch (mode) {
  case ShareMode::Even:
    return "even";
  case ShareMode::Hand:
    return "by hand";
  case ShareMode::Measured:
    return "measured";
  }
  return "?";
}

ShareSpec parseShareSpec(std::string_view text) {
  ShareSpec spec;
  spec.text = std::string(text);
  if (text == "auto") {
    spec.mode = ShareMode::Measured;
    return spec;
  }
  if (text == "even") {
    spec.mode = ShareMode::Even;
    return spec;
  }
  spec.mode = ShareMode::Hand;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view entry =
        text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    spec.weights.push_back(parseWeight(entry, spec.weights.size(), text));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return spec;
}

ShareMode resolveMode(const ShareSpec& spec, bool alikeDevices) {
  if (spec.mode) return *spec.mode;
  return alikeDevices ? ShareMode::Even : ShareMode::Measured;
}

std::vector<uint32_t> rowsFromWeights(uint32_t batch, std::span<const double> weights) {
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<uint32_t> rows(weights.size());
  std::vector<double> remainder(weights.size());
  uint32_t given = 0;
  for (size_t r = 0; r < weights.size(); ++r) {
    const double exact = double(batch) * weights[r] / total;
    if (exact < 1.0)
      throw std::invalid_argument(fmt::format("rank {}'s share ({:g} of {:g}) of a micro-batch of {} "
                                              "sequences is {:.3g} sequences, less than one",
                                              r, weights[r], total, batch, exact));
    rows[r] = static_cast<uint32_t>(exact);
    remainder[r] = exact - rows[r];
    given += rows[r];
  }
  std::vector<size_t> order(weights.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
  for (size_t i = 0; given < batch; ++i, ++given)
    ++rows[order[i % order.size()]];
  return rows;
}

std::vector<uint32_t> initialRows(const ShareSpec& spec, ShareMode mode, uint32_t ranks, uint32_t batch) {
  if (mode != ShareMode::Hand) {
    if (batch < ranks)
      throw std::invalid_argument(
          fmt::format("--batch {} over {} ranks: each rank needs at least one sequence "
                      "of every micro-batch (--batch is the global micro-batch)",
                      batch, ranks));
    return rowsFromWeights(batch, std::vector<double>(ranks, 1.0));
  }
  if (spec.weights.size() != ranks)
    throw std::invalid_argument(fmt::format(
        "--share {} lists {} share{} for {} rank{}: give one per rank (in "
        "rank order), or auto or even",
        spec.text, spec.weights.size(), spec.weights.size() == 1 ? "" : "s", ranks, ranks == 1 ? "" : "s"));
  try {
    return rowsFromWeights(batch, spec.weights);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(
        fmt::format("--share {}: {}: raise --batch or that rank's share", spec.text, e.what()));
  }
}

std::vector<uint32_t> measuredStart(uint32_t batch, const std::vector<bool>& cpu) {
  const auto cpus = uint32_t(std::count(cpu.begin(), cpu.end(), true));
  const auto ranks = uint32_t(cpu.size());
  if (cpus == 0 || cpus == ranks) return rowsFromWeights(batch, std::vector<double>(ranks, 1.0));
  std::vector<double> gpuWeights(ranks - cpus, 1.0);
  const std::vector<uint32_t> gpuRows = rowsFromWeights(batch - cpus, gpuWeights);
  std::vector<uint32_t> rows;
  for (size_t r = 0, g = 0; r < ranks; ++r)
    rows.push_back(cpu[r] ? 1u : gpuRows[g++]);
  return rows;
}

RowRange rowsOf(std::span<const uint32_t> rows, size_t rank) {
  const auto first = std::accumulate(rows.begin(), rows.begin() + std::ptrdiff_t(rank), uint32_t(0));
  return {first, rows[rank]};
}

std::string describeRows(std::span<const uint32_t> rows) {
  std::string out;
  for (uint32_t r : rows)
    out += fmt::format("{}{}", out.empty() ? "" : "+", r);
  return out;
}

} // namespace helios::dist
