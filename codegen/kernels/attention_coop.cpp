// The coop attention family's parameters and registry; the passes are emitted by attention_coop_fwd.cpp and
// attention_coop_bwd.cpp on the shared scaffolding of attention_coop_emitter.hpp.
#include "codegen/kernels/attention_coop.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <stdexcept>

#include "codegen/kernels/attention_coop_emitter.hpp"
#include "codegen/kernels/gemm_coop.hpp"
#include "codegen/spirv/module.hpp"

namespace helios::codegen {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

} // namespace

uint32_t AttentionCoopParams::stagedVectors() const {
  // f16 rows: the owned rows, then two tiles over the same bytes (attention_coop_emitter.hpp's StagingAreas).
  // With key splits every group stages its own pair of tiles.
  const uint32_t streams = delta == DkvDelta::Recompute ? 3 : 2; // + O's tile
  const uint32_t rowVecs = headDim / 8 + pad;
  const uint32_t staged = rowVecs * std::max(rows(), streams * tile * keySplits);
  // The merge's f32 rows of coopN columns, padded by a vector (AttentionCoopEmitter::mergeChunk).
  return keySplits > 1 ? std::max(staged, allSubgroups() * coopM * (coopN / 4 + 1)) : staged;
}

uint32_t AttentionCoopParams::sharedBytes() const {
  // With key splits the forward's groups also trade each row's max and sum and publish its merge factor.
  const uint32_t merge = pass == AttentionPass::Forward ? 3 : 0;
  const uint32_t staged = 16 * stagedVectors() + (keySplits > 1 ? allSubgroups() * coopM * merge * 4 : 0);
  const uint32_t perRow = allSubgroups() * coopM * tile; // entries of each per-subgroup scratch
  if (rowOps) // only the 16 x 16 f32 trips of setup and finish (+ the tile's lse and delta for dK/dV)
    return staged + allSubgroups() * 256 * 4 + (pass == AttentionPass::KeyValueGrad ? 2 * tile * 4 : 0);
  switch (pass) {
  case AttentionPass::Forward:
    return staged + perRow * (4 + 2); // S (f32), P (f16)
  case AttentionPass::QueryGrad:
    return staged + perRow * (4 + 4 + 2); // S, dP, dS
  case AttentionPass::KeyValueGrad:
    return staged + perRow * (4 + 4 + 2 + 2) + 2 * tile * 4; // + P, lse, delta
  }
  return 0;
}

namespace {

bool isDefaultShape(const AttentionCoopParams& p) {
  return p.coopM == 16 && p.coopN == 16 && p.coopK == 16;
}

std::string shapeText(const AttentionCoopParams& p) {
  return std::to_string(p.coopM) + "x" + std::to_string(p.coopN) + "x" + std::to_string(p.coopK);
}

bool sideOk(uint32_t v) {
  return v == 8 || v == 16;
}

} // namespace

bool attentionCoopSupports(const CoopShape& s) {
  const uint32_t sg = s.subgroupSize;
  return sideOk(s.M) && sideOk(s.N) && sideOk(s.K) &&
         (sg == 4 || sg == 8 || sg == 16 || sg == 32 || sg == 64);
}

std::string AttentionCoopParams::cacheKey() const {
  return std::string("attention_coop:") + toString(pass) + ":d" + std::to_string(headDim) +
         (causal ? ":causal" : ":dense") + ":sg" + std::to_string(subgroups) + ":t" + std::to_string(tile) +
         (prefetch ? ":pf1" : ":pf0") + ":sgs" + std::to_string(subgroupSize) + ":smem" +
         std::to_string(maxSharedBytes) + (rowOps ? ":rowops" : "") + ":pad" + std::to_string(pad) +
         (isHalf(qkv) ? ":h16" : "") + (isHalf(out) ? ":o16" : "") +
         (keySplits > 1 ? ":ks" + std::to_string(keySplits) : "") +
         (delta == DkvDelta::Recompute ? ":rd" : "") +
         (isDefaultShape(*this) ? "" : ":c" + shapeText(*this)) + (lowered ? ":low" : "") +
         (operands == Elem::BF16 ? ":bf16" : "");
}

