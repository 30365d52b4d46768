#include "engine/model/decoder.hpp"

#include "engine/autograd/ops.hpp"
#include "engine/model/blocks.hpp"
#include "engine/model/rope_frequencies.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/permute.hpp"
#include "engine/ops/rope.hpp"

#include <cmath>
#include <fmt/format.h>
#include <map>
#include <stdexcept>

namespace helios::model {

using autograd::Tape;
using autograd::Tensor;

struct GptDecoder::Impl {
  GptConfig cfg; // precision F32: the decoder multiplies the f32 master weights
  std::map<std::string, Tensor> params;
  std::vector<vk::Buffer> widened;      // f32 copies of a LoRA model's half-precision frozen base
  std::vector<vk::Buffer> keys, values; // per layer [kvHeads, window, D]
  vk::Buffer ropeTable;                 // [window, D/2, 2] when the model uses RoPE
  uint32_t kvHeads = 0, headDim = 0;

  // The frozen base as f32 constants: a half-precision one widened once into buffers of its own (decoding
  // multiplies f32 as the forward pass does; the price is an f32 copy of the base while sampling).
  void addFrozen(vk::Context& ctx, const std::vector<FrozenTensor>& frozen) {
    ops::ImmediateExecutor exec(ctx);
    for (const FrozenTensor& f : frozen) {
      if (f.storage == BaseStorage::F32) {
        params[f.name] = Tensor::constant(f.data.range(), f.shape);
        continue;
      }
      widened.push_back(ctx.buffer(4ull * f.elements, "decoder f32 base weights"));
      ops::cast(exec, f.data.range(), widened.back().range(), f.elements, f.storage, codegen::Elem::F32);
      params[f.name] = Tensor::constant(widened.back().range(), f.shape);
    }
    exec.flush();
  }

  Tensor param(const std::string& name) const {
    auto it = params.find(name);
    return it == params.end() ? Tensor{} : it->second;
  }

