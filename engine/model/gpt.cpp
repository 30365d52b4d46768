#include "engine/model/gpt.hpp"

#include "engine/autograd/ops.hpp"
#include "engine/model/blocks.hpp"
#include "engine/model/gpt_parameters.hpp"
#include "engine/model/lora_sites.hpp"
#include "engine/model/operand_copies.hpp"
#include "engine/model/rope_frequencies.hpp"
#include "engine/ops/document_positions.hpp"
#include "engine/ops/dropout.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/reduce.hpp"
#include "engine/ops/rope.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace helios::model {

using autograd::DType;
using autograd::Tape;
using autograd::Tensor;

namespace {

// The most bytes of f16 logits one chunk of the chunked head holds (GptConfig::chunkedLoss).
constexpr uint64_t kHeadChunkBytes = 256ull << 20;

void validate(const GptConfig& c) {
  const auto fail = [](const std::string& m) { throw std::invalid_argument("GptConfig: " + m); };
  if (c.vocab == 0 || c.context == 0 || c.layers == 0 || c.dim == 0 || c.heads == 0 || c.mlpMult == 0)
    fail("vocab, context, layers, dim, heads and mlpMult must be positive");
  if (c.headDim == 0 && c.dim % c.heads != 0)
    fail("dim " + std::to_string(c.dim) + " is not a multiple of heads (and no headDim is given)");
  if (c.heads % c.kvHeadCount() != 0)
    fail("heads " + std::to_string(c.heads) + " is not a multiple of kvHeads");
  if (c.rope && c.headSize() % 2 != 0) fail("RoPE needs an even head dim");
  if (!c.rope && c.ropeScaling.kind != RopeScalingKind::None) fail("RoPE scaling without RoPE");
  if (c.paramDtype == codegen::Elem::F16) fail("f16 parameters are not supported (f32 or bf16)");
  if (c.paramDtype == codegen::Elem::BF16 && c.precision != Precision::BF16)
    fail("bf16 parameters need bf16 precision (the GEMMs read the stored weights as their operands)");
  if (const std::string why = loraIncompatibility(c); !why.empty()) fail(why);
}

// Parameter indices of one block (-1: absent in this configuration).
struct BlockIndex {
  int ln1w = -1, ln1b = -1, ln2w = -1, ln2b = -1;
  int qkvW = -1, qkvB = -1, qW = -1, qB = -1, kW = -1, kB = -1, vW = -1, vB = -1, projW = -1, projB = -1;
  int fcW = -1, fcB = -1, gateW = -1, gateB = -1, upW = -1, upB = -1, mlpProjW = -1, mlpProjB = -1;
};

} // namespace

codegen::Elem halfOf(Precision p) {
  return p == Precision::Mixed  ? codegen::Elem::F16
         : p == Precision::BF16 ? codegen::Elem::BF16
                                : codegen::Elem::F32;
}

std::string GptConfig::describe() const {
  std::string s = std::to_string(layers) + "L " + std::to_string(dim) + "d " + std::to_string(heads) + "h T" +
                  std::to_string(context) + " V" + std::to_string(vocab) + " " + enumName(kNormNames, norm) +
                  " " + enumName(kMlpNames, mlp);
  if (kvHeads != 0 && kvHeads != heads) s += " kv" + std::to_string(kvHeads);
  if (headDim != 0 && headDim * heads != dim) s += " D" + std::to_string(headDim);
  if (hidden != 0) s += " hidden" + std::to_string(hidden);
  if (bias != BiasPlacement::All) s += std::string(" bias-") + biasPlacementName(bias);
  if (!tiedHead) s += " untied-head";
  if (rope) s += " rope";
  if (rope && ropeTheta != 10000.0) s += fmt::format(" theta{}", ropeTheta);
  if (ropeScaling.kind == RopeScalingKind::Llama3)
    s += fmt::format(" llama3-scaling x{}", ropeScaling.factor);
  if (slidingWindow != 0) s += " window" + std::to_string(slidingWindow);
  if (family != Family::Gpt2) s += std::string(" ") + familyName(family);
  if (!packedQkv) s += " unpacked-qkv";
  if (pack) s += " packed-documents (end " + std::to_string(endOfText) + ")";
  if (checkpointActivations)
    s += " checkpoint";
  else if (checkpointAttention)
    s += " checkpoint-attention";
  if (precision == Precision::Mixed) s += " mixed";
  if (precision == Precision::BF16) s += " bf16";
  if (paramDtype == codegen::Elem::BF16) s += " bf16-params";
  if (lora.enabled())
    s += fmt::format(" lora r{} alpha{} on {} ({} base)", lora.rank, lora.alpha,
                     formatLoraTargets(lora.targets), codegen::elemName(lora.base));
  return s;
}

