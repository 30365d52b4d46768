#pragma once
// The contract between the GPT model (engine/model, engine/autograd) and the trainer (engine/train,
// tools/helios_train). The model owns its parameters and records forward + backward for one micro-batch
// into an executor; the trainer owns data, the optimizer step, loss scaling, checkpoints and metrics.
#include "codegen/elem.hpp"
#include "engine/core/enum_names.hpp"
#include "engine/graph/arena.hpp"
#include "engine/model/architecture.hpp"
#include "engine/model/frozen_store.hpp"
#include "engine/model/lora_config.hpp"
#include "engine/model/parameter_store.hpp"
#include "engine/ops/executor.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace helios::model {

enum class NormKind { LayerNorm, RMSNorm };
inline constexpr EnumName<NormKind> kNormNames[] = {{NormKind::LayerNorm, "layernorm"},
                                                    {NormKind::RMSNorm, "rmsnorm"}};
enum class MlpKind { Gelu, SwiGLU };
inline constexpr EnumName<MlpKind> kMlpNames[] = {{MlpKind::Gelu, "gelu"}, {MlpKind::SwiGLU, "swiglu"}};
// Mixed: f16 GEMM inputs (coop GEMM where available), f32 master weights, loss scaling (the trainer's).
// BF16: the same structure with bf16 GEMM operands and activations (bf16 coop matrices where the device lists
// them, else the tiled kernel widening bf16 exactly to f32) and no loss scaling: bf16 has f32's range.
enum class Precision { F32, Mixed, BF16 };
inline constexpr EnumName<Precision> kPrecisionNames[] = {
    {Precision::F32, "f32"}, {Precision::Mixed, "mixed"}, {Precision::BF16, "bf16"}};
// The 16-bit kind a precision's GEMM operands take (F32 for Precision::F32).
codegen::Elem halfOf(Precision p);

