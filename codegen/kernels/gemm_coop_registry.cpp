// The KHR coop GEMM's tiling menu (measured order), its default, and the registry's sweep over every tiling
// and variant, KHR and NV coopmat2 (gemm_coop.cpp and gemm_coop_nv2.cpp emit the kernels).
#include "codegen/kernels/gemm_coop.hpp"
#include "codegen/kernels/gemm_coop_nv2.hpp"

#include <array>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace helios::codegen {

std::vector<GemmCoopParams> gemmCoopTilings(uint32_t coopM, uint32_t coopN, uint32_t coopK,
                                            uint32_t maxSharedBytes, uint32_t subgroupSize) {
  const CoopTile menu[] = {
      // Measured on the H100 (580 driver, 4096^3): 128x128x64 single-stage first (309-322 TFLOP/s), then the
      // 8-subgroup 64x64-per-subgroup tiles, then the double-buffered ones (their prefetch registers spill).
      {128, 128, 64, 2, 2, 1},
      {128, 256, 32, 2, 4, 1},
      {256, 128, 32, 4, 2, 1},
      {128, 128, 32, 2, 2, 2},
      {128, 256, 16, 2, 4, 2},
      {256, 128, 16, 4, 2, 2},
      {128, 128, 32, 2, 2, 1},
      {128, 128, 16, 2, 2, 2},
      {128, 128, 32, 2, 4, 2},
      {128, 128, 32, 4, 2, 2},
      {128, 64, 32, 2, 2, 2},
      {64, 128, 32, 2, 2, 2},
      // Small subgroup tiles (32x32 down to 8x16 f32 accumulators) for the budgets of matmul_policy.cpp's
      // coopRegisterPlan (Intel's per-subgroup register file).
      {128, 128, 32, 4, 4, 1},
      {128, 128, 32, 4, 4, 2},
      {128, 128, 32, 8, 4, 1},
      {128, 128, 32, 8, 4, 2},
      {64, 64, 64, 4, 2, 1},
      {64, 64, 64, 4, 4, 1},
      {64, 64, 64, 4, 4, 2},
      {64, 64, 32, 4, 2, 1},
      {32, 64, 128, 4, 4, 1},
      {64, 64, 64, 2, 2, 2},
      {64, 64, 32, 2, 2, 2},
      {64, 64, 32, 1, 2, 2},
      // Small tiles, few accumulators per subgroup: for narrow coop shapes (8x8x16 holds a quarter of
      // 16x16x16's products per matrix) and devices with smaller register files or shared memory.
      {64, 32, 32, 2, 1, 2},
      {32, 64, 32, 1, 2, 2},
      {32, 32, 32, 1, 1, 2},
      {32, 32, 32, 2, 2, 1},
  };
  std::vector<GemmCoopParams> out;
  for (const CoopTile& t : menu) {
    GemmCoopParams p;
    p.coopM = coopM;
    p.coopN = coopN;
    p.coopK = coopK;
    p.setTiling(t);
    p.maxSharedBytes = maxSharedBytes;
    p.subgroupSize = subgroupSize;
    try {
      p.validate();
      out.push_back(p);
    } catch (const std::invalid_argument&) {
    }
  }
  return out;
}

GemmCoopParams gemmCoopDefault(uint32_t coopM, uint32_t coopN, uint32_t coopK, uint32_t maxSharedBytes,
                               uint32_t subgroupSize) {
  const auto t = gemmCoopTilings(coopM, coopN, coopK, maxSharedBytes, subgroupSize);
  if (t.empty()) throw std::invalid_argument("gemm_coop: no tiling fits this device");
  return t.front();
}

std::vector<std::array<uint32_t, 3>> coopSweepShapes() {
  return {{16, 16, 16}, {16, 8, 16}, {16, 8, 8}, {8, 8, 16}, {8, 16, 16}};
}

std::vector<uint32_t> coopSweepSubgroupSizes() {
  return {8, 16, 32, 64};
}