uint64_t GptConfig::parameterCount() const {
  const uint64_t C = dim, D = headSize(), kv = kvHeadCount(), hid = mlpWidth();
  const uint64_t normParams = norm == NormKind::LayerNorm ? 2 * C : C;
  const uint64_t qkv = (heads + 2 * kv) * D, mlpBias = biased(LinearGroup::Mlp) ? 1 : 0;
  uint64_t perBlock = 2 * normParams + qkv * C + qkv * (biased(LinearGroup::Qkv) ? 1 : 0);
  perBlock += C * heads * D + (biased(LinearGroup::AttentionOut) ? C : 0);
  perBlock += (mlp == MlpKind::SwiGLU ? 2 : 1) * (hid * C + hid * mlpBias);
  perBlock += C * hid + C * mlpBias;
  const uint64_t embeddings = uint64_t(vocab) * C * (tiedHead ? 1 : 2);
  return embeddings + (rope ? 0 : uint64_t(context) * C) + layers * perBlock + normParams;
}

struct Gpt::Impl {
  vk::Context& ctx;
  GptConfig cfg;
  uint64_t seed;
  detail::ParameterTable tensors;
  int wte = -1, wpe = -1, lnfW = -1, lnfB = -1, lmHead = -1;
  std::vector<BlockIndex> blocks;
  vk::Buffer ropeTable;
  vk::Buffer dropoutCounter; // LoRA dropout's step counter (one uint), advanced by every forwardBackward

  Impl(vk::Context& c, const GptConfig& config, uint64_t s)
      : ctx(c), cfg(config), seed(s), tensors(config.lora.enabled(), config.lora.base, config.paramDtype) {}

  // GPT-2's init convention: std > 0 draws N(0, std), 0 is zeros, < 0 ones.
  int add(const std::string& name, std::vector<uint32_t> shape, double std, bool decay,
          detail::Role role = detail::Role::Plain) {
    const detail::Init init = std > 0   ? detail::Init{detail::Init::Normal, std}
                              : std < 0 ? detail::Init{detail::Init::Ones, 0}
                                        : detail::Init{detail::Init::Zeros, 0};
    return tensors.add(name, std::move(shape), init, decay, role);
  }

  // A linear layer's weight [out, in] (N(0, std)) and, where the configuration places one, its bias (zeros).
  std::pair<int, int> linear(const std::string& name, uint32_t out, uint32_t in, double std,
                             LinearGroup group) {
    const int w = add(name + ".weight", {out, in}, std, true, detail::Role::Matrix);
    return {w, cfg.biased(group) ? add(name + ".bias", {out}, 0, false) : -1};
  }

  // Block l's adapters (after its own parameters): A as PEFT initialises it (kaiming-uniform with a =
  // sqrt(5): U(-1/sqrt(in), 1/sqrt(in))), B zeros, so the adapted model starts as the base.
  void addAdapters(uint32_t l) {
    for (const LoraSite& site : loraSites(cfg)) {
      const uint32_t R = uint32_t(site.parts.size()) * cfg.lora.rank;
      tensors.add(loraParamName(l, site, 'A'), {R, site.in},
                  {detail::Init::Uniform, 1.0 / std::sqrt(double(site.in))}, true, detail::Role::Adapter);
      tensors.add(loraParamName(l, site, 'B'), {site.bRows(), cfg.lora.rank}, {}, true,
                  detail::Role::Adapter);
    }
  }