struct GptConfig {
  uint32_t vocab = 256;   // byte-level tokenizer by default
  uint32_t context = 256; // maximum sequence length T
  uint32_t layers = 4;
  uint32_t dim = 128;   // C
  uint32_t heads = 4;   // H
  uint32_t kvHeads = 0; // grouped-query attention: 0 = heads (plain multi-head)
  uint32_t headDim = 0; // D: 0 = dim / heads (Q and K/V project to H D and Hkv D, the output back to C)
  uint32_t mlpMult = 4; // hidden = mlpMult * dim (SwiGLU: 2/3 of that, rounded to a multiple of 8)
  uint32_t hidden = 0;  // the MLP's width (intermediate_size); 0 = from mlpMult
  NormKind norm = NormKind::LayerNorm;
  MlpKind mlp = MlpKind::Gelu;
  BiasPlacement bias = BiasPlacement::All;
  bool tiedHead = true;       // the LM head is wte; false: a separate lm_head.weight [vocab, C]
  bool rope = false;          // rotary position embeddings instead of learned positions
  double ropeTheta = 10000.0; // RoPE's base
  RopeScaling ropeScaling;
  // Mistral's sliding-window attention: 0 = none. Not implemented: a sequence longer than the window is
  // refused (up to it, the window changes nothing).
  uint32_t slidingWindow = 0;
  Family family = Family::Gpt2;
  bool packedQkv = true;      // one GEMM for Q, K and V
  bool fusedAttention = true; // ops::attention* (scores never in memory); false: GEMM, softmax, GEMM
  // Sequence packing: documents in a sequence end with the endOfText id; attention stays inside each
  // document and positions (learned or RoPE) restart after each end (ops::documentPositions). A call that
  // gives the positions itself (chat data: documents are examples) packs by them instead, whatever this says.
  bool pack = false;
  uint32_t endOfText = 0;
  // Mixed (or bf16) precision, fused attention on a coop device, packed QKV, 16-bit gradients, no RoPE: the
  // kernels read the heads straight from the QKV projection's rows and write O already merged, in 16 bits
  // (no split or merge copies, forward or backward). false: the heads are split into [B, H, T, D] copies.
  bool packedAttention = true;
  float normEps = 1e-5f;
  bool checkpointActivations = false; // recompute each block's activations in backward
  // Recompute only each block's attention half (norm, attention, output projection, residual add) in the
  // backward; the MLP's activations are kept. Ignored when whole blocks are checkpointed.
  bool checkpointAttention = false;
  Precision precision = Precision::F32;
  // Mixed and bf16 precision: the producers of GEMM operands (norms, GELU, the head merge) write their 16-bit
  // kind directly; false leaves the rounding to separate cast kernels (same bits, more passes; for tests).
  // The f16* switches below apply to the precision's 16-bit kind (bf16 in Precision::BF16).
  bool fusedCasts = true;
  // Mixed and bf16 precision: the 16-bit copies of the GEMM weights (and of the biases that 16-bit GEMM
  // outputs add) are made with one cast per parameter group, as views into one 16-bit image of the group's
  // flat buffer (engine/model/operand_copies.hpp), instead of one cast per tensor. Same bits either way.
  bool groupCasts = true;
  // Mixed and bf16 precision: each norm's backward also writes the residual stream's gradient in the 16-bit
  // kind that the output projection before it reads (one kernel; no cast pass). Same bits either way.
  bool normHalfGrads = true;
  // Each pre-norm's residual add (x + attention, and a block's x1 + MLP output in the next block's or the
  // final norm) runs inside the norm's forward kernel, which writes the sum too. Same bits either way.
  bool residualNorms = true;
  // Mixed-precision training: the head writes f16 logits and the loss hands back an f16 gradient (half the
  // bytes of the step's largest tensors; the loss itself is computed in f32). Forward-only calls keep f32.
  bool f16Logits = true;
  // Mixed precision with fused casts: the GELU backward and the Q/K/V split's backward hand their gradients
  // to the GEMMs before them in f16 (no cast; those GEMMs' bias sums add the f16 values in f32).
  bool f16Grads = true;
  // Mixed precision with f16 gradients and GELU: the MLP's hidden layer lives in f16. fc1 writes its
  // pre-activations in f16 (with an f16 copy of its bias), GELU runs on f16 in both directions, and fc2 hands
  // its input gradient back in f16: the widest activations of the block at half the bytes.
  bool f16Hidden = true;
  // The LM head and the cross-entropy run in row chunks (autograd::headCrossEntropy): the [B*T, vocab]
  // logits and their gradient never exist whole (GPT-2 small at B16 x T1024: 1.6 GB each in f16, 3.3 GB for
  // the evaluation's f32 logits). Training needs logits of the GEMM operands' type: f32, or mixed precision
  // with fused casts and f16 logits; otherwise the full logits are made as before.
  bool chunkedLoss = true;
  // How the GEMM weights (the decayed 2-D parameters: wte and every block's projections) are stored: F32, or
  // BF16 with Precision::BF16 (the memory option: the GEMMs read them as they are, no per-step copy; AdamW
  // keeps f32 moments and rounds each update stochastically, codegen/kernels/optim_step.hpp). Norms, biases
  // and learned positions stay f32. Gradients are f32 either way.
  codegen::Elem paramDtype = codegen::Elem::F32;
  // LoRA (engine/model/lora_config.hpp): rank > 0 freezes every parameter above (stored as FrozenTensors, no
  // gradients or moments) and adds trainable adapters on the targeted projections (lora_sites.hpp).
  LoraConfig lora;

