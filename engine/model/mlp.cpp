#include "engine/model/blocks.hpp"

namespace helios::model::detail {

Tensor mlp(Tape& tape, const BlockShape& s, const BlockWeights& w, const Tensor& h) {
  const Tensor hin = gemmInput(tape, s, h);
  Tensor act;
  if (s.config.mlp == MlpKind::SwiGLU) {
    const Tensor gate = autograd::linear(tape, hin, w.gateW, biasOf(w.gateB));
    const Tensor up = autograd::linear(tape, hin, w.upW, biasOf(w.upB));
    act = autograd::mul(tape, autograd::activation(tape, ops::Activation::Silu, gate), up);
  } else if (s.fuseGelu) {
    act = autograd::linear(tape, hin, w.fcW, biasOf(w.fcB), {.gelu = true});
  } else if (s.halfGrads() && s.config.f16Hidden) {
    const Tensor pre = autograd::linear(tape, hin, w.fcW, biasOf(w.fcB), {.out = s.half()});
    act = autograd::activation(tape, ops::Activation::Gelu, pre, s.half());
    return autograd::linear(tape, act, w.mlpProjW, biasOf(w.mlpProjB), {.halfGradA = true});
  } else {
    // Training keeps the pre-activation for GELU's backward, so bias GEMM and GELU run separately.
    act = autograd::activation(tape, ops::Activation::Gelu, autograd::linear(tape, hin, w.fcW, biasOf(w.fcB)),
                               s.gemmOperand(), s.halfGrads());
  }
  return autograd::linear(tape, gemmInput(tape, s, act), w.mlpProjW, biasOf(w.mlpProjB));
}

} // namespace helios::model::detail