  BlockIndex addBlock(uint32_t l) {
    const uint32_t C = cfg.dim, D = cfg.headSize(), H = cfg.heads, kv = cfg.kvHeadCount(),
                   hid = cfg.mlpWidth();
    const double std = 0.02, projStd = 0.02 / std::sqrt(2.0 * cfg.layers);
    const bool ln = cfg.norm == NormKind::LayerNorm;
    const std::string p = "blocks." + std::to_string(l) + ".";
    BlockIndex b;
    b.ln1w = add(p + "ln1.weight", {C}, -1, false);
    if (ln) b.ln1b = add(p + "ln1.bias", {C}, 0, false);
    if (cfg.packedQkv) {
      std::tie(b.qkvW, b.qkvB) = linear(p + "attn.qkv", (H + 2 * kv) * D, C, std, LinearGroup::Qkv);
    } else {
      std::tie(b.qW, b.qB) = linear(p + "attn.q", H * D, C, std, LinearGroup::Qkv);
      std::tie(b.kW, b.kB) = linear(p + "attn.k", kv * D, C, std, LinearGroup::Qkv);
      std::tie(b.vW, b.vB) = linear(p + "attn.v", kv * D, C, std, LinearGroup::Qkv);
    }
    std::tie(b.projW, b.projB) = linear(p + "attn.proj", C, H * D, projStd, LinearGroup::AttentionOut);
    b.ln2w = add(p + "ln2.weight", {C}, -1, false);
    if (ln) b.ln2b = add(p + "ln2.bias", {C}, 0, false);
    if (cfg.mlp == MlpKind::SwiGLU) {
      std::tie(b.gateW, b.gateB) = linear(p + "mlp.gate", hid, C, std, LinearGroup::Mlp);
      std::tie(b.upW, b.upB) = linear(p + "mlp.up", hid, C, std, LinearGroup::Mlp);
    } else {
      std::tie(b.fcW, b.fcB) = linear(p + "mlp.fc", hid, C, std, LinearGroup::Mlp);
    }
    std::tie(b.mlpProjW, b.mlpProjB) = linear(p + "mlp.proj", C, hid, projStd, LinearGroup::Mlp);
    addAdapters(l);
    return b;
  }

  void build() {
    validate(cfg);
    const uint32_t C = cfg.dim;
    const bool ln = cfg.norm == NormKind::LayerNorm;
    wte = add("wte.weight", {cfg.vocab, C}, 0.02, true, detail::Role::Matrix);
    if (!cfg.rope) wpe = add("wpe.weight", {cfg.context, C}, 0.02, false);
    for (uint32_t l = 0; l < cfg.layers; ++l)
      blocks.push_back(addBlock(l));
    lnfW = add("ln_f.weight", {C}, -1, false);
    if (ln) lnfB = add("ln_f.bias", {C}, 0, false);
    if (!cfg.tiedHead) lmHead = add("lm_head.weight", {cfg.vocab, C}, 0.02, true, detail::Role::Matrix);

    tensors.build(ctx, seed);
    if (cfg.rope) {
      const std::vector<float> table =
          ops::ropeTable(cfg.context, ropeInverseFrequencies(cfg.headSize(), cfg.ropeTheta, cfg.ropeScaling));
      ropeTable = ctx.buffer(table.size() * 4, "rope table");
      ctx.uploadVector(ropeTable, table);
    }
    if (cfg.lora.dropout > 0) {
      dropoutCounter = ctx.buffer(4, "LoRA dropout step counter");
      ctx.uploadVector(dropoutCounter, std::vector<uint32_t>{0});
    }
  }

  // The LM head's weight: wte (tied) or lm_head.weight.
  int head() const { return cfg.tiedHead ? wte : lmHead; }

  Tensor param(int i) const { return tensors.tensor(i); }

