#include "engine/model/blocks.hpp"

namespace helios::model::detail {

Tensor mlp(Tape& tape, const BlockShape& s, const BlockWeights& w, const Tensor& h) {
  const Tensor hin = gemmInput(tape, s, h);
  Tensor act;
  if (s.config.mlp == MlpKind::SwiGLU) {
    const Tensor gate = autograd::linear(tape, hin, w.gateW, &w.gateB);
    const Tensor up = autograd::linear(tape, hin, w.upW, &w.upB);
    act = autograd::mul(tape, autograd::activation(tape, ops::Activation::Silu, gate), up);
  } else if (s.fuseGelu) {
    act = autograd::linear(tape, hin, w.fcW, &w.fcB, /*gelu=*/true);
  } else if (s.f16Grads() && s.config.f16Hidden) {
    const uint32_t rows = static_cast<uint32_t>(hin.elements() / w.fcW.shape[1]);
    autograd::MatmulSpec fc1{rows, w.fcW.shape[0], w.fcW.shape[1], 1, false, true};
    fc1.outF16 = true;
    const Tensor bias16 = autograd::cast(tape, w.fcB, autograd::DType::F16);
    act = autograd::activation(tape, ops::Activation::Gelu, autograd::matmul(tape, hin, w.fcW, fc1, &bias16),
                               autograd::DType::F16);
    autograd::MatmulSpec fc2{rows, w.mlpProjW.shape[0], fc1.N, 1, false, true};
    fc2.f16GradA = true;
    return autograd::matmul(tape, act, w.mlpProjW, fc2, &w.mlpProjB);
  } else {
    // Training keeps the pre-activation for GELU's backward, so bias GEMM and GELU run separately.
    act = autograd::activation(tape, ops::Activation::Gelu, autograd::linear(tape, hin, w.fcW, &w.fcB),
                               s.gemmOperand(), s.f16Grads());
  }
  return autograd::linear(tape, gemmInput(tape, s, act), w.mlpProjW, &w.mlpProjB);
}

} // namespace helios::model::detail
