#include "engine/ops/attention.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "codegen/kernels/attention.hpp"
#include "codegen/kernels/attention_coop.hpp"
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
}

codegen::AttentionPush push(const AttentionShape& s) {
  return {s.Tq, s.Tk, s.heads, s.kvHeads, s.scale};
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
  const bool ok = aligned && attentionCoopAvailable(exec.context().device(), s.headDim);
  if (!ok && (s.kernel == AttentionKernel::Coop || s.halfQkv))
    throw std::invalid_argument(
        std::string(op) +
        ": the coop kernels need 16x16x16 f16 cooperative matrices on 32-wide subgroups, a "
        "head dim that is a multiple of 16 up to 128 (got " +
        std::to_string(s.headDim) + ") and 16-byte aligned ranges" + (aligned ? "" : " (a range is not)") +
        (s.halfQkv ? "; f16 q/k/v are read by the coop kernels only" : ""));
  return ok;
}

bool envIs(const char* name, const char* value) {
  const char* e = std::getenv(name);
  return e && std::string(e) == value;
}

// A whole number from the environment, or `fallback` when unset; anything else is an error naming the
// variable.
uint32_t envU32(const char* name, uint32_t fallback) {
  const char* e = std::getenv(name);
  if (!e) return fallback;
  const std::string text(e);
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument(std::string(name) + "=" + text + ": expected a whole number");
  return static_cast<uint32_t>(std::stoul(text));
}

// The pipeline and grid of one pass, coop or fallback.
struct Pass {
  const vk::Pipeline* pipeline;
  uint32_t rowsPerGroup;
};

Pass pass(Executor& exec, AttentionPass which, const AttentionShape& s, bool coop) {
  if (coop) {
    auto p = attentionCoopPass(exec.context().device(), which, s.headDim, s.causal);
    p.halfQkv = s.halfQkv;
    return {&exec.pipeline(p, codegen::generateAttentionCoop), p.rows()};
  }
  const auto p = codegen::attentionParams(which, s.headDim, s.causal);
  return {&exec.pipeline(p, codegen::generateAttention), p.rowsPerGroup()};
}

uint32_t groups(uint32_t rows, const Pass& p) {
  return (rows + p.rowsPerGroup - 1) / p.rowsPerGroup;
}

} // namespace

codegen::AttentionCoopParams attentionCoopPass(const vk::Device& device, AttentionPass pass, uint32_t headDim,
                                               bool causal) {
  const bool rowOps = device.features().coopMatrixNv2RowOps && !envIs("HELIOS_ATTENTION_ROWOPS", "0");
  auto p =
      codegen::attentionCoopParams(pass, headDim, causal, device.limits().maxComputeSharedMemorySize, rowOps);
  if (p.rowOps) {
    auto q = p;
    q.tile = envU32("HELIOS_ATTENTION_TILE", q.tile);
    q.subgroups = envU32("HELIOS_ATTENTION_SUBGROUPS", q.subgroups);
    if (q.sharedBytes() <= q.maxSharedBytes) {
      q.validate(); // a tile or subgroup count out of range is an error
      p = q;
    }
  }
  if (envIs("HELIOS_ATTENTION_PREFETCH", "0")) p.prefetch = false;
  if (envIs("HELIOS_ATTENTION_PAD", "0")) p.pad = 0;
  return p;
}

bool attentionCoopAvailable(const vk::Device& device, uint32_t headDim) {
  const CoopDeviceInfo d = coopDeviceInfo(device);
  return d.coopMatrix && d.coopM == 16 && d.coopN == 16 && d.coopK == 16 && d.subgroupSize == 32 &&
         headDim % 16 == 0 && headDim && headDim <= 128;
}

void attentionForward(Executor& exec, vk::BufferRange q, vk::BufferRange k, vk::BufferRange v,
                      vk::BufferRange o, vk::BufferRange lse, const AttentionShape& s) {
  checkShape("attentionForward", s);
  const uint64_t qElems = uint64_t(s.batch) * s.heads * s.Tq * s.headDim,
                 kvElems = uint64_t(s.batch) * s.kvHeads * s.Tk * s.headDim;
  const auto checkQkv = s.halfQkv ? rows_detail::checkHalfElems : checkElems;
  checkQkv("attentionForward", "q", q, qElems);
  checkQkv("attentionForward", "k", k, kvElems);
  checkQkv("attentionForward", "v", v, kvElems);
  checkElems("attentionForward", "o", o, qElems);
  checkElems("attentionForward", "lse", lse, uint64_t(s.batch) * s.heads * s.Tq);
  const bool coop = useCoop(exec, "attentionForward", s, {q, k, v, o});
  if (!s.batch || !s.Tq) return;
  if (!s.Tk) throw std::invalid_argument("attentionForward: Tk is 0 (no keys)");
  const Pass p = pass(exec, AttentionPass::Forward, s, coop);
  exec.dispatch(
      *p.pipeline,
      {{q, Access::Read}, {k, Access::Read}, {v, Access::Read}, {o, Access::Write}, {lse, Access::Write}},
      push(s), {groups(s.Tq, p), s.batch * s.heads, 1});
}

void attentionBackward(Executor& exec, vk::BufferRange q, vk::BufferRange k, vk::BufferRange v,
                       vk::BufferRange o, vk::BufferRange lse, vk::BufferRange dO, vk::BufferRange dQ,
                       vk::BufferRange dK, vk::BufferRange dV, vk::BufferRange delta,
                       const AttentionShape& s) {
  checkShape("attentionBackward", s);
  const uint64_t qElems = uint64_t(s.batch) * s.heads * s.Tq * s.headDim,
                 kvElems = uint64_t(s.batch) * s.kvHeads * s.Tk * s.headDim,
                 rows = uint64_t(s.batch) * s.heads * s.Tq;
  const auto checkQkv = s.halfQkv ? rows_detail::checkHalfElems : checkElems;
  checkQkv("attentionBackward", "q", q, qElems);
  checkQkv("attentionBackward", "k", k, kvElems);
  checkQkv("attentionBackward", "v", v, kvElems);
  for (auto [name, r, n] : {std::tuple{"o", o, qElems},
                            {"dO", dO, qElems},
                            {"dQ", dQ, qElems},
                            {"dK", dK, kvElems},
                            {"dV", dV, kvElems},
                            {"lse", lse, rows},
                            {"delta", delta, rows}})
    checkElems("attentionBackward", name, r, n);
  const bool coop = useCoop(exec, "attentionBackward", s, {q, k, v, o, dO, dQ, dK, dV});
  if (!s.batch || !s.Tq || !s.Tk) return;
  const Pass pq = pass(exec, AttentionPass::QueryGrad, s, coop);
  exec.dispatch(*pq.pipeline,
                {{q, Access::Read},
                 {k, Access::Read},
                 {v, Access::Read},
                 {o, Access::Read},
                 {dO, Access::Read},
                 {lse, Access::Read},
                 {dQ, Access::Write},
                 {delta, Access::Write}},
                push(s), {groups(s.Tq, pq), s.batch * s.heads, 1});
  const Pass pkv = pass(exec, AttentionPass::KeyValueGrad, s, coop);
  exec.dispatch(*pkv.pipeline,
                {{q, Access::Read},
                 {k, Access::Read},
                 {v, Access::Read},
                 {dO, Access::Read},
                 {lse, Access::Read},
                 {delta, Access::Read},
                 {dK, Access::Write},
                 {dV, Access::Write}},
                push(s), {groups(s.Tk, pkv), s.batch * s.kvHeads, 1});
}

} // namespace helios::ops
