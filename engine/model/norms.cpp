#include "engine/model/blocks.hpp"

namespace helios::model::detail {

Tensor norm(Tape& tape, const GptConfig& config, const Tensor& x, const Tensor& gamma, const Tensor& beta,
            autograd::DType out) {
  if (config.norm == NormKind::RMSNorm) return autograd::rmsNorm(tape, x, gamma, config.normEps, out);
  return autograd::layerNorm(tape, x, gamma, beta, config.normEps, out);
}

Tensor gemmInput(Tape& tape, const BlockShape& s, const Tensor& x) {
  return s.mixed() ? autograd::cast(tape, x, s.half()) : x;
}

Tensor block(Tape& tape, const BlockShape& s, const BlockWeights& w, const Tensor& x) {
  // The normed activations feed only GEMMs (attention's projection, the MLP's first layer).
  const Tensor h1 = norm(tape, s.config, x, w.ln1w, w.ln1b, s.gemmOperand());
  const Tensor x1 = autograd::add(tape, x, attention(tape, s, w, h1));
  const Tensor h2 = norm(tape, s.config, x1, w.ln2w, w.ln2b, s.gemmOperand());
  return autograd::add(tape, x1, mlp(tape, s, w, h2));
}

Tensor blockRecomputingAttention(Tape& tape, const BlockShape& s, const BlockWeights& w, const Tensor& x) {
  const auto half = [s, w](Tape& t, const Tensor& in) {
    return autograd::add(t, in, attention(t, s, w, norm(t, s.config, in, w.ln1w, w.ln1b, s.gemmOperand())));
  };
  const Tensor x1 = autograd::checkpoint(tape, x, half);
  const Tensor h2 = norm(tape, s.config, x1, w.ln2w, w.ln2b, s.gemmOperand());
  return autograd::add(tape, x1, mlp(tape, s, w, h2));
}

} // namespace helios::model::detail