std::string AttentionCoopParams::name() const {
  return std::string("attention_coop_") + toString(pass) + (causal ? "_causal" : "") + "_d" +
         std::to_string(headDim) + "_sg" + std::to_string(subgroups) + "_t" + std::to_string(tile) +
         (prefetch ? "" : "_nopf") + (rowOps ? "_rowops" : "") + (pad ? "" : "_nopad") +
         (isHalf(qkv) ? "_h16" : "") + (isHalf(out) ? "_o16" : "") +
         (keySplits > 1 ? "_ks" + std::to_string(keySplits) : "") +
         (delta == DkvDelta::Recompute ? "_rd" : "") +
         (isDefaultShape(*this) ? "" : "_c" + shapeText(*this)) +
         (subgroupSize == 32 ? "" : "_w" + std::to_string(subgroupSize)) + (lowered ? "_low" : "") +
         (operands == Elem::BF16 ? "_bf16" : "");
}

void AttentionCoopParams::validate() const {
  const std::string me = name() + ": ";
  require(headDim && headDim % 16 == 0 && headDim <= 128,
          me + "headDim must be a multiple of 16, at most 128");
  require(isHalf(operands), me + "the coop operands are a 16-bit kind (f16 or bf16)");
  require((qkv == Elem::F32 || qkv == operands) && (out == Elem::F32 || out == operands),
          me + "q/k/v and the outputs are stored as f32 or as the operands' " + elemName(operands));
  require(attentionCoopSupports({coopM, coopN, coopK, subgroupSize}),
          me + "coop shape " + shapeText(*this) + " on " + std::to_string(subgroupSize) +
              "-wide subgroups: sides must be 8 or 16, subgroups 4, 8, 16, 32 or 64 lanes");
  if (rowOps) {
    require(tile == 32 || tile == 64 || tile == 128, me + "tile must be 32, 64 or 128");
    require(isDefaultShape(*this) && subgroupSize == 32,
            me + "the row-ops variant is for 16x16x16 on 32-wide subgroups (two lanes per row)");
  } else {
    require(tile == 32 || (tile == 64 && pass == AttentionPass::Forward) || (tile == 16 && lowered),
            me + "tile must be 32, or 64 for the forward (16 lowered)");
  }
  require(!lowered || !rowOps, me + "the coop lowering has no NV2 row operations");
  require(subgroups >= 1 && subgroups <= 8, me + "subgroups must be in [1, 8]");
  require(keySplits == 1 || keySplits == 2 || keySplits == 4, me + "keySplits must be 1, 2 or 4");
  require(keySplits == 1 || pass != AttentionPass::KeyValueGrad,
          me + "key splits are for the passes that walk keys (forward, dQ)");
  require(allSubgroups() <= 16, me + "subgroups * keySplits must be at most 16");
  require(delta == DkvDelta::Read || pass == AttentionPass::KeyValueGrad,
          me + "only the dK/dV pass recomputes delta");
  require(pad <= 1, me + "pad must be 0 or 1 (16-byte vectors per staged row)");
  require(sharedBytes() <= maxSharedBytes, me + "needs " + std::to_string(sharedBytes()) +
                                               " bytes of shared memory, device allows " +
                                               std::to_string(maxSharedBytes));
}

AttentionCoopParams loweredAttentionTiling(AttentionCoopParams p) {
  // Every coop operation of a step is emitted once per block, and each lowered one is a loop: 16-row tiles
  // halve the step's blocks and row loops, and with 2 subgroups the tile copies split over twice the lanes.
  p.tile = 16;
  p.subgroups = 2;
  if (p.sharedBytes() > p.maxSharedBytes) p.subgroups = 1;
  p.validate();
  return p;
}