  // GEMM operands of this call: 16-bit copies in Mixed and BF16 mode (bf16 parameters and a frozen base of
  // that kind are their own operands), f32 copies of a half-precision base in F32 mode; made once up front
  // (outside any checkpoint).
  // With groupCasts, the biases that 16-bit GEMM outputs add (packed QKV, the 16-bit MLP hidden layer) get
  // their 16-bit copies in the same pass.
  struct Weights {
    std::vector<Tensor> gemm; // per parameter; empty for non-GEMM parameters
    std::vector<Tensor> bias; // per parameter: 16-bit bias copies made up front; empty where none
  };
  Weights prepare(Tape& tape) const {
    Weights w;
    const DType operand = halfOf(cfg.precision);
    std::vector<int> matrices, biases;
    for (size_t i = 0; i < tensors.size(); ++i)
      if (tensors.shape(int(i)).size() == 2 && int(i) != wpe && (int(i) != wte || cfg.tiedHead))
        matrices.push_back(int(i));
    for (const BlockIndex& b : blocks)
      for (int i : {b.qkvB, b.fcB})
        if (i >= 0) biases.push_back(i);
    if (!codegen::isHalf(operand) || !cfg.groupCasts) {
      w.gemm.resize(tensors.size());
      for (int i : matrices)
        w.gemm[size_t(i)] = autograd::cast(tape, param(i), operand);
      w.bias.resize(tensors.size());
      return w;
    }
    matrices.insert(matrices.end(), biases.begin(), biases.end());
    w.gemm = detail::operandCopies(tape, tensors, matrices, operand);
    w.bias.resize(tensors.size());
    for (int i : biases)
      std::swap(w.bias[size_t(i)], w.gemm[size_t(i)]);
    return w;
  }

  detail::BlockWeights blockWeights(const Weights& w, uint32_t l, bool inference) const {
    const BlockIndex& b = blocks[l];
    const auto g = [&](int i) { return i < 0 ? Tensor{} : w.gemm[size_t(i)]; };
    detail::BlockWeights bw;
    bw.ln1w = param(b.ln1w);
    bw.ln1b = param(b.ln1b);
    bw.ln2w = param(b.ln2w);
    bw.ln2b = param(b.ln2b);
    bw.qkvW = g(b.qkvW);
    bw.qkvB = param(b.qkvB);
    bw.qkvBHalf = b.qkvB < 0 ? Tensor{} : w.bias[size_t(b.qkvB)];
    bw.qW = g(b.qW);
    bw.qB = param(b.qB);
    bw.kW = g(b.kW);
    bw.kB = param(b.kB);
    bw.vW = g(b.vW);
    bw.vB = param(b.vB);
    bw.projW = g(b.projW);
    bw.projB = param(b.projB);
    bw.fcW = g(b.fcW);
    bw.fcB = param(b.fcB);
    bw.fcBHalf = b.fcB < 0 ? Tensor{} : w.bias[size_t(b.fcB)];
    bw.gateW = g(b.gateW);
    bw.gateB = param(b.gateB);
    bw.upW = g(b.upW);
    bw.upB = param(b.upB);
    bw.mlpProjW = g(b.mlpProjW);
    bw.mlpProjB = param(b.mlpProjB);
    if (cfg.lora.enabled()) // dropout in training only
      detail::attachLora(
          bw, cfg, l, [&](const std::string& name) { return w.gemm[size_t(tensors.find(name))]; },
          inference || !dropoutCounter ? vk::BufferRange{} : dropoutCounter.range());
    return bw;
  }

  // One call's inputs: batch x T tokens and (sequence packing with given documents) their positions.
  struct Batch {
    vk::BufferRange tokens, positions;
    uint32_t batch = 0, T = 0;
  };

  Batch checkCall(const vk::BufferRange& tokens, uint32_t batch, uint32_t T,
                  const vk::BufferRange& positions) const {
    if (batch == 0 || T == 0) throw std::invalid_argument("Gpt: batch and T must be positive");
    if (T > cfg.context)
      throw std::invalid_argument("Gpt: T = " + std::to_string(T) + " exceeds the context " +
                                  std::to_string(cfg.context));
    if (cfg.slidingWindow != 0 && T > cfg.slidingWindow)
      throw std::invalid_argument(fmt::format("Gpt: T = {} exceeds the sliding window of {} (sliding-window "
                                              "attention is not supported: sequences must fit the window)",
                                              T, cfg.slidingWindow));
    for (const auto& [name, r] : {std::pair{"tokens", tokens}, {"positions", positions}})
      if (r.size != 0 && r.size < uint64_t(batch) * T * 4)
        throw std::invalid_argument(std::string("Gpt: ") + name + " hold fewer than batch*T int32");
    return {tokens, positions, batch, T};
  }

