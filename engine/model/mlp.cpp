#include "engine/model/blocks.hpp"

namespace helios::model::detail {

Tensor mlp(Tape& tape, const BlockShape& s, const BlockWeights& w, const Tensor& h) {
  Tensor act;
  if (s.config.mlp == MlpKind::SwiGLU) {
    const Tensor gate = linear(tape, s, h, w.gateW, w.gateB);
    const Tensor up = linear(tape, s, h, w.upW, w.upB);
    act = autograd::mul(tape, autograd::activation(tape, ops::Activation::Silu, gate), up);
  } else if (s.fuseGelu) {
    act = linear(tape, s, h, w.fcW, w.fcB, /*gelu=*/true);
  } else {
    // Training keeps the pre-activation for GELU's backward, so bias GEMM and GELU run separately.
    act = autograd::activation(tape, ops::Activation::Gelu, linear(tape, s, h, w.fcW, w.fcB));
  }
  return linear(tape, s, act, w.mlpProjW, w.mlpProjB);
}

} // namespace helios::model::detail
