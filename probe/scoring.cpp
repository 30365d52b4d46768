#include "probe/scoring.hpp"

#include <fmt/format.h>

namespace helios::probe {

namespace {

bool hasF16F32Types(const CoopMatrixProperty& p) {
  return p.A == "float16" && p.B == "float16" && p.C == "float32" && p.Result == "float32";
}

uint64_t area(const CoopShape& s) {
  return uint64_t{s.M} * s.N;
}

bool sameDims(const CoopShape& a, const CoopShape& b) {
  return a.M == b.M && a.N == b.N && a.K == b.K;
}

std::string dims(const CoopShape& s) {
  return fmt::format("{}x{}x{}", s.M, s.N, s.K);
}

std::string plural(std::size_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// Why `best` beats `other`, as a clause.
std::string whyBetter(const CoopShape& best, const CoopShape& other) {
  if (best.score != other.score)
    return fmt::format("it has the largest M*N*K ({} vs {} for the next best, {})", best.score, other.score,
                       dims(other));
  if (area(best) != area(other))
    return fmt::format("it ties {} on M*N*K ({}) and has the larger M*N ({} vs {})", dims(other), best.score,
                       area(best), area(other));
  if (best.M != other.M)
    return fmt::format("it ties {} on M*N*K ({}) and M*N ({}); the larger M ({} vs {}) breaks the tie",
                       dims(other), best.score, area(best), best.M, other.M);
  return fmt::format("it ties {} on M*N*K and M*N; the larger N ({} vs {}) breaks the tie", dims(other),
                     best.N, other.N);
}

} // namespace

bool preferShape(const CoopShape& a, const CoopShape& b) {
  if (a.score != b.score) return a.score > b.score;
  if (area(a) != area(b)) return area(a) > area(b);
  if (a.M != b.M) return a.M > b.M;
  if (a.N != b.N) return a.N > b.N;
  return a.K > b.K;
}

CoopChoice chooseF16F32(const std::vector<CoopMatrixProperty>& props) {
  CoopChoice choice;
  choice.listed = props.size();
  std::vector<CoopShape> shapes;
  for (const auto& p : props) {
    if (!hasF16F32Types(p)) {
      ++choice.wrongTypes;
      continue;
    }
    if (p.scope != "subgroup") {
      ++choice.wrongScope;
      continue;
    }
    ++choice.eligible;
    shapes.push_back({p.M, p.N, p.K, uint64_t{p.M} * p.N * p.K});
  }
  for (const auto& s : shapes)
    if (!choice.best || preferShape(s, *choice.best)) choice.best = s;
  for (const auto& s : shapes)
    if (!sameDims(s, *choice.best) && (!choice.runnerUp || preferShape(s, *choice.runnerUp)))
      choice.runnerUp = s;
  return choice;
}

std::optional<CoopShape> bestF16F32(const std::vector<CoopMatrixProperty>& props) {
  return chooseF16F32(props).best;
}

std::string explainChoice(const std::vector<CoopMatrixProperty>& props) {
  const CoopChoice c = chooseF16F32(props);
  if (c.listed == 0)
    return "The device lists no cooperative-matrix configurations, so the tiled fallback kernel will be used "
           "for f16 x f16 -> f32.";
  const std::string tally = fmt::format(
      "Considered {}: {} eligible (A = B = float16, C = Result = float32, subgroup scope), {} "
      "rejected for component types, {} rejected for non-subgroup scope.",
      plural(c.listed, "configuration", "configurations"), c.eligible, c.wrongTypes, c.wrongScope);
  if (!c.best)
    return tally +
           " No configuration qualifies, so the tiled fallback kernel will be used for f16 x f16 -> f32.";
  const std::string why = c.runnerUp ? whyBetter(*c.best, *c.runnerUp) : "it is the only eligible shape";
  return fmt::format(
      "Chose {} (float16 x float16 + float32 -> float32, subgroup scope, score M*N*K = {}): {}. {}",
      dims(*c.best), c.best->score, why, tally);
}

} // namespace helios::probe
