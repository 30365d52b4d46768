// The tuner's search on synthetic costs: it finds a planted best, never returns a gated (rejected)
// candidate as best, respects validity and its evaluation budget, and evaluates each candidate once.
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <map>
#include <random>

#include "engine/tuning/search.hpp"

using namespace helios::tuning;

namespace {

SearchSpace space5() {
  SearchSpace s;
  for (const char* n : {"bm", "bn", "bk", "groupM", "kSlices"})
    s.dims.push_back({n, {1, 2, 3, 4, 5, 6, 7}});
  return s;
}

// A cost with its minimum at `best` and a ridge of local minima elsewhere.
double bowl(const Candidate& c, const Candidate& best) {
  double d = 0;
  for (size_t i = 0; i < c.size(); ++i)
    d += std::abs(double(c[i]) - double(best[i])) * (1.0 + 0.1 * static_cast<double>(i));
  return 10.0 + d + (c[0] == 6 ? -0.5 : 0.0); // a shallow trap on one face
}

} // namespace

TEST_CASE("search: finds a planted best candidate", "[tuning][search]") {
  const SearchSpace s = space5();
  std::mt19937_64 rng(std::random_device{}());
  for (int trial = 0; trial < 5; ++trial) {
    Candidate best(5);
    for (auto& v : best)
      v = std::uniform_int_distribution<uint32_t>(0, 5)(rng);
    std::map<Candidate, int> calls;
    SearchOptions o;
    o.seed = rng();
    o.maxEvaluations = 400; // of 16807
    const auto result = evolve(
        s, Candidate(5, 0),
        [&](const Candidate& c) {
          ++calls[c];
          return bowl(c, best);
        },
        o);
    INFO("trial " << trial);
    REQUIRE_FALSE(result.empty());
    CHECK(result.front().candidate == best);
    CHECK(result.front().cost == bowl(best, best));
    CHECK(result.size() <= 400);
    for (const auto& [c, n] : calls)
      CHECK(n == 1);
  }
}

TEST_CASE("search: a rejected candidate never wins; invalid ones are never evaluated", "[tuning][search]") {
  const SearchSpace base = space5();
  SearchSpace s = base;
  s.valid = [](const Candidate& c) { return c[1] != 3; };
  const Candidate planted{2, 2, 2, 2, 2}; // the cheapest, but it fails its gate
  const auto cost = [&](const Candidate& c) {
    REQUIRE(c[1] != 3);
    if (c == planted) return std::numeric_limits<double>::infinity();
    return bowl(c, planted);
  };
  SearchOptions o;
  o.seed = 7;
  o.maxEvaluations = 300;
  const auto result = evolve(s, planted, cost, o);
  REQUIRE_FALSE(result.empty());
  CHECK(result.front().candidate != planted);
  CHECK(result.front().cost == bowl(Candidate{1, 2, 2, 2, 2}, planted)); // the next best: 11
  CHECK(select(result, 3).size() == 3);
  for (const Scored& r : select(result, 100))
    CHECK(std::isfinite(r.cost));
}

TEST_CASE("search: stops when told and covers a small space exactly once", "[tuning][search]") {
  SearchSpace s;
  s.dims = {{"a", {0, 1, 2}}, {"b", {0, 1}}, {"c", {5}}};
  std::map<Candidate, int> calls;
  SearchOptions o;
  o.maxEvaluations = 1000;
  const auto all = evolve(
      s, {0, 0, 0},
      [&](const Candidate& c) {
        ++calls[c];
        return double(s.value(c, "a") * 2 + s.value(c, "b"));
      },
      o);
  CHECK(all.size() == 6);
  CHECK(calls.size() == 6);
  CHECK(all.front().candidate == Candidate{0, 0, 0});
  CHECK(s.value(all.back().candidate, "a") == 2);
  uint32_t evaluated = 0;
  o.stop = [&] { return evaluated >= 4; };
  o.progress = [&](uint32_t n, const Scored&) { evaluated = n; };
  CHECK(evolve(
            s, {0, 0, 0}, [](const Candidate&) { return 1.0; }, o)
            .size() == 4);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 50; ++i) {
    const Candidate m = mutate(s, {1, 1, 0}, rng);
    CHECK(m[2] == 0); // a one-value dimension never moves
    CHECK((m[0] != 1) + (m[1] != 1) <= 1);
  }
}