namespace {

// Every sweep shape and subgroup size but the H100's (16x16x16 on 32 lanes, swept in full): each tiling of
// its menu plain and with the heaviest epilogue on TN, and on its smallest tiling the staged store, the
// bounded kernels (scalar copies crosswise, vector copies edge-shifted), K slices and a copy subgroup.
void addOtherShapes(const std::function<void(const GemmCoopParams&)>& add) {
  const auto tryAdd = [&](const GemmCoopParams& p) {
    try {
      p.validate();
    } catch (const std::invalid_argument&) {
      return;
    }
    add(p);
  };
  for (const auto& [cm, cn, ck] : coopSweepShapes())
    for (const uint32_t sg : coopSweepSubgroupSizes()) {
      if (cm == 16 && cn == 16 && ck == 16 && sg == 32) continue;
      const auto menu = gemmCoopTilings(cm, cn, ck, 49152, sg);
      if (menu.empty()) throw std::logic_error("gemm_coop: no tiling for a sweep shape");
      for (GemmCoopParams p : menu) {
        add(p);
        p.transA = p.batched = p.alphaBeta = p.bias = p.gelu = true;
        add(p);
      }
      GemmCoopParams small = menu.back();
      small.stagedStore = true;
      tryAdd(small);
      small.stagedStore = false;
      small.bounded = small.crosswiseA = small.crosswiseB = true;
      tryAdd(small);
      small.transB = small.alphaBeta = small.bias = small.gelu = true;
      small.storedC = small.operands;
      tryAdd(small);
      small = menu.back();
      small.bounded = small.boundedVectors = small.edgeShift = small.stagedStore = true;
      tryAdd(small);
      small = menu.back();
      small.kSlices = 2;
      tryAdd(small);
      small = menu.back();
      small.producers = 1;
      tryAdd(small);
    }
}

// f32 operands rounded to `base`'s operand type while staged: A, B and both, on every layout.
void addStagedRounding(const GemmCoopParams& base, const std::function<void(const GemmCoopParams&)>& add) {
  for (uint32_t bits = 1; bits < 16; ++bits) {
    if ((bits & 3) == 0) continue;
    GemmCoopParams p = base;
    p.storedA = bits & 1 ? Elem::F32 : p.operands;
    p.storedB = bits & 2 ? Elem::F32 : p.operands;
    p.transA = bits & 4;
    p.transB = bits & 8;
    add(p);
  }
}

// bf16 operands (bf16 x bf16 -> f32, VK_KHR_shader_bfloat16): every variant on the default tiling, with the
// staged store and in K slices; f32 operands rounded to bf16; the bounded kernels (scalar copies crosswise,
// vector copies edge-shifted with the staged store); copy subgroups; each other shape's smallest tiling.
void addBF16Sweep(const std::function<void(const GemmCoopParams&)>& add,
                  const std::function<void(const GemmCoopParams&)>& addVariants) {
  const auto bf16 = [](GemmCoopParams p) {
    p.operands = p.storedA = p.storedB = Elem::BF16;
    return p;
  };
  const GemmCoopParams base = bf16(gemmCoopDefault());
  addVariants(base);
  GemmCoopParams p = base;
  p.stagedStore = true;
  addVariants(p);
  p = base;
  p.kSlices = 2;
  addVariants(p);
  addStagedRounding(base, add);
  for (GemmCoopParams t : gemmCoopTilings())
    if (t.BM == 64 && t.BN == 64 && t.BK == 32 && t.sgRows == 2) {
      t = bf16(t);
      t.bounded = t.crosswiseA = t.crosswiseB = true;
      addVariants(t);
      break;
    }
  p = base;
  p.bounded = p.boundedVectors = p.edgeShift = p.stagedStore = true;
  addVariants(p);
  p = bf16(gemmCoopTilings()[3]);
  p.producers = 4;
  add(p);
  for (const auto& [cm, cn, ck] : coopSweepShapes())
    for (const uint32_t sg : coopSweepSubgroupSizes()) {
      const auto menu = gemmCoopTilings(cm, cn, ck, 49152, sg);
      if (menu.empty()) continue;
      GemmCoopParams small = bf16(menu.back());
      add(small);
      small.transA = small.batched = small.alphaBeta = small.bias = small.gelu = true;
      small.storedC = Elem::BF16;
      add(small);
    }
}

} // namespace

