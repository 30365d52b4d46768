#include "engine/model/blocks.hpp"

namespace helios::model::detail {

Tensor mlp(Tape& tape, const BlockShape& s, const BlockWeights& w, const Tensor& h) {
  const Tensor hin = gemmInput(tape, s, h);
  const autograd::LoraTerm *fc = loraOf(w.fcLora), *down = loraOf(w.mlpProjLora);
  Tensor act;
  if (s.config.mlp == MlpKind::SwiGLU) {
    const Tensor gate = autograd::linear(tape, hin, w.gateW, biasOf(w.gateB), {.lora = loraOf(w.gateLora)});
    const Tensor up = autograd::linear(tape, hin, w.upW, biasOf(w.upB), {.lora = loraOf(w.upLora)});
    act = autograd::mul(tape, autograd::activation(tape, ops::Activation::Silu, gate), up);
  } else if (s.fuseGelu && !fc) { // an adapter's term comes before GELU: no fused epilogue then
    act = autograd::linear(tape, hin, w.fcW, biasOf(w.fcB), {.gelu = true});
  } else if (s.halfGrads() && s.config.f16Hidden) {
    const Tensor pre =
        autograd::linear(tape, hin, w.fcW, halfBiasOf(w.fcB, w.fcBHalf), {.out = s.half(), .lora = fc});
    act = autograd::activation(tape, ops::Activation::Gelu, pre, s.half());
    return autograd::linear(tape, act, w.mlpProjW, biasOf(w.mlpProjB), {.halfGradA = true, .lora = down});
  } else {
    // Training keeps the pre-activation for GELU's backward, so bias GEMM and GELU run separately.
    act = autograd::activation(tape, ops::Activation::Gelu,
                               autograd::linear(tape, hin, w.fcW, biasOf(w.fcB), {.lora = fc}),
                               s.gemmOperand(), s.halfGrads());
  }
  return autograd::linear(tape, gemmInput(tape, s, act), w.mlpProjW, biasOf(w.mlpProjB), {.lora = down});
}

} // namespace helios::model::detail