  std::string describe() const; // "4L 128d 4h T256 V256 layernorm gelu"
  uint64_t parameterCount() const;
  uint32_t headSize() const { return headDim != 0 ? headDim : dim / heads; }
  uint32_t kvHeadCount() const { return kvHeads != 0 ? kvHeads : heads; }
  // SwiGLU keeps the parameter count of a 4x GELU MLP: 2/3 of mlpMult * dim, rounded up to a multiple of 8.
  uint32_t mlpWidth() const {
    if (hidden != 0) return hidden;
    return mlp == MlpKind::Gelu ? mlpMult * dim : (2 * mlpMult * dim / 3 + 7) / 8 * 8;
  }
  bool biased(LinearGroup group) const { return hasBias(bias, group); }
};

// `how`'s way of computing (precision, attention path, fusions, checkpointing, packing) with `arch`'s
// architecture: every field that decides the parameters, their shapes and the function they compute.
inline GptConfig withArchitectureOf(GptConfig how, const GptConfig& arch) {
  for (auto field : {&GptConfig::vocab, &GptConfig::context, &GptConfig::layers, &GptConfig::dim,
                     &GptConfig::heads, &GptConfig::kvHeads, &GptConfig::headDim, &GptConfig::mlpMult,
                     &GptConfig::hidden, &GptConfig::slidingWindow})
    how.*field = arch.*field;
  how.norm = arch.norm;
  how.normEps = arch.normEps;
  how.mlp = arch.mlp;
  how.bias = arch.bias;
  how.tiedHead = arch.tiedHead;
  how.rope = arch.rope;
  how.ropeTheta = arch.ropeTheta;
  how.ropeScaling = arch.ropeScaling;
  how.packedQkv = arch.packedQkv;
  how.family = arch.family;
  return how;
}

class Gpt {
public:
  // Allocates parameters and initialises them deterministically from `seed` (GPT-2 style: N(0, 0.02),
  // residual projections scaled by 1/sqrt(2*layers), norms to 1/0).
  Gpt(vk::Context& ctx, const GptConfig& config, uint64_t seed);
  ~Gpt();
  const GptConfig& config() const;
  std::vector<Parameter>& parameters();
  // The flat buffers the parameters live in, one entry per group (engine/model/parameter_store.hpp).
  const std::vector<ParameterGroup>& parameterGroups() const;
  // With LoRA: the frozen base (every parameter a full model has, by the same names), while parameters()
  // holds the adapters only. Empty without LoRA.
  std::vector<FrozenTensor>& frozen();
  // LoRA dropout's step counter on the device (advanced by every forwardBackward), for checkpoints: read
  // once the GPU is idle, set before the next step. 0 without dropout.
  uint32_t dropoutStep();
  void setDropoutStep(uint32_t step);

  // Records forward, cross-entropy loss and backward for tokens/targets (int32, batch*T each) into `exec`.
  // Gradients are ACCUMULATED into Parameter::grad (the trainer zeroes them per optimizer step), multiplied
  // by `gradScale` (loss scaling / micro-batch averaging). The mean loss over the batch*T tokens is written
  // as one f32 to `lossOut` (targets outside [0, vocab) count as 0). Temporaries come from `arena` (same
  // sizes every step: replay-safe). `positions` (batch*T int32, optional): each token's position inside its
  // packed document; attention stays inside documents and positions restart with each one.
  void forwardBackward(ops::Executor& exec, graph::StepArena& arena, const vk::BufferRange& tokens,
                       const vk::BufferRange& targets, uint32_t batch, uint32_t T,
                       const vk::BufferRange& lossOut, float gradScale,
                       const vk::BufferRange& positions = {});
  // Forward only: logits (batch*T*vocab f32) into `logitsOut` (empty: not copied out, e.g. when only the
  // loss is wanted); and optionally the mean loss when targets given.
  void forward(ops::Executor& exec, graph::StepArena& arena, const vk::BufferRange& tokens, uint32_t batch,
               uint32_t T, const vk::BufferRange& logitsOut, const vk::BufferRange* targets = nullptr,
               const vk::BufferRange* lossOut = nullptr, const vk::BufferRange& positions = {});

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace helios::model