std::vector<GemmCoopParams> gemmCoopSweep() {
  std::vector<GemmCoopParams> ks;
  std::set<std::string> seen;
  const auto add = [&](const GemmCoopParams& p) {
    if (seen.insert(p.cacheKey()).second) ks.push_back(p);
  };
  // Every tiling, plain NN and the heaviest epilogue on TN.
  for (GemmCoopParams p : gemmCoopTilings()) {
    add(p);
    p.transA = true;
    p.batched = p.alphaBeta = p.bias = p.gelu = true;
    add(p);
  }
  // Every variant on two tilings (the single-stage default and a double-buffered one): every
  // combination of layouts, f16 output, batching and the epilogue on one tiling.
  const auto addVariants = [&](const GemmCoopParams& base) {
    for (uint32_t bits = 0; bits < 128; ++bits) {
      GemmCoopParams p = base;
      p.transA = bits & 1;
      p.transB = bits & 2;
      p.storedC = bits & 4 ? p.operands : Elem::F32;
      p.batched = bits & 8;
      p.alphaBeta = bits & 16;
      p.bias = bits & 32;
      p.gelu = bits & 64;
      if (p.stagedStore && p.alphaBeta && !p.bounded) continue; // the staged store has no alpha/beta
      if (p.kSlices > 1 && p.batched) continue;                 // K slices are not batched
      add(p);
    }
  };
  GemmCoopParams staged = gemmCoopDefault(); // and with the staged C store
  staged.stagedStore = true;
  for (const GemmCoopParams& base : {gemmCoopDefault(), gemmCoopTilings()[3], staged})
    addVariants(base);
  // The other coop shapes the H100 lists, a swizzled raster, unpadded shared rows.
  for (auto [cm, cn, ck] : {std::array<uint32_t, 3>{16, 8, 16}, {16, 8, 8}}) {
    GemmCoopParams p = gemmCoopDefault(cm, cn, ck);
    add(p);
    p.transB = p.alphaBeta = p.bias = p.gelu = true;
    p.storedC = p.operands;
    add(p);
  }
  // f32 operands rounded while staged: each side and both, on every layout, single and double
  // buffered.
  for (const GemmCoopParams& base : {gemmCoopDefault(), gemmCoopTilings()[3]})
    addStagedRounding(base, add);
  // Bounded (any shape) on the 64x64 double-buffered tiling: every variant with scalar copies (along
  // rows and crosswise), whole and in 2 K slices (4 and 16 on the plain NN), and every variant with
  // vector copies (2 slices on NN). K slices on the default tiling: every unbatched variant in 2. The
  // heaviest epilogue on the default.
  for (GemmCoopParams p : gemmCoopTilings())
    if (p.BM == 64 && p.BN == 64 && p.BK == 32 && p.sgRows == 2) {
      p.bounded = true;
      for (bool crosswise : {false, true}) {
        p.crosswiseA = p.crosswiseB = crosswise;
        addVariants(p);
        p.kSlices = 2;
        addVariants(p);
        for (uint32_t slices : {4u, 16u}) {
          p.kSlices = slices;
          add(p);
        }
        p.kSlices = 1;
      }
      p.crosswiseA = p.crosswiseB = false;
      // 8 subgroups on the same tile (grids under a wave): plain, crosswise, the heaviest epilogue on
      // TN, vector copies.
      GemmCoopParams eight = p;
      eight.sgRows = 4;
      add(eight);
      eight.crosswiseA = eight.crosswiseB = true;
      add(eight);
      eight.transA = eight.alphaBeta = eight.bias = eight.gelu = true;
      eight.storedC = eight.operands;
      add(eight);
      // Edge-shifted scalar copies: every variant crosswise on 8 subgroups, and along rows.
      GemmCoopParams shifted = p;
      shifted.sgRows = 4;
      shifted.crosswiseA = shifted.crosswiseB = shifted.edgeShift = true;
      addVariants(shifted);
      shifted.crosswiseA = shifted.crosswiseB = false;
      add(shifted);
      eight.crosswiseA = eight.crosswiseB = false;
      eight.boundedVectors = true;
      add(eight);
      p.boundedVectors = true;
      addVariants(p);
      p.kSlices = 2;
      add(p);
      break;
    }
  GemmCoopParams sliced = gemmCoopDefault();
  sliced.kSlices = 2;
  addVariants(sliced);
  // K slices on the 64x64 tile with K steps of 64 (aligned problems with few tiles); its bounded
  // variants with vector copies (unaligned problems whose sizes are multiples of 8): every variant,
  // 2 K slices on NN, 8 subgroups on NN.
  for (GemmCoopParams p : gemmCoopTilings())
    if (p.BM == 64 && p.BN == 64 && p.BK == 64) {
      GemmCoopParams vectors = p;
      p.kSlices = 8;
      add(p);
      p.transA = p.alphaBeta = p.bias = p.gelu = true;
      p.storedC = p.operands;
      add(p);
      vectors.bounded = vectors.boundedVectors = true;
      addVariants(vectors);
      vectors.kSlices = 2;
      add(vectors);
      vectors.kSlices = 1;
      vectors.sgRows = 4;
      add(vectors);
      break;
    }
  // The staged f16 store with bias on row vectors (ANV's coop kernels), NN and NT.
  GemmCoopParams bov = gemmCoopDefault();
  bov.bias = bov.gelu = bov.stagedStore = bov.biasOnVectors = true;
  bov.storedC = bov.operands;
  add(bov);
  bov.transB = true;
  add(bov);
  GemmCoopParams bd = gemmCoopDefault();
  bd.bounded = true;
  add(bd);
  bd.transA = bd.alphaBeta = bd.bias = bd.gelu = true;
  bd.storedC = bd.operands;
  add(bd);
  for (auto [xa, xb] : {std::pair{true, false}, {false, true}, {true, true}}) {
    bd.crosswiseA = xa, bd.crosswiseB = xb;
    add(bd);
  }
  bd.crosswiseA = bd.crosswiseB = false;
  bd.boundedVectors = true;
  add(bd);
  // Edge-shifted tiles (the bounded vector kernel's checks on the first K step only) and C stored as
  // row vectors: every variant on the single-stage default with both, and on 64x64x64 double-buffered
  // with each.
  bd = gemmCoopDefault();
  bd.bounded = bd.boundedVectors = bd.edgeShift = bd.stagedStore = true;
  addVariants(bd);
  for (GemmCoopParams p : gemmCoopTilings())
    if (p.BM == 64 && p.BN == 64 && p.BK == 64) {
      p.bounded = p.boundedVectors = p.edgeShift = true;
      addVariants(p);
      p.edgeShift = false;
      p.stagedStore = true;
      addVariants(p);
      break;
    }
  // Copy subgroups (warp specialisation): 1, 2 and 4 of them beside 4 or 8 computing subgroups, and
  // every variant on one.
  for (auto [bk, cols, ws] : {std::array<uint32_t, 3>{32, 2, 4}, {32, 2, 1}, {16, 4, 2}}) {
    GemmCoopParams p = gemmCoopTilings()[3]; // 128x128, double-buffered
    p.BK = bk;
    p.sgCols = cols;
    p.producers = ws;
    if (ws == 4) addVariants(p);
    add(p);
  }
  addOtherShapes(add);
  GemmCoopParams g = gemmCoopDefault();
  g.groupM = 8;
  add(g);
  g.padA = g.padB = 0;
  add(g);
  // Workgroup scope (NV coopmat2): every tiling the H100 list allows, then every variant on
  // the default 128x128x32 (both load kinds) and a swizzled raster.
  const auto wg = gemmCoopWorkgroupTilings(h100WorkgroupCoopShapes());
  for (const GemmCoopParams& p : wg)
    add(p);
  addVariants(wg[0]); // tensor-layout loads
  addVariants(wg[1]); // pointer loads
  GemmCoopParams r = wg.front();
  r.groupM = 8;
  add(r);
  addBF16Sweep(add, addVariants);
  return ks;
}

void registerGemmCoop(KernelRegistry& registry) {
  registry.add({"gemm.coop",
                "cooperative-matrix GEMM f16 x f16 or bf16 x bf16 -> f32: KHR subgroup scope, shared-memory "
                "staged; NV coopmat2 workgroup scope (f16)",
                [] { return generateGemmCoop(gemmCoopDefault()); },
                [] {
                  std::vector<Kernel> ks;
                  for (const GemmCoopParams& p : gemmCoopSweep())
                    ks.push_back(generateGemmCoop(p));
                  return ks;
                }});
}

} // namespace helios::codegen
