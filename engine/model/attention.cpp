#include "engine/model/blocks.hpp"

#include <cmath>

namespace helios::model::detail {

namespace {

// [B*T, width] (heads of D at column offset `col`) -> [B, heads, T, D].
Tensor splitHeads(Tape& tape, const BlockShape& s, const Tensor& x, uint32_t width, uint32_t col,
                  uint32_t heads) {
  const uint32_t D = s.headDim, T = s.T;
  return autograd::permute(tape, x, {s.batch, heads, T, D}, col, {T * width, D, width, 1});
}

// Heads [B, H, T, D] -> [B, T, H, D] = [B*T, C], then the output projection.
Tensor project(Tape& tape, const BlockShape& s, const BlockWeights& w, const Tensor& o) {
  const uint32_t B = s.batch, T = s.T, H = s.config.heads, D = s.headDim;
  const autograd::DType to = codegen::isHalf(s.gemmOperand()) && o.dtype == autograd::DType::F32
                                 ? s.gemmOperand()
                                 : autograd::DType::F32;
  const Tensor merged =
      autograd::permute(tape, o, {B, T, H, D}, 0, {H * T * D, D, T * D, 1}, to).reshape({B * T, H * D});
  return autograd::linear(tape, gemmInput(tape, s, merged), w.projW, biasOf(w.projB),
                          {.lora = loraOf(w.projLora)});
}

// Q, K and V in the 16-bit kind for the fused coop kernels, which round them to it anyway: the split writes
// half the bytes and the kernels read half. Mixed or bf16 precision with fused casts, without RoPE (which
// works on f32), on a device where the coop attention runs in that kind.
bool halfQkv(Tape& tape, const BlockShape& s) {
  return codegen::isHalf(s.gemmOperand()) && s.config.fusedAttention && !s.config.rope &&
         ops::attentionCoopAvailable(tape.exec().context().device(), s.headDim, s.half());
}

// The fused kernels read Q, K and V in place from the packed projection and write O merged in 16 bits
// (GptConfig::packedAttention): the head offsets inside a row must be valid binding offsets into the 16-bit
// projection and its 16-bit gradient.
bool packedHeads(Tape& tape, const BlockShape& s) {
  const uint32_t D = s.headDim, cols[2] = {s.config.heads * D, (s.config.heads + s.kvHeads) * D};
  const VkDeviceSize align = tape.exec().context().device().limits().minStorageBufferOffsetAlignment;
  bool aligned = true;
  for (uint32_t c : cols)
    aligned = aligned && (VkDeviceSize(c) * 2) % align == 0;
  return s.config.packedQkv && s.config.packedAttention && s.halfGrads() && halfQkv(tape, s) && aligned;
}

} // namespace

Tensor attention(Tape& tape, const BlockShape& s, const BlockWeights& w, const Tensor& h) {
  const uint32_t B = s.batch, T = s.T, H = s.config.heads, Hkv = s.kvHeads, D = s.headDim;
  const uint32_t group = H / Hkv;
  const Tensor hin = gemmInput(tape, s, h);
  Tensor q, k, v;
  const float scale = static_cast<float>(1.0 / std::sqrt(double(D)));
  if (packedHeads(tape, s)) {
    // The projection writes 16 bits (the values the kernels would round q, k, v to as they stage them).
    const Tensor qkv = autograd::linear(tape, hin, w.qkvW, halfBiasOf(w.qkvB, w.qkvBHalf),
                                        {.out = s.half(), .lora = loraOf(w.qkvLora)});
    ops::AttentionShape as{B, H, Hkv, T, T, D, true, scale};
    as.half = s.half();
    as.documentPositions = s.documentPositions; // set when packing
    const Tensor o = autograd::attentionPacked(tape, qkv, as, /*halfOut=*/true);
    return autograd::linear(tape, o, w.projW, biasOf(w.projB), {.lora = loraOf(w.projLora)});
  }
  if (s.config.packedQkv) {
    const uint32_t width = (H + 2 * Hkv) * D;
    const Tensor qkv = autograd::linear(tape, hin, w.qkvW, biasOf(w.qkvB), {.lora = loraOf(w.qkvLora)});
    // Q, K and V partition the packed projection: one backward writes all of dqkv.
    const auto view = [&](uint32_t col, uint32_t heads) {
      return autograd::PermuteView{{s.batch, heads, T, D}, col, {T * width, D, width, 1}};
    };
    const bool half = halfQkv(tape, s);
    const auto parts =
        autograd::permuteSplit(tape, qkv, {view(0, H), view(H * D, Hkv), view((H + Hkv) * D, Hkv)},
                               half ? s.half() : autograd::DType::F32, half && s.halfGrads());
    q = parts[0];
    k = parts[1];
    v = parts[2];
  } else {
    const auto project = [&](const Tensor& W, const Tensor& b, const autograd::LoraTerm& lora) {
      return autograd::linear(tape, hin, W, biasOf(b), {.lora = loraOf(lora)});
    };
    q = splitHeads(tape, s, project(w.qW, w.qB, w.qLora), H * D, 0, H);
    k = splitHeads(tape, s, project(w.kW, w.kB, w.kLora), Hkv * D, 0, Hkv);
    v = splitHeads(tape, s, project(w.vW, w.vB, w.vLora), Hkv * D, 0, Hkv);
  }
  if (s.config.rope) { // positions restart with every packed document
    q = autograd::rope(tape, q, s.ropeTable, D, T, {s.documentPositions, H});
    k = autograd::rope(tape, k, s.ropeTable, D, T, {s.documentPositions, Hkv});
  }
  if (s.config.fusedAttention) {
    ops::AttentionShape as{B, H, Hkv, T, T, D, true, scale};
    as.documentPositions = s.documentPositions; // each query inside its document
    // Mixed and bf16 precision take the cooperative-matrix kernels where the device has them in their kind
    // (q, k, v and dO rounded to it, as the GEMM inputs are); F32 keeps the f32 fallback.
    as.kernel = s.mixed() ? ops::AttentionKernel::Auto : ops::AttentionKernel::Fallback;
    as.half = s.mixed() ? s.half() : codegen::Elem::F16;
    const Tensor o = autograd::attention(tape, q, k, v, as);
    return project(tape, s, w, o);
  }
  // Grouped-query attention without copies: the `group` query heads sharing a K/V head are contiguous in
  // [B, H, T, D], so each (batch, kv head) is one GEMM with group*T query rows; dK and dV then sum over the
  // group inside the backward GEMMs.
  autograd::MatmulSpec qk;
  qk.M = group * T;
  qk.N = T;
  qk.K = D;
  qk.batch = B * Hkv;
  qk.transB = true;
  qk.alpha = scale;
  const Tensor scores = autograd::matmul(tape, gemmInput(tape, s, q), gemmInput(tape, s, k), qk);
  ops::SoftmaxOptions sm;
  sm.causalQueries = T;
  if (s.documentPositions.buffer != VK_NULL_HANDLE) { // each query sees only its own document's keys
    sm.documentPositions = s.documentPositions;
    sm.rowsPerSequence = H * T;
  }
  const Tensor probs = autograd::softmax(tape, scores, B * H * T, T, sm);
  autograd::MatmulSpec pv;
  pv.M = group * T;
  pv.N = D;
  pv.K = T;
  pv.batch = B * Hkv;
  const Tensor o = autograd::matmul(tape, gemmInput(tape, s, probs), gemmInput(tape, s, v), pv);
  return project(tape, s, w, o);
}

} // namespace helios::model::detail