  detail::BlockWeights layer(uint32_t l) const {
    const std::string p = fmt::format("blocks.{}.", l);
    detail::BlockWeights w;
    w.ln1w = param(p + "ln1.weight");
    w.ln1b = param(p + "ln1.bias");
    w.ln2w = param(p + "ln2.weight");
    w.ln2b = param(p + "ln2.bias");
    w.qkvW = param(p + "attn.qkv.weight");
    w.qkvB = param(p + "attn.qkv.bias");
    w.qW = param(p + "attn.q.weight");
    w.qB = param(p + "attn.q.bias");
    w.kW = param(p + "attn.k.weight");
    w.kB = param(p + "attn.k.bias");
    w.vW = param(p + "attn.v.weight");
    w.vB = param(p + "attn.v.bias");
    w.projW = param(p + "attn.proj.weight");
    w.projB = param(p + "attn.proj.bias");
    w.fcW = param(p + "mlp.fc.weight");
    w.fcB = param(p + "mlp.fc.bias");
    w.gateW = param(p + "mlp.gate.weight");
    w.gateB = param(p + "mlp.gate.bias");
    w.upW = param(p + "mlp.up.weight");
    w.upB = param(p + "mlp.up.bias");
    w.mlpProjW = param(p + "mlp.proj.weight");
    w.mlpProjB = param(p + "mlp.proj.bias");
    if (cfg.lora.enabled()) detail::attachLora(w, cfg, l, [&](const std::string& n) { return param(n); }, {});
    return w;
  }
};

std::string GptDecoder::unsupported(const GptConfig& c) {
  if (c.paramDtype != codegen::Elem::F32) return "bf16 parameters are decoded with full-window forwards only";
  return ""; // every other configuration decodes incrementally (RoPE rotates at the cached positions)
}

GptDecoder::GptDecoder(vk::Context& ctx, Gpt& gpt, uint32_t window)
    : impl_(std::make_unique<Impl>()), window_(window) {
  Impl& m = *impl_;
  m.cfg = gpt.config();
  m.cfg.precision = Precision::F32;
  if (const std::string why = unsupported(m.cfg); !why.empty()) throw std::invalid_argument(why);
  if (window == 0 || window > m.cfg.context)
    throw std::invalid_argument(
        fmt::format("GptDecoder: window {} is not in [1, context {}]", window, m.cfg.context));
  m.kvHeads = m.cfg.kvHeadCount();
  m.headDim = m.cfg.headSize();
  for (const Parameter& p : gpt.parameters())
    m.params[p.name] = Tensor::constant(p.data.range(), p.shape);
  m.addFrozen(ctx, gpt.frozen());
  if (m.cfg.rope) {
    const std::vector<float> table =
        ops::ropeTable(window, ropeInverseFrequencies(m.headDim, m.cfg.ropeTheta, m.cfg.ropeScaling));
    m.ropeTable = ctx.buffer(table.size() * 4, "decoder rope table");
    ctx.uploadVector(m.ropeTable, table);
  }
  const uint64_t bytes = 4ull * m.kvHeads * window * m.headDim;
  for (uint32_t l = 0; l < m.cfg.layers; ++l) {
    m.keys.push_back(ctx.buffer(bytes, "kv cache keys"));
    m.values.push_back(ctx.buffer(bytes, "kv cache values"));
  }
}

GptDecoder::~GptDecoder() = default;

void GptDecoder::feed(ops::Executor& exec, graph::StepArena& arena, const vk::BufferRange& tokens, uint32_t n,
                      const vk::BufferRange& logitsOut) {
  const Impl& m = *impl_;
  const uint32_t pos = length_, L = pos + n;
  if (n == 0 || L > window_)
    throw std::invalid_argument(
        fmt::format("GptDecoder: {} new tokens after {} cached exceed the window of {}", n, pos, window_));
  const uint32_t C = m.cfg.dim, H = m.cfg.heads, Hkv = m.kvHeads, D = m.headDim;
  autograd::Workspace ws(arena);
  Tape tape(exec, ws, false);
  detail::BlockShape shape;
  shape.config = m.cfg;
  shape.batch = 1;
  shape.T = n;
  shape.kvHeads = Hkv;
  shape.headDim = D;
  shape.fuseGelu = true;

  Tensor x = autograd::embedding(tape, m.param("wte.weight"), tokens, n);
  if (m.params.count("wpe.weight")) {
    const Tensor rows = autograd::permute(tape, m.param("wpe.weight"), {1, 1, n, C}, pos * C, {0, 0, C, 1});
    x = autograd::add(tape, x, rows.reshape({n, C}));
  }

  // The new rows' K or V heads [1, Hkv, n, D] into the cache at positions [pos, pos + n).
  const auto store = [&](const Tensor& src, const vk::Buffer& cache) {
    ops::PermuteArgs a;
    a.shape = {1, Hkv, n, D};
    a.srcStrides = {0, n * D, D, 1};
    a.dstOffset = pos * D;
    a.dstStrides = {0, window_ * D, D, 1};
    ops::permute(exec, src.data, cache.range(), a);
  };
  // The first L cached positions as [1, Hkv, L, D], the layout the attention kernels read.
  const auto cached = [&](const vk::Buffer& cache) {
    const Tensor all = Tensor::constant(cache.range(), {Hkv * window_ * D});
    return autograd::permute(tape, all, {1, Hkv, L, D}, 0, {0, window_ * D, D, 1});
  };
  // Heads [1, count, n, D] from columns [col, col + count D) of a [n, width] projection.
  const auto heads = [&](const Tensor& src, uint32_t count, uint32_t col, uint32_t width) {
    return autograd::permute(tape, src, {1, count, n, D}, col, {0, D, width, 1});
  };
  // RoPE at positions [pos, pos + n): the table's rows from pos on, as a table of n rows.
  vk::BufferRange ropeRows;
  if (m.cfg.rope)
    ropeRows = autograd::permute(tape, Tensor::constant(m.ropeTable.range(), {window_ * D}), {1, 1, n, D},
                                 pos * D, {0, 0, D, 1})
                   .data;
  const auto rotate = [&](const Tensor& t) {
    return m.cfg.rope ? autograd::rope(tape, t, ropeRows, D, n) : t;
  };

  for (uint32_t l = 0; l < m.cfg.layers; ++l) {
    const detail::BlockWeights w = m.layer(l);
    const Tensor h = detail::norm(tape, m.cfg, x, w.ln1w, w.ln1b);
    Tensor q, k, v;
    if (m.cfg.packedQkv) {
      const uint32_t width = (H + 2 * Hkv) * D;
      const Tensor qkv =
          autograd::linear(tape, h, w.qkvW, detail::biasOf(w.qkvB), {.lora = detail::loraOf(w.qkvLora)});
      q = heads(qkv, H, 0, width);
      k = heads(qkv, Hkv, H * D, width);
      v = heads(qkv, Hkv, (H + Hkv) * D, width);
    } else {
      const auto project = [&](const Tensor& W, const Tensor& b, const autograd::LoraTerm& lora) {
        return autograd::linear(tape, h, W, detail::biasOf(b), {.lora = detail::loraOf(lora)});
      };
      q = heads(project(w.qW, w.qB, w.qLora), H, 0, H * D);
      k = heads(project(w.kW, w.kB, w.kLora), Hkv, 0, Hkv * D);
      v = heads(project(w.vW, w.vB, w.vLora), Hkv, 0, Hkv * D);
    }
    q = rotate(q);
    store(rotate(k), m.keys[l]);
    store(v, m.values[l]);
    // Causal with the mask aligned bottom right: new query i sees the keys up to position pos + i.
    ops::AttentionShape as{1, H, Hkv, n, L, D, true, static_cast<float>(1.0 / std::sqrt(double(D)))};
    as.kernel = ops::AttentionKernel::Fallback;
    const Tensor o = autograd::attention(tape, q, cached(m.keys[l]), cached(m.values[l]), as);
    const Tensor merged = autograd::permute(tape, o, {1, n, H, D}, 0, {0, D, n * D, 1}).reshape({n, H * D});
    x = autograd::add(tape, x,
                      autograd::linear(tape, merged, w.projW, detail::biasOf(w.projB),
                                       {.lora = detail::loraOf(w.projLora)}));
    const Tensor h2 = detail::norm(tape, m.cfg, x, w.ln2w, w.ln2b);
    x = autograd::add(tape, x, detail::mlp(tape, shape, w, h2));
  }
  const Tensor last = autograd::permute(tape, x, {1, 1, 1, C}, (n - 1) * C, {0, 0, 0, 1}).reshape({1, C});
  const Tensor xf = detail::norm(tape, m.cfg, last, m.param("ln_f.weight"), m.param("ln_f.bias"));
  autograd::MatmulSpec head; // logits = xf W^T (W: wte when tied, else lm_head)
  head.M = 1;
  head.N = m.cfg.vocab;
  head.K = C;
  head.transB = true;
  const Tensor logits =
      autograd::matmul(tape, xf, m.param(m.cfg.tiedHead ? "wte.weight" : "lm_head.weight"), head);
  ops::copy(exec, logits.data, logitsOut, m.cfg.vocab);
  length_ = L;
}

} // namespace helios::model