AttentionCoopParams attentionCoopParams(AttentionPass pass, uint32_t headDim, bool causal,
                                        uint32_t maxSharedBytes, bool rowOps, const CoopShape& shape) {
  AttentionCoopParams p;
  p.pass = pass;
  p.coopM = shape.M, p.coopN = shape.N, p.coopK = shape.K;
  p.subgroupSize = shape.subgroupSize;
  p.lowered = shape.lowered;
  p.rowOps = rowOps && !p.lowered && isDefaultShape(p) && p.subgroupSize == 32;
  p.headDim = headDim;
  p.causal = causal;
  p.maxSharedBytes = maxSharedBytes;
  if (p.lowered) return loweredAttentionTiling(p);
  // Row ops at D > 64: 128 owned rows (8 subgroups), so each staged tile serves twice the rows, and 64-key
  // tiles; the forward without prefetch (its registers are full). The causal forward takes 64 owned rows (4
  // subgroups): half the rows per block on the diagonal, where blocks see few keys, and twice the blocks to
  // balance; the dense forward lost that way (2026-11-24-h100-attention-d128-subgroups.json).
  if (p.rowOps && headDim > 64) {
    p.tile = 64;
    p.subgroups = causal && pass == AttentionPass::Forward ? 4 : 8;
    p.prefetch = pass != AttentionPass::Forward;
    if (p.sharedBytes() <= maxSharedBytes) {
      p.validate();
      return p;
    }
  }
  // The forward takes 64 keys per step where four subgroups still fit (half the barriers and O checks per
  // key); everything else 32, with the most subgroups that fit.
  if (pass == AttentionPass::Forward || p.rowOps) {
    p.tile = 64;
    p.subgroups = 4;
    if (p.sharedBytes() <= maxSharedBytes) {
      p.validate();
      return p;
    }
    p.tile = 32;
  }
  for (uint32_t sg : {4u, 2u, 1u}) {
    p.subgroups = sg;
    if (p.sharedBytes() <= maxSharedBytes) break;
  }
  p.validate();
  return p;
}

Kernel generateAttentionCoop(const AttentionCoopParams& p) {
  p.validate();
  Kernel k;
  k.name = p.name();
  k.cacheKey = p.cacheKey();
  switch (p.pass) {
  case AttentionPass::Forward:
    k.spirv = p.rowOps ? detail::emitAttentionCoopForwardRowOps(p, k.pushConstantBytes)
                       : detail::emitAttentionCoopForward(p, k.pushConstantBytes);
    k.numBuffers = 5;
    break;
  case AttentionPass::QueryGrad:
    k.spirv = detail::emitAttentionCoopQueryGrad(p, k.pushConstantBytes);
    k.numBuffers = 8;
    break;
  case AttentionPass::KeyValueGrad:
    k.spirv = detail::emitAttentionCoopKeyValueGrad(p, k.pushConstantBytes);
    k.numBuffers = 8;
    break;
  }
  k.localSize = {p.invocations(), 1, 1};
  k.requiredSubgroupSize = p.subgroupSize;
  return k;
}

namespace {

// The key splits of `p` (2 and 4 ways, at its tile or 32-key tiles) that fit, for the passes that walk keys;
// the dK/dV pass recomputing delta instead (where it fits).
void addKeySplits(const std::function<void(const AttentionCoopParams&)>& add, const AttentionCoopParams& p) {
  if (p.pass == AttentionPass::KeyValueGrad) {
    AttentionCoopParams q = p;
    q.delta = DkvDelta::Recompute;
    if (q.sharedBytes() <= q.maxSharedBytes) add(q);
    return;
  }
  for (uint32_t splits : {2u, 4u}) {
    AttentionCoopParams q = p;
    q.keySplits = splits;
    if (q.sharedBytes() > q.maxSharedBytes && q.tile == 64) q.tile = 32;
    if (q.allSubgroups() <= 16 && q.sharedBytes() <= q.maxSharedBytes) add(q);
  }
}

// Every coop shape and subgroup size of the GEMM's sweep but the H100's (swept in full above): each pass at
// D = 16, 64 and 128, dense and causal, with its chosen tiling; causal also with 32-key forward tiles, f16
// q/k/v and outputs, one subgroup, and unpadded staging at D = 64.
void addOtherShapes(const std::function<void(const AttentionCoopParams&)>& add) {
  for (const auto& [cm, cn, ck] : coopSweepShapes())
    for (const uint32_t sg : coopSweepSubgroupSizes()) {
      if (cm == 16 && cn == 16 && ck == 16 && sg == 32) continue;
      for (AttentionPass pass :
           {AttentionPass::Forward, AttentionPass::QueryGrad, AttentionPass::KeyValueGrad})
        for (uint32_t d : {16u, 64u, 128u})
          for (bool causal : {false, true}) {
            AttentionCoopParams p = attentionCoopParams(pass, d, causal, 49152, false, {cm, cn, ck, sg});
            add(p);
            addKeySplits(add, p);
            if (sg == 8) { // lavapipe's subgroup size: the lowered pass too
              const auto lowered = attentionCoopParams(pass, d, causal, 32768, false, {cm, cn, ck, sg, true});
              add(lowered);
              addKeySplits(add, lowered);
            }
            if (!causal) continue;
            if (p.tile == 64) {
              AttentionCoopParams t32 = p;
              t32.tile = 32;
              add(t32);
            }
            AttentionCoopParams half = p;
            half.qkv = half.out = half.operands;
            add(half);
            AttentionCoopParams one = p;
            one.subgroups = 1;
            add(one);
            if (d == 64) {
              AttentionCoopParams unpadded = p;
              unpadded.pad = 0;
              add(unpadded);
            }
          }
    }
}

// bf16 operands: each pass at D = 16, 64 and 128, dense and causal, on f32 and on bf16 q/k/v and outputs,
// with key splits; the NV2 row-ops variant on bf16 in and out; lowered at lavapipe's 8 lanes; each other
// shape's passes at D = 64, causal, bf16 in and out.
void addBF16(const std::function<void(const AttentionCoopParams&)>& add) {
  const auto bf16 = [](AttentionCoopParams p, bool storage) {
    p.operands = Elem::BF16;
    if (storage) p.qkv = p.out = Elem::BF16;
    return p;
  };
  for (AttentionPass pass : {AttentionPass::Forward, AttentionPass::QueryGrad, AttentionPass::KeyValueGrad})
    for (uint32_t d : {16u, 64u, 128u})
      for (bool causal : {false, true}) {
        for (bool storage : {false, true}) {
          const AttentionCoopParams p = bf16(attentionCoopParams(pass, d, causal), storage);
          add(p);
          addKeySplits(add, p);
        }
        add(bf16(attentionCoopParams(pass, d, causal, 49152, true), true));
        const AttentionCoopParams low =
            attentionCoopParams(pass, d, causal, 32768, false, {16, 16, 16, 8, true});
        add(bf16(low, false));
        add(bf16(low, true));
        for (const auto& [cm, cn, ck] : coopSweepShapes())
          for (const uint32_t sg : coopSweepSubgroupSizes())
            if (d == 64 && causal)
              add(bf16(attentionCoopParams(pass, d, causal, 49152, false, {cm, cn, ck, sg}), true));
      }
}

} // namespace

