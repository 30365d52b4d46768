#pragma once
// The tuner's search, pure and testable: a candidate is one index per dimension of a parameter space; an
// evolutionary search (keep the best, mutate them, evaluate what is new) minimises an injected cost until
// the space is exhausted, a generation finds nothing new, or `stop()` says the budget is spent. A cost of
// +infinity marks a candidate rejected by a gate.
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace helios::tuning {

struct Dimension {
  std::string name;
  std::vector<int64_t> values;
};

using Candidate = std::vector<uint32_t>; // an index into each dimension's values

struct SearchSpace {
  std::vector<Dimension> dims;
  // Whether a candidate can be built at all (tile divides, fits shared memory, ...); null: all can.
  std::function<bool(const Candidate&)> valid;
  uint64_t size() const;
  int64_t value(const Candidate& c, const std::string& dim) const; // throws std::out_of_range
};

struct Scored {
  Candidate candidate;
  double cost = std::numeric_limits<double>::infinity();
};

struct SearchOptions {
  uint32_t population = 6; // best candidates kept per generation
  uint32_t children = 12;  // new candidates tried per generation
  uint32_t maxEvaluations = 200;
  uint64_t seed = 1;
  std::function<bool()> stop;                                           // null: never
  std::function<void(uint32_t evaluated, const Scored& best)> progress; // after each evaluation
};

// `c` with one dimension moved: to a neighbouring value, or (one time in three) any value.
Candidate mutate(const SearchSpace& space, const Candidate& c, std::mt19937_64& rng);
// The `keep` lowest costs, rejected ones (infinite) last and dropped.
std::vector<Scored> select(std::vector<Scored> scored, uint32_t keep);

// Evaluates `start` (the current choice) first, then random valid candidates, then generations of mutated
// survivors; each candidate is evaluated at most once. Returns every evaluation, best first.
std::vector<Scored> evolve(const SearchSpace& space, const Candidate& start,
                           const std::function<double(const Candidate&)>& cost, const SearchOptions& options);

} // namespace helios::tuning