  // Embeddings, blocks and final norm; returns the LM head's input [batch*T, C] (its GEMM operand type).
  Tensor features(Tape& tape, const Weights& w, const Batch& call, bool inference) const {
    const uint32_t C = cfg.dim, batch = call.batch, T = call.T, BT = batch * T;
    Tensor x = autograd::embedding(tape, param(wte), call.tokens, BT);
    vk::BufferRange documentPositions = call.positions;
    if (documentPositions.buffer == VK_NULL_HANDLE && cfg.pack) {
      // Positions restart after each end-of-text token.
      documentPositions = tape.allocate(uint64_t(BT) * 4, "document positions");
      ops::documentPositions(tape.exec(), call.tokens, documentPositions, batch, T, int32_t(cfg.endOfText));
    }
    if (documentPositions.buffer != VK_NULL_HANDLE && wpe >= 0) { // the learned table, gathered at them
      x = autograd::add(tape, x, autograd::embedding(tape, param(wpe), documentPositions, BT));
    } else if (wpe >= 0) {
      const Tensor pos = tensors.tensor(wpe, T * C); // the first T positions
      x = autograd::addBroadcast(tape, x.reshape({batch, T * C}), pos).reshape({BT, C});
    }
    detail::BlockShape shape;
    shape.config = cfg;
    shape.batch = batch;
    shape.T = T;
    shape.kvHeads = cfg.kvHeadCount();
    shape.headDim = cfg.headSize();
    if (cfg.rope) shape.ropeTable = ropeTable.range();
    shape.fuseGelu = inference;
    shape.documentPositions = documentPositions;
    const bool recompute = cfg.checkpointActivations || cfg.checkpointAttention;
    detail::Stream stream{x, {}}; // without recomputation, each block's last add is in the next norm
    for (uint32_t l = 0; l < cfg.layers; ++l) {
      const detail::BlockWeights bw = blockWeights(w, l, inference);
      shape.layer = l;
      if (!recompute) {
        stream = detail::blockStream(tape, shape, bw, stream);
        continue;
      }
      const bool attentionOnly = !cfg.checkpointActivations;
      const auto fn = [shape, bw, attentionOnly](Tape& t, const Tensor& in) {
        return attentionOnly ? detail::blockRecomputingAttention(t, shape, bw, in)
                             : detail::block(t, shape, bw, in);
      };
      stream.x = cfg.checkpointActivations ? autograd::checkpoint(tape, stream.x, fn) : fn(tape, stream.x);
    }
    const Tensor xf = detail::normStream(tape, cfg, stream, param(lnfW), param(lnfB), shape.gemmOperand(),
                                         shape.residualGrad())
                          .y;
    return detail::gemmInput(tape, shape, xf);
  }

  // The logits [batch*T, vocab] of the LM head.
  Tensor logits(Tape& tape, const Weights& w, const Batch& in, bool inference) const {
    const Tensor xf = features(tape, w, in, inference);
    autograd::MatmulSpec spec; // logits = xf W^T (W: wte when tied, else lm_head)
    spec.M = in.batch * in.T;
    spec.N = cfg.vocab;
    spec.K = cfg.dim;
    spec.transB = true;
    spec.out = cfg.f16Logits && !inference ? halfOf(cfg.precision) : DType::F32;
    return autograd::matmul(tape, xf, w.gemm[size_t(head())], spec);
  }

  // The chunked head and loss (GptConfig::chunkedLoss) where the logits' type is the GEMM operands': f32, or
  // mixed or bf16 precision with fused casts and 16-bit logits.
  bool chunkedLoss() const {
    return cfg.chunkedLoss && (cfg.precision == Precision::F32 || (cfg.fusedCasts && cfg.f16Logits));
  }

  // The mean loss over the batch into lossOut, the LM head and cross-entropy in row chunks.
  void chunkedMeanLoss(Tape& tape, const Weights& w, const Batch& in, const vk::BufferRange& targets,
                       const vk::BufferRange& lossOut, float gradScale, bool inference) const {
    const uint32_t rows = in.batch * in.T;
    const Tensor xf = features(tape, w, in, inference);
    autograd::HeadLossSpec spec;
    // Chunks of at most kHeadChunkBytes of f16 logits, and within one kernel binding in the logits' own type.
    const uint64_t logitBytes = inference ? 4 : autograd::dtypeBytes(xf.dtype);
    const uint64_t binding = tape.exec().context().device().limits().maxStorageBufferRange;
    spec.chunkRows =
        autograd::headChunkRows(rows, cfg.vocab, std::min(kHeadChunkBytes, binding * 2 / logitBytes));
    spec.logits = DType::F32;
    const Tensor loss =
        autograd::headCrossEntropy(tape, xf, w.gemm[size_t(head())], targets, gradScale / float(rows), spec);
    ops::reduceRows(tape.exec(), loss.data, lossOut, 1, rows, codegen::RowReduceOp::Mean);
  }