void registerAttentionCoop(KernelRegistry& registry) {
  registry.add(
      {"attention.coop",
       "fused attention on cooperative matrices (KHR f16 or bf16 -> f32 at the device's shape and subgroup "
       "size): forward, dQ, dK/dV; causal or dense",
       [] { return generateAttentionCoop(attentionCoopParams(AttentionPass::Forward, 64, true)); },
       [] {
         std::vector<Kernel> ks;
         std::set<std::string> seen;
         const auto add = [&](const AttentionCoopParams& p) {
           if (seen.insert(p.cacheKey()).second) ks.push_back(generateAttentionCoop(p));
         };
         for (AttentionPass pass :
              {AttentionPass::Forward, AttentionPass::QueryGrad, AttentionPass::KeyValueGrad})
           for (uint32_t d : {16u, 64u, 128u})
             for (bool causal : {false, true}) {
               AttentionCoopParams p = attentionCoopParams(pass, d, causal);
               add(p);
               addKeySplits(add, p);
               if (p.tile == 64) { // the 32-key forward too
                 AttentionCoopParams t32 = p;
                 t32.tile = 32;
                 add(t32);
               }
               // The NV2 row-ops variant: 4 and 8 subgroups at every tile that fits, and on f16 q, k, v.
               AttentionCoopParams r = attentionCoopParams(pass, d, causal, 49152, true);
               for (uint32_t sg : {4u, 8u})
                 for (uint32_t tile : {32u, 64u, 128u}) {
                   AttentionCoopParams t = r;
                   t.subgroups = sg;
                   t.tile = tile;
                   if (t.sharedBytes() <= t.maxSharedBytes) add(t);
                 }
               addKeySplits(add, r);
               r.qkv = Elem::F16;
               add(r);
               r.out = Elem::F16; // the model's packed layout: f16 in and out
               add(r);
               addKeySplits(add, r);
               r.qkv = Elem::F32;
               add(r);
               AttentionCoopParams khr16 = p; // the KHR passes on f16 q, k, v
               khr16.qkv = Elem::F16;
               add(khr16);
               AttentionCoopParams unpadded = p;
               unpadded.pad = 0;
               add(unpadded);
               p.subgroups = 1;
               add(p);
               p.prefetch = false;
               add(p);
             }
         addOtherShapes(add);
         addBF16(add);
         return ks;
       }});
}

} // namespace helios::codegen
