#include "probe/scoring.hpp"

#include <fmt/format.h>

namespace helios::probe {

namespace {

const char* inputName(CoopInputs inputs) {
  return inputs == CoopInputs::F16 ? "float16" : "bfloat16";
}

bool hasTypes(const CoopMatrixProperty& p, CoopInputs inputs) {
  const std::string in = inputName(inputs);
  return p.A == in && p.B == in && p.C == "float32" && p.Result == "float32";
}

const char* shortName(CoopInputs inputs) {
  return inputs == CoopInputs::F16 ? "f16" : "bf16";
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

CoopChoice chooseCoop(const std::vector<CoopMatrixProperty>& props, CoopInputs inputs) {
  CoopChoice choice;
  choice.listed = props.size();
  std::vector<CoopShape> shapes;
  for (const auto& p : props) {
    if (!hasTypes(p, inputs)) {
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

CoopChoice chooseF16F32(const std::vector<CoopMatrixProperty>& props) {
  return chooseCoop(props, CoopInputs::F16);
}

std::optional<CoopShape> bestF16F32(const std::vector<CoopMatrixProperty>& props) {
  return chooseF16F32(props).best;
}

std::optional<CoopShape> bestBF16F32(const std::vector<CoopMatrixProperty>& props) {
  return chooseCoop(props, CoopInputs::BF16).best;
}

std::string explainChoice(const std::vector<CoopMatrixProperty>& props, CoopInputs inputs) {
  const CoopChoice c = chooseCoop(props, inputs);
  const std::string in = inputName(inputs), kind = shortName(inputs);
  const std::string op = fmt::format("{} x {} -> f32", kind, kind);
  if (c.listed == 0)
    return fmt::format("The device lists no cooperative-matrix configurations, so the tiled fallback kernel "
                       "will be used for {}.",
                       op);
  const std::string tally = fmt::format(
      "Considered {}: {} eligible (A = B = {}, C = Result = float32, subgroup scope), {} "
      "rejected for component types, {} rejected for non-subgroup scope.",
      plural(c.listed, "configuration", "configurations"), c.eligible, in, c.wrongTypes, c.wrongScope);
  if (!c.best)
    return tally +
           fmt::format(" No configuration qualifies, so the tiled fallback kernel will be used for {}.", op);
  const std::string why = c.runnerUp ? whyBetter(*c.best, *c.runnerUp) : "it is the only eligible shape";
  return fmt::format("Chose {} ({} x {} + float32 -> float32, subgroup scope, score M*N*K = {}): {}. {}",
                     dims(*c.best), in, in, c.best->score, why, tally);
}

namespace {

// Why bf16 GEMMs do not run on bf16 coop matrices ("" when they do).
std::string bf16CoopMiss(const DeviceCaps& caps) {
  const auto f16 = bestF16F32(caps.coop_khr);
  const auto bf16 = bestBF16F32(caps.coop_khr);
  if (!bf16) return "the device lists no bf16 x bf16 -> f32 subgroup configuration";
  if (caps.shader_bfloat16.known && !caps.shader_bfloat16.cooperativeMatrix)
    return "VK_KHR_shader_bfloat16's shaderBFloat16CooperativeMatrix is not supported";
  if (!f16) return "the device lists no f16 x f16 -> f32 shape, whose tilings the bf16 kernels share";
  if (!sameDims(*f16, *bf16))
    return fmt::format("its bf16 shape {} differs from the f16 kernels' {}, whose tilings they share",
                       dims(*bf16), dims(*f16));
  return {};
}

} // namespace

bool bf16CoopUsable(const DeviceCaps& caps) {
  return bf16CoopMiss(caps).empty();
}

std::string bf16GemmPath(const DeviceCaps& caps) {
  const std::string miss = bf16CoopMiss(caps);
  if (miss.empty())
    return fmt::format("bf16 GEMMs run on bf16 cooperative matrices at {} (bf16 x bf16 -> f32).",
                       dims(*bestBF16F32(caps.coop_khr)));
  return "bf16 GEMMs run through the tiled f32 kernel, bf16 widened exactly to f32: " + miss + ".";
}

} // namespace helios::probe