  void meanLoss(Tape& tape, const Tensor& logits, const vk::BufferRange& targets,
                const vk::BufferRange& lossOut, float gradScale) const {
    const uint32_t rows = logits.shape[0];
    const Tensor loss = autograd::crossEntropy(tape, logits, targets, gradScale / float(rows));
    ops::reduceRows(tape.exec(), loss.data, lossOut, 1, rows, codegen::RowReduceOp::Mean);
  }
};

Gpt::Gpt(vk::Context& ctx, const GptConfig& config, uint64_t seed)
    : impl_(std::make_unique<Impl>(ctx, config, seed)) {
  impl_->build();
}

Gpt::~Gpt() = default;

const GptConfig& Gpt::config() const {
  return impl_->cfg;
}

const std::vector<ParameterGroup>& Gpt::parameterGroups() const {
  return impl_->tensors.groups();
}

std::vector<Parameter>& Gpt::parameters() {
  return impl_->tensors.trainable();
}

std::vector<FrozenTensor>& Gpt::frozen() {
  return impl_->tensors.frozenTensors();
}

uint32_t Gpt::dropoutStep() {
  if (!impl_->dropoutCounter) return 0;
  return impl_->ctx.downloadVector<uint32_t>(impl_->dropoutCounter, 1)[0];
}

void Gpt::setDropoutStep(uint32_t step) {
  if (impl_->dropoutCounter) impl_->ctx.uploadVector(impl_->dropoutCounter, std::vector<uint32_t>{step});
}

void Gpt::forwardBackward(ops::Executor& exec, graph::StepArena& arena, const vk::BufferRange& tokens,
                          const vk::BufferRange& targets, uint32_t batch, uint32_t T,
                          const vk::BufferRange& lossOut, float gradScale, const vk::BufferRange& positions) {
  const Impl::Batch in = impl_->checkCall(tokens, batch, T, positions);
  autograd::Workspace ws(arena);
  Tape tape(exec, ws, true);
  if (impl_->dropoutCounter) ops::dropoutAdvance(exec, impl_->dropoutCounter.range()); // a new mask per run
  const Impl::Weights w = impl_->prepare(tape);
  if (impl_->chunkedLoss()) {
    impl_->chunkedMeanLoss(tape, w, in, targets, lossOut, gradScale, false);
  } else {
    const Tensor logits = impl_->logits(tape, w, in, false);
    impl_->meanLoss(tape, logits, targets, lossOut, gradScale);
  }
  tape.backward();
}

void Gpt::forward(ops::Executor& exec, graph::StepArena& arena, const vk::BufferRange& tokens, uint32_t batch,
                  uint32_t T, const vk::BufferRange& logitsOut, const vk::BufferRange* targets,
                  const vk::BufferRange* lossOut, const vk::BufferRange& positions) {
  const Impl::Batch in = impl_->checkCall(tokens, batch, T, positions);
  autograd::Workspace ws(arena);
  Tape tape(exec, ws, false);
  const Impl::Weights w = impl_->prepare(tape);
  if (logitsOut.buffer == VK_NULL_HANDLE && targets && lossOut && impl_->cfg.chunkedLoss) { // the loss only
    impl_->chunkedMeanLoss(tape, w, in, *targets, *lossOut, 1.0f, true);
    return;
  }
  const Tensor logits = impl_->logits(tape, w, in, true);
  if (logitsOut.buffer != VK_NULL_HANDLE) ops::copy(exec, logits.data, logitsOut, logits.count());
  if (targets && lossOut) impl_->meanLoss(tape, logits, *targets, *lossOut, 1.0f);
}

} // namespace helios::model
