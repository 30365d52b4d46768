#include "engine/model/decoder.hpp"

#include "engine/autograd/ops.hpp"
#include "engine/model/blocks.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/permute.hpp"

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
  std::vector<vk::Buffer> keys, values; // per layer [kvHeads, window, D]
  uint32_t kvHeads = 0, headDim = 0;

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
    return w;
  }
};

std::string GptDecoder::unsupported(const GptConfig& c) {
  if (c.rope) return "RoPE models are decoded with full-window forwards only";
  if (c.paramDtype != codegen::Elem::F32) return "bf16 parameters are decoded with full-window forwards only";
  return "";
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
  m.kvHeads = m.cfg.kvHeads == 0 ? m.cfg.heads : m.cfg.kvHeads;
  m.headDim = m.cfg.dim / m.cfg.heads;
  for (const Parameter& p : gpt.parameters())
    m.params[p.name] = Tensor::constant(p.data.range(), p.shape);
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

  // The new rows' K or V heads (columns [col, col + Hkv D) of a [n, width] projection) into the cache.
  const auto store = [&](const Tensor& src, uint32_t col, uint32_t width, const vk::Buffer& cache) {
    ops::PermuteArgs a;
    a.shape = {1, Hkv, n, D};
    a.srcOffset = col;
    a.srcStrides = {0, D, width, 1};
    a.dstOffset = pos * D;
    a.dstStrides = {0, window_ * D, D, 1};
    ops::permute(exec, src.data, cache.range(), a);
  };
  // The first L cached positions as [1, Hkv, L, D], the layout the attention kernels read.
  const auto cached = [&](const vk::Buffer& cache) {
    const Tensor all = Tensor::constant(cache.range(), {Hkv * window_ * D});
    return autograd::permute(tape, all, {1, Hkv, L, D}, 0, {0, window_ * D, D, 1});
  };
  const auto heads = [&](const Tensor& src, uint32_t count, uint32_t width) {
    return autograd::permute(tape, src, {1, count, n, D}, 0, {0, D, width, 1});
  };

  for (uint32_t l = 0; l < m.cfg.layers; ++l) {
    const detail::BlockWeights w = m.layer(l);
    const Tensor h = detail::norm(tape, m.cfg, x, w.ln1w, w.ln1b);
    Tensor q;
    if (m.cfg.packedQkv) {
      const uint32_t width = (H + 2 * Hkv) * D;
      const Tensor qkv = autograd::linear(tape, h, w.qkvW, &w.qkvB);
      q = heads(qkv, H, width);
      store(qkv, H * D, width, m.keys[l]);
      store(qkv, (H + Hkv) * D, width, m.values[l]);
    } else {
      q = heads(autograd::linear(tape, h, w.qW, &w.qB), H, H * D);
      store(autograd::linear(tape, h, w.kW, &w.kB), 0, Hkv * D, m.keys[l]);
      store(autograd::linear(tape, h, w.vW, &w.vB), 0, Hkv * D, m.values[l]);
    }
    // Causal with the mask aligned bottom right: new query i sees the keys up to position pos + i.
    ops::AttentionShape as{1, H, Hkv, n, L, D, true, static_cast<float>(1.0 / std::sqrt(double(D)))};
    as.kernel = ops::AttentionKernel::Fallback;
    const Tensor o = autograd::attention(tape, q, cached(m.keys[l]), cached(m.values[l]), as);
    const Tensor merged = autograd::permute(tape, o, {1, n, H, D}, 0, {0, D, n * D, 1}).reshape({n, C});
    x = autograd::add(tape, x, autograd::linear(tape, merged, w.projW, &w.projB));
    const Tensor h2 = detail::norm(tape, m.cfg, x, w.ln2w, w.ln2b);
    x = autograd::add(tape, x, detail::mlp(tape, shape, w, h2));
  }
  const Tensor last = autograd::permute(tape, x, {1, 1, 1, C}, (n - 1) * C, {0, 0, 0, 1}).reshape({1, C});
  const Tensor xf = detail::norm(tape, m.cfg, last, m.param("ln_f.weight"), m.param("ln_f.bias"));
  autograd::MatmulSpec head; // logits = xf Wte^T (tied)
  head.M = 1;
  head.N = m.cfg.vocab;
  head.K = C;
  head.transB = true;
  const Tensor logits = autograd::matmul(tape, xf, m.param("wte.weight"), head);
  ops::copy(exec, logits.data, logitsOut, m.cfg.vocab);
  length_ = L;
}

} // namespace helios::model
