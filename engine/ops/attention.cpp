#include "engine/ops/attention.hpp"

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

uint32_t blocks(uint32_t rows, const codegen::AttentionParams& p) {
  return (rows + p.rowsPerGroup() - 1) / p.rowsPerGroup();
}

} // namespace

void attentionForward(Executor& exec, vk::BufferRange q, vk::BufferRange k, vk::BufferRange v,
                      vk::BufferRange o, vk::BufferRange lse, const AttentionShape& s) {
  checkShape("attentionForward", s);
  const uint64_t qElems = uint64_t(s.batch) * s.heads * s.Tq * s.headDim,
                 kvElems = uint64_t(s.batch) * s.kvHeads * s.Tk * s.headDim;
  checkElems("attentionForward", "q", q, qElems);
  checkElems("attentionForward", "k", k, kvElems);
  checkElems("attentionForward", "v", v, kvElems);
  checkElems("attentionForward", "o", o, qElems);
  checkElems("attentionForward", "lse", lse, uint64_t(s.batch) * s.heads * s.Tq);
  if (!s.batch || !s.Tq) return;
  if (!s.Tk) throw std::invalid_argument("attentionForward: Tk is 0 (no keys)");
  const auto p = codegen::attentionParams(AttentionPass::Forward, s.headDim, s.causal);
  exec.dispatch(
      exec.pipeline(p, codegen::generateAttention),
      {{q, Access::Read}, {k, Access::Read}, {v, Access::Read}, {o, Access::Write}, {lse, Access::Write}},
      push(s), {blocks(s.Tq, p), s.batch * s.heads, 1});
}

bool attentionCoopAvailable(const vk::Device& device, uint32_t headDim) {
  const CoopDeviceInfo d = coopDeviceInfo(device);
  return d.coopMatrix && d.coopM == 16 && d.coopN == 16 && d.coopK == 16 && d.subgroupSize == 32 &&
         headDim % 16 == 0 && headDim && headDim <= 128;
}

void attentionForwardCoop(Executor& exec, vk::BufferRange q16, vk::BufferRange k16, vk::BufferRange v16,
                          vk::BufferRange o, vk::BufferRange lse, const AttentionShape& s) {
  checkShape("attentionForwardCoop", s);
  if (!attentionCoopAvailable(exec.context().device(), s.headDim))
    throw std::invalid_argument("attentionForwardCoop: needs 16x16x16 f16 cooperative matrices on 32-wide "
                                "subgroups and a head dim that is a multiple of 16 up to 128 (got " +
                                std::to_string(s.headDim) + ")");
  const uint64_t qElems = uint64_t(s.batch) * s.heads * s.Tq * s.headDim,
                 kvElems = uint64_t(s.batch) * s.kvHeads * s.Tk * s.headDim;
  for (auto [name, r, n] : {std::tuple{"q", q16, qElems * 2},
                            {"k", k16, kvElems * 2},
                            {"v", v16, kvElems * 2},
                            {"o", o, qElems * 4},
                            {"lse", lse, uint64_t(s.batch) * s.heads * s.Tq * 4}})
    if (r.size && r.size < n)
      throw std::invalid_argument("attentionForwardCoop: " + std::string(name) + " holds " +
                                  std::to_string(r.size) + " bytes, needs " + std::to_string(n));
  if ((q16.offset | k16.offset | v16.offset) % 16)
    throw std::invalid_argument("attentionForwardCoop: q, k and v must start 16-byte aligned");
  if (!s.batch || !s.Tq) return;
  if (!s.Tk) throw std::invalid_argument("attentionForwardCoop: Tk is 0 (no keys)");
  const auto p = codegen::attentionCoopParams(s.headDim, s.causal,
                                              exec.context().device().limits().maxComputeSharedMemorySize);
  exec.dispatch(exec.pipeline(p, codegen::generateAttentionCoop),
                {{q16, Access::Read},
                 {k16, Access::Read},
                 {v16, Access::Read},
                 {o, Access::Write},
                 {lse, Access::Write}},
                push(s), {(s.Tq + p.rows() - 1) / p.rows(), s.batch * s.heads, 1});
}

void attentionBackward(Executor& exec, vk::BufferRange q, vk::BufferRange k, vk::BufferRange v,
                       vk::BufferRange o, vk::BufferRange lse, vk::BufferRange dO, vk::BufferRange dQ,
                       vk::BufferRange dK, vk::BufferRange dV, vk::BufferRange delta,
                       const AttentionShape& s) {
  checkShape("attentionBackward", s);
  const uint64_t qElems = uint64_t(s.batch) * s.heads * s.Tq * s.headDim,
                 kvElems = uint64_t(s.batch) * s.kvHeads * s.Tk * s.headDim,
                 rows = uint64_t(s.batch) * s.heads * s.Tq;
  for (auto [name, r, n] : {std::tuple{"q", q, qElems},
                            {"o", o, qElems},
                            {"dO", dO, qElems},
                            {"dQ", dQ, qElems},
                            {"k", k, kvElems},
                            {"v", v, kvElems},
                            {"dK", dK, kvElems},
                            {"dV", dV, kvElems},
                            {"lse", lse, rows},
                            {"delta", delta, rows}})
    checkElems("attentionBackward", name, r, n);
  if (!s.batch || !s.Tq || !s.Tk) return;
  const auto pq = codegen::attentionParams(AttentionPass::QueryGrad, s.headDim, s.causal);
  exec.dispatch(exec.pipeline(pq, codegen::generateAttention),
                {{q, Access::Read},
                 {k, Access::Read},
                 {v, Access::Read},
                 {o, Access::Read},
                 {dO, Access::Read},
                 {lse, Access::Read},
                 {dQ, Access::Write},
                 {delta, Access::Write}},
                push(s), {blocks(s.Tq, pq), s.batch * s.heads, 1});
  const auto pkv = codegen::attentionParams(AttentionPass::KeyValueGrad, s.headDim, s.causal);
  exec.dispatch(exec.pipeline(pkv, codegen::generateAttention),
                {{q, Access::Read},
                 {k, Access::Read},
                 {v, Access::Read},
                 {dO, Access::Read},
                 {lse, Access::Read},
                 {delta, Access::Read},
                 {dK, Access::Write},
                 {dV, Access::Write}},
                push(s), {blocks(s.Tk, pkv), s.batch * s.kvHeads, 1});
}

} // namespace helios::ops
