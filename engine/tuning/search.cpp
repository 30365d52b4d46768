#include "engine/tuning/search.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace helios::tuning {

uint64_t SearchSpace::size() const {
  uint64_t n = 1;
  for (const Dimension& d : dims)
    n *= d.values.size();
  return n;
}

int64_t SearchSpace::value(const Candidate& c, const std::string& dim) const {
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i].name == dim) return dims[i].values.at(c.at(i));
  throw std::out_of_range("search space has no dimension " + dim);
}

Candidate mutate(const SearchSpace& space, const Candidate& c, std::mt19937_64& rng) {
  std::vector<size_t> movable;
  for (size_t i = 0; i < space.dims.size(); ++i)
    if (space.dims[i].values.size() > 1) movable.push_back(i);
  if (movable.empty()) return c;
  Candidate next = c;
  const size_t d = movable[std::uniform_int_distribution<size_t>(0, movable.size() - 1)(rng)];
  const uint32_t n = static_cast<uint32_t>(space.dims[d].values.size());
  if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
    next[d] = std::uniform_int_distribution<uint32_t>(0, n - 1)(rng);
  } else {
    const bool up = next[d] == 0 || (next[d] + 1 < n && std::uniform_int_distribution<int>(0, 1)(rng));
    next[d] = up ? next[d] + 1 : next[d] - 1;
  }
  return next;
}

std::vector<Scored> select(std::vector<Scored> scored, uint32_t keep) {
  std::erase_if(scored, [](const Scored& s) { return !std::isfinite(s.cost); });
  std::stable_sort(scored.begin(), scored.end(),
                   [](const Scored& a, const Scored& b) { return a.cost < b.cost; });
  if (scored.size() > keep) scored.resize(keep);
  return scored;
}

std::vector<Scored> evolve(const SearchSpace& space, const Candidate& start,
                           const std::function<double(const Candidate&)>& cost, const SearchOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::set<Candidate> seen;
  std::vector<Scored> all;
  const uint64_t limit = std::min<uint64_t>(o.maxEvaluations, space.size());
  const auto done = [&] { return all.size() >= limit || (o.stop && o.stop()); };
  const auto valid = [&](const Candidate& c) { return !space.valid || space.valid(c); };
  const auto best = [&] { return select(all, 1).empty() ? Scored{} : select(all, 1)[0]; };
  // Evaluates `c` unless seen; returns whether it was new.
  const auto evaluate = [&](const Candidate& c) {
    if (!seen.insert(c).second) return false;
    if (!valid(c)) return false; // counted as seen, not as an evaluation
    all.push_back({c, cost(c)});
    if (o.progress) o.progress(static_cast<uint32_t>(all.size()), best());
    return true;
  };
  const auto randomCandidate = [&] {
    Candidate c(space.dims.size());
    for (size_t i = 0; i < c.size(); ++i)
      c[i] = std::uniform_int_distribution<uint32_t>(0, static_cast<uint32_t>(space.dims[i].values.size()) -
                                                            1)(rng);
    return c;
  };
  if (valid(start)) evaluate(start);
  // Random starts up to the population.
  for (uint32_t tries = 0; all.size() < o.population && tries < 64 * o.population && !done(); ++tries)
    evaluate(randomCandidate());
  while (!done()) {
    std::vector<Scored> parents = select(all, o.population);
    if (parents.empty()) parents = {{start, 0.0}};
    uint32_t fresh = 0;
    for (uint32_t tries = 0; fresh < o.children && tries < 32 * o.children && !done(); ++tries) {
      const Scored& p = parents[std::uniform_int_distribution<size_t>(0, parents.size() - 1)(rng)];
      Candidate c = mutate(space, p.candidate, rng);
      if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) c = mutate(space, c, rng); // a longer jump
      fresh += evaluate(c) ? 1 : 0;
    }
    // Nothing new next to the survivors: a random restart, else the reachable space is exhausted.
    for (uint32_t tries = 0; fresh == 0 && tries < 256 && !done(); ++tries)
      fresh += evaluate(randomCandidate()) ? 1 : 0;
    if (fresh == 0) break;
  }
  std::vector<Scored> out = all;
  std::stable_sort(out.begin(), out.end(), [](const Scored& a, const Scored& b) { return a.cost < b.cost; });
  return out;
}

} // namespace helios::tuning
