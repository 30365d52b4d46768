#include "engine/ops/attention.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <tuple>

#include "codegen/kernels/attention.hpp"
#include "codegen/kernels/attention_coop.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "engine/ops/reduce.hpp"

namespace helios::ops {

namespace {

using codegen::AttentionPass;
using rows_detail::checkElems;

void checkShape(const char* op, const AttentionShape& s) {
  const std::string me = std::string(op) + ": ";
  if (!s.heads || !s.kvHeads || s.heads % s.kvHeads)
    throw std::invalid_argument(me + "heads (" + std::to_string(s.heads) +
                                ") must be a positive multiple of kvHeads (" + std::to_string(s.kvHeads) +
                                ")");
  if (s.headDim % 4 || s.headDim == 0 || s.headDim > 256)
    throw std::invalid_argument(me + "headDim " + std::to_string(s.headDim) +
                                " is not supported (a multiple of 4, at most 256)");
  if (!s.documents()) return;
  if (!s.causal || s.Tq != s.Tk)
    throw std::invalid_argument(me + "document masks are for causal self-attention (Tq == Tk; got Tq " +
                                std::to_string(s.Tq) + ", Tk " + std::to_string(s.Tk) +
                                (s.causal ? ")" : ", dense)"));
  checkElems(op, "documentPositions", s.documentPositions, uint64_t(s.batch) * s.Tq);
}

codegen::DocumentMask documentMask(const AttentionShape& s) {
  return s.documents() ? codegen::DocumentMask::Packed : codegen::DocumentMask::None;
}

codegen::AttentionPush push(const AttentionShape& s) {
  return {s.Tq, s.Tk, s.heads, s.kvHeads, s.scale};
}

// A layout with its defaults filled in: [B, heads, T, D] contiguous where it was left zero.
AttentionLayout resolved(const AttentionLayout& l, uint32_t heads, uint32_t T, uint32_t D) {
  return l.contiguous() ? AttentionLayout{D, T * D, heads * T * D} : l;
}

// Elements a tensor of this layout spans (the last row's end).
uint64_t span(const AttentionShape& s, const AttentionLayout& l, uint32_t heads, uint32_t T) {
  if (!s.batch || !heads || !T) return 0;
  return uint64_t(s.batch - 1) * l.batch + uint64_t(heads - 1) * l.head + uint64_t(T - 1) * l.row + s.headDim;
}

struct Spans {
  uint64_t q, kv, o;
};

// Layouts other than contiguous, and f16 outputs: what only the coop passes do.
bool coopOnly(const AttentionShape& s) {
  return s.halfOut || !s.qLayout.contiguous() || !s.kvLayout.contiguous() || !s.oLayout.contiguous();
}

// Checks the layouts (coop only where not contiguous; strides in whole 16-byte f16 vectors) and returns the
// elements each side spans.
Spans checkLayouts(const char* op, const AttentionShape& s) {
  if (coopOnly(s) && s.kernel == AttentionKernel::Fallback)
    throw std::invalid_argument(std::string(op) +
                                ": the fallback kernels take contiguous f32 tensors (layouts and halfOut are "
                                "coop only)");
  for (const AttentionLayout* l : {&s.qLayout, &s.kvLayout, &s.oLayout})
    if (l->row % 8 || l->head % 8 || l->batch % 8)
      throw std::invalid_argument(std::string(op) + ": layout strides must be multiples of 8 elements");
  return {span(s, resolved(s.qLayout, s.heads, s.Tq, s.headDim), s.heads, s.Tq),
          span(s, resolved(s.kvLayout, s.kvHeads, s.Tk, s.headDim), s.kvHeads, s.Tk),
          span(s, resolved(s.oLayout, s.heads, s.Tq, s.headDim), s.heads, s.Tq)};
}

codegen::AttentionCoopPush coopPush(const AttentionShape& s) {
  const auto units = [](const AttentionLayout& l) {
    return codegen::AttentionCoopLayout{l.row / 8, l.head / 8, l.batch / 8};
  };
  return {push(s), units(resolved(s.qLayout, s.heads, s.Tq, s.headDim)),
          units(resolved(s.kvLayout, s.kvHeads, s.Tk, s.headDim)),
          units(resolved(s.oLayout, s.heads, s.Tq, s.headDim))};
}

// Whether the coop passes run for these ranges (the coop kernels read and write 16-byte vectors).
bool useCoop(Executor& exec, const char* op, const AttentionShape& s,
             std::initializer_list<vk::BufferRange> rs) {
  if (s.kernel == AttentionKernel::Fallback) {
    if (s.halfQkv)
      throw std::invalid_argument(std::string(op) +
                                  ": the fallback kernels read f32 q/k/v (halfQkv is coop only)");
    return false;
  }
  bool aligned = true;
  for (const vk::BufferRange& r : rs)
    aligned = aligned && r.offset % 16 == 0;
  const bool ok = aligned && attentionCoopAvailable(exec.context().device(), s.headDim, s.half);
  if (!ok && (s.kernel == AttentionKernel::Coop || s.halfQkv || coopOnly(s)))
    throw std::invalid_argument(std::string(op) + ": the coop kernels need " + codegen::elemName(s.half) +
                                " x " + codegen::elemName(s.half) +
                                " -> f32 cooperative matrices with sides of 8 or 16 on subgroups of 4 to 64 "
                                "lanes, a head dim that is "
                                "a multiple of 16 up to 128 (got " +
                                std::to_string(s.headDim) + ") and 16-byte aligned ranges" +
                                (aligned ? "" : " (a range is not)") +
                                (s.halfQkv ? "; 16-bit q/k/v are read by the coop kernels only" : "") +
                                (coopOnly(s) ? "; layouts and f16 outputs are coop only" : ""));
  return ok;
}

// The pipeline and grid of one pass, coop or fallback (and for dK/dV whether it recomputes delta).
struct Pass {
  const vk::Pipeline* pipeline;
  uint32_t rowsPerGroup;
  bool recomputesDelta = false;
};

} // namespace

uint32_t attentionRowVectors(uint32_t vendorId) {
  constexpr uint32_t kIntel = 0x8086;
  return vendorId == kIntel ? 4 : 8;
}

namespace {

// Workgroups of one wave on this device: the GEMM policy's fill target (gemm.fillWorkgroups where set).
uint64_t waveOf(const vk::Device& device) {
  return fillTarget(deviceTuning(device).gemm, coopDeviceInfo(device));
}

// The dK/dV pass's delta (attentionRecomputeDelta), where the third staged tile fits the shared memory.
void chooseDelta(const vk::Device& device, codegen::AttentionCoopParams& p) {
  if (!attentionRecomputeDelta(deviceTuning(device).attention.delta.value)) return;
  auto q = p;
  q.delta = codegen::DkvDelta::Recompute;
  if (q.sharedBytes() <= q.maxSharedBytes) p = q;
}

// The forward's or dQ pass's key splits for this grid (attentionKeySplits), in the first of their layouts
// (keySplitLayouts) that fits 16 subgroups and the shared memory.
void splitKeys(const vk::Device& device, codegen::AttentionCoopParams& p, const AttentionShape& s) {
  const tuning::Tuning& t = deviceTuning(device);
  const uint64_t workgroups = uint64_t((s.Tq + p.rows() - 1) / p.rows()) * s.batch * s.heads;
  const uint64_t fill = waveOf(device);
  const std::optional<uint32_t> forced = t.attention.keySplits.value;
  const uint32_t splits = attentionKeySplits(forced, workgroups, fill, s.Tk, p.tile);
  if (splits == 1) return;
  if (splits != 2 && splits != 4) { // a forced count out of range: validate() names it
    auto q = p;
    q.keySplits = splits;
    q.validate();
  }
  for (const KeySplitLayout& l : keySplitLayouts(p.pass, splits, forced.has_value(), p.subgroups, p.tile)) {
    auto q = p;
    q.keySplits = l.splits;
    q.subgroups = l.subgroups;
    q.tile = l.tile;
    if (q.allSubgroups() > 16 || q.sharedBytes() > q.maxSharedBytes) continue;
    q.validate();
    p = q;
    return;
  }
}

Pass pass(Executor& exec, AttentionPass which, const AttentionShape& s, bool coop) {
  const vk::Device& device = exec.context().device();
  if (coop) {
    const auto p = attentionCoopFor(device, which, s);
    return {&exec.pipeline(p, codegen::generateAttentionCoop), p.rows(),
            p.delta == codegen::DkvDelta::Recompute};
  }
  const uint32_t rowVectors = s.rowVectors ? s.rowVectors : attentionRowVectors(device.properties().vendorID);
  const auto p = codegen::attentionParams(
      which, s.headDim, s.causal, device.limits().maxComputeSharedMemorySize, rowVectors, documentMask(s));
  return {&exec.pipeline(p, codegen::generateAttention), p.rowsPerGroup()};
}

uint32_t groups(uint32_t rows, const Pass& p) {
  return (rows + p.rowsPerGroup - 1) / p.rowsPerGroup;
}

// One pass's dispatch with the push constants of its family (and the document positions last, where set).
void run(Executor& exec, const Pass& p, bool coop, std::initializer_list<Binding> passBindings,
         const AttentionShape& s, uint32_t ownedRows, uint32_t heads) {
  const vk::Groups grid{groups(ownedRows, p), s.batch * heads, 1};
  std::vector<Binding> bindings(passBindings);
  if (s.documents()) bindings.push_back({s.documentPositions, Access::Read});
  if (coop) {
    const codegen::AttentionCoopPush c = coopPush(s);
    exec.dispatch(*p.pipeline, bindings, &c, sizeof c, grid);
  } else {
    const codegen::AttentionPush c = push(s);
    exec.dispatch(*p.pipeline, bindings, &c, sizeof c, grid);
  }
}

// The document mask on a coop pass: its staged starts may not fit beside a tiling chosen without them;
// then the first of fewer subgroups, or 32-key tiles, that fits.
void maskDocuments(codegen::AttentionCoopParams& p) {
  p.documents = codegen::DocumentMask::Packed;
  if (p.sharedBytes() <= p.maxSharedBytes) return;
  for (uint32_t tile : {p.tile, std::min(p.tile, 32u)})
    for (uint32_t sg = p.subgroups; sg >= 1; sg /= 2) {
      auto q = p;
      q.tile = tile;
      q.subgroups = sg;
      if (q.sharedBytes() > q.maxSharedBytes) continue;
      q.validate();
      p = q;
      return;
    }
  p.validate(); // names the shortfall
}

} // namespace

codegen::AttentionCoopParams attentionCoopPass(const vk::Device& device, AttentionPass pass, uint32_t headDim,
                                               bool causal) {
  const tuning::Tuning& tuned = deviceTuning(device);
  const tuning::AttentionTuning& t = tuned.attention;
  const bool rowOps = device.features().coopMatrixNv2RowOps && t.rowOps.value;
  const CoopDeviceInfo d = coopDeviceInfo(device);
  auto p = codegen::attentionCoopParams(pass, headDim, causal, device.limits().maxComputeSharedMemorySize,
                                        rowOps, {d.coopM, d.coopN, d.coopK, d.subgroupSize, d.lowered});
  // The pass's tuned entry, then the global fields (tile and subgroups on row-op passes only). A choice that
  // does not fit the shared memory is left out; a global one out of range is an error (validate()), a tuned
  // entry that does not validate here is left out.
  const auto apply = [&](std::optional<uint32_t> tile, std::optional<uint32_t> subgroups, bool strict) {
    auto q = p;
    q.tile = tile.value_or(q.tile);
    q.subgroups = subgroups.value_or(q.subgroups);
    if (q.sharedBytes() > q.maxSharedBytes) return;
    try {
      q.validate();
    } catch (const std::invalid_argument&) {
      if (strict) throw;
      return;
    }
    p = q;
  };
  if (const tuning::AttentionChoice* c = tuning::findAttention(tuned, passId(pass), headDim, causal)) {
    apply(c->tile, c->subgroups, false);
    if (c->prefetch) p.prefetch = *c->prefetch;
    if (c->pad) p.pad = *c->pad;
  }
  if (p.rowOps) apply(t.tile.value, t.subgroups.value, true);
  if (!t.prefetch.value) p.prefetch = false;
  if (!t.pad.value) p.pad = 0;
  return p;
}

codegen::AttentionCoopParams attentionCoopFor(const vk::Device& device, AttentionPass pass,
                                              const AttentionShape& s) {
  auto p = attentionCoopPass(device, pass, s.headDim, s.causal);
  p.operands = s.half;
  p.qkv = s.halfQkv ? s.half : codegen::Elem::F32;
  p.out = s.halfOut ? s.half : codegen::Elem::F32;
  if (s.documents()) maskDocuments(p);
  if (pass != AttentionPass::KeyValueGrad)
    splitKeys(device, p, s);
  else
    chooseDelta(device, p);
  return p;
}

bool attentionRecomputeDelta(tuning::DeltaMode mode) {
  return mode != tuning::DeltaMode::Read;
}

std::vector<KeySplitLayout> keySplitLayouts(AttentionPass pass, uint32_t splits, bool forced,
                                            uint32_t subgroups, uint32_t tile) {
  std::vector<KeySplitLayout> out;
  if (!forced && pass == AttentionPass::Forward && subgroups >= 2 && splits == 2)
    out.push_back({4, subgroups / 2, std::min(tile, 32u)});
  out.push_back({splits, subgroups, tile});
  if (tile == 64) out.push_back({splits, subgroups, 32});
  return out;
}

uint32_t attentionKeySplits(std::optional<uint32_t> forced, uint64_t workgroups, uint64_t fill, uint32_t keys,
                            uint32_t tile) {
  if (forced) return *forced;
  return workgroups < fill && keys >= 2 * tile ? 2 : 1;
}

tuning::AttentionPassId passId(AttentionPass pass) {
  switch (pass) {
  case AttentionPass::Forward:
    return tuning::AttentionPassId::Forward;
  case AttentionPass::QueryGrad:
    return tuning::AttentionPassId::QueryGrad;
  case AttentionPass::KeyValueGrad:
    return tuning::AttentionPassId::KeyValueGrad;
  }
  throw std::logic_error("passId: unknown attention pass");
}

bool attentionCoopAvailable(const vk::Device& device, uint32_t headDim, codegen::Elem half) {
  const CoopDeviceInfo d = coopDeviceInfo(device);
  return d.coopMatrix && (half != codegen::Elem::BF16 || d.bf16) &&
         codegen::attentionCoopSupports({d.coopM, d.coopN, d.coopK, d.subgroupSize}) && headDim % 16 == 0 &&
         headDim && headDim <= std::min(128u, d.attentionMaxHeadDim);
}

void attentionForward(Executor& exec, vk::BufferRange q, vk::BufferRange k, vk::BufferRange v,
                      vk::BufferRange o, vk::BufferRange lse, const AttentionShape& s) {
  checkShape("attentionForward", s);
  const Spans n = checkLayouts("attentionForward", s);
  const codegen::Elem qkvType = s.halfQkv ? s.half : codegen::Elem::F32;
  for (const auto& [name, r, count] : {std::tuple{"q", q, n.q}, {"k", k, n.kv}, {"v", v, n.kv}})
    rows_detail::checkElemsOf("attentionForward", name, r, count, qkvType);
  rows_detail::checkElemsOf("attentionForward", "o", o, n.o, s.halfOut ? s.half : codegen::Elem::F32);
  checkElems("attentionForward", "lse", lse, uint64_t(s.batch) * s.heads * s.Tq);
  const bool coop = useCoop(exec, "attentionForward", s, {q, k, v, o});
  if (!s.batch || !s.Tq) return;
  if (!s.Tk) throw std::invalid_argument("attentionForward: Tk is 0 (no keys)");
  const Pass p = pass(exec, AttentionPass::Forward, s, coop);
  run(exec, p, coop,
      {{q, Access::Read}, {k, Access::Read}, {v, Access::Read}, {o, Access::Write}, {lse, Access::Write}}, s,
      s.Tq, s.heads);
}

void attentionBackward(Executor& exec, vk::BufferRange q, vk::BufferRange k, vk::BufferRange v,
                       vk::BufferRange o, vk::BufferRange lse, vk::BufferRange dO, vk::BufferRange dQ,
                       vk::BufferRange dK, vk::BufferRange dV, vk::BufferRange delta,
                       const AttentionShape& s) {
  checkShape("attentionBackward", s);
  const Spans n = checkLayouts("attentionBackward", s);
  const uint64_t rows = uint64_t(s.batch) * s.heads * s.Tq;
  const codegen::Elem qkvType = s.halfQkv ? s.half : codegen::Elem::F32;
  const codegen::Elem outType = s.halfOut ? s.half : codegen::Elem::F32;
  for (const auto& [name, r, count] : {std::tuple{"q", q, n.q}, {"k", k, n.kv}, {"v", v, n.kv}})
    rows_detail::checkElemsOf("attentionBackward", name, r, count, qkvType);
  for (const auto& [name, r, count] :
       {std::tuple{"o", o, n.o}, {"dQ", dQ, n.q}, {"dK", dK, n.kv}, {"dV", dV, n.kv}})
    rows_detail::checkElemsOf("attentionBackward", name, r, count, outType);
  checkElems("attentionBackward", "dO", dO, n.o);
  checkElems("attentionBackward", "lse", lse, rows);
  checkElems("attentionBackward", "delta", delta, rows);
  const bool coop = useCoop(exec, "attentionBackward", s, {q, k, v, o, dO, dQ, dK, dV});
  if (!s.batch || !s.Tq || !s.Tk) return;
  const Pass pq = pass(exec, AttentionPass::QueryGrad, s, coop);
  run(exec, pq, coop,
      {{q, Access::Read},
       {k, Access::Read},
       {v, Access::Read},
       {o, Access::Read},
       {dO, Access::Read},
       {lse, Access::Read},
       {dQ, Access::Write},
       {delta, Access::Write}},
      s, s.Tq, s.heads);
  const Pass pkv = pass(exec, AttentionPass::KeyValueGrad, s, coop);
  run(exec, pkv, coop,
      {{q, Access::Read},
       {k, Access::Read},
       {v, Access::Read},
       {dO, Access::Read},
       {lse, Access::Read},
       // Recomputing delta, the pass reads o instead, and nothing it binds is written by the dQ pass.
       {pkv.recomputesDelta ? o : delta, Access::Read},
       {dK, Access::Write},
       {dV, Access::Write}},
      s, s.Tk, s.kvHeads);
}

} // namespace helios::ops
