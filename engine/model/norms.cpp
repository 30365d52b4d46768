#include "engine/model/blocks.hpp"

namespace helios::model::detail {

Tensor norm(Tape& tape, const GptConfig& config, const Tensor& x, const Tensor& gamma, const Tensor& beta,
            autograd::DType out, autograd::DType dxHalf) {
  if (config.norm == NormKind::RMSNorm) return autograd::rmsNorm(tape, x, gamma, config.normEps, out, dxHalf);
  return autograd::layerNorm(tape, x, gamma, beta, config.normEps, out, dxHalf);
}

autograd::AddNorm normStream(Tape& tape, const GptConfig& config, const Stream& in, const Tensor& gamma,
                             const Tensor& beta, autograd::DType out, autograd::DType dxHalf) {
  if (in.delta.shape.empty()) return {in.x, norm(tape, config, in.x, gamma, beta, out, dxHalf)};
  if (!config.residualNorms) {
    const Tensor sum = autograd::add(tape, in.x, in.delta);
    return {sum, norm(tape, config, sum, gamma, beta, out, dxHalf)};
  }
  if (config.norm == NormKind::RMSNorm)
    return autograd::addRmsNorm(tape, in.x, in.delta, gamma, config.normEps, out, dxHalf);
  return autograd::addLayerNorm(tape, in.x, in.delta, gamma, beta, config.normEps, out, dxHalf);
}

Tensor gemmInput(Tape& tape, const BlockShape& s, const Tensor& x) {
  return s.mixed() ? autograd::cast(tape, x, s.half()) : x;
}

namespace {

// A block's first norm: its input's gradient reaches the previous block's output projection (16 bits), or
// for block 0 the embeddings (f32).
autograd::AddNorm norm1(Tape& tape, const BlockShape& s, const BlockWeights& w, const Stream& in) {
  const autograd::DType dxHalf = s.layer > 0 ? s.residualGrad() : autograd::DType::F32;
  return normStream(tape, s.config, in, w.ln1w, w.ln1b, s.gemmOperand(), dxHalf);
}

autograd::AddNorm norm2(Tape& tape, const BlockShape& s, const BlockWeights& w, const Stream& in) {
  return normStream(tape, s.config, in, w.ln2w, w.ln2b, s.gemmOperand(), s.residualGrad());
}

} // namespace

Stream blockStream(Tape& tape, const BlockShape& s, const BlockWeights& w, const Stream& in) {
  // The normed activations feed only GEMMs (attention's projection, the MLP's first layer).
  const autograd::AddNorm n1 = norm1(tape, s, w, in);
  const autograd::AddNorm n2 = norm2(tape, s, w, {n1.sum, attention(tape, s, w, n1.y)});
  return {n2.sum, mlp(tape, s, w, n2.y)};
}

Tensor block(Tape& tape, const BlockShape& s, const BlockWeights& w, const Tensor& x) {
  const Stream out = blockStream(tape, s, w, {x, {}});
  return autograd::add(tape, out.x, out.delta);
}

Tensor blockRecomputingAttention(Tape& tape, const BlockShape& s, const BlockWeights& w, const Tensor& x) {
  const auto half = [s, w](Tape& t, const Tensor& in) {
    return autograd::add(t, in, attention(t, s, w, norm1(t, s, w, {in, {}}).y));
  };
  const Tensor x1 = autograd::checkpoint(tape, x, half);
  const Tensor h2 = norm2(tape, s, w, {x1, {}}).y;
  return autograd::add(tape, x1, mlp(tape, s, w, h2));
}

} // namespace helios::model::detail
