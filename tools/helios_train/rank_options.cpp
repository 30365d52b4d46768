#include "rank_options.hpp"

#include <cmath>
#include <fmt/format.h>
#include <stdexcept>
#include <vector>

namespace helios::train_cli {

namespace {

std::vector<std::string> entries(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t comma; (comma = text.find(',', start)) != std::string::npos; start = comma + 1)
    out.push_back(text.substr(start, comma - start));
  out.push_back(text.substr(start));
  return out;
}

} // namespace

std::string rankEntry(const std::string& text, int rank, int ranks, const char* flag) {
  const std::vector<std::string> list = entries(text);
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].empty())
      throw std::invalid_argument(fmt::format("{} {}: entry {} is empty", flag, text, i + 1));
  if (list.size() == 1) return list[0];
  if (list.size() != size_t(ranks))
    throw std::invalid_argument(
        fmt::format("{} {} lists {} entries for {} rank{}: give one for every rank or "
                    "one per rank (in rank order)",
                    flag, text, list.size(), ranks, ranks == 1 ? "" : "s"));
  return list[size_t(rank)];
}

double rankDelay(const std::string& text, int rank, int ranks) {
  if (text.empty()) return 0;
  const std::string entry = rankEntry(text, rank, ranks, "--dist-delay");
  size_t used = 0;
  double ms = -1;
  try {
    ms = std::stod(entry, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != entry.size() || !std::isfinite(ms) || ms < 0)
    throw std::invalid_argument(
        fmt::format("--dist-delay {}: '{}' is not a number of milliseconds of at least 0", text, entry));
  return ms;
}

} // namespace helios::train_cli
