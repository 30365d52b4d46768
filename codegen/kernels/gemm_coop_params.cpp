// GemmCoopParams' derived sizes, cache key, name and validation, and the dispatch grid of a parameter set.
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "codegen/kernels/gemm_coop.hpp"
#include "codegen/kernels/gemm_coop_copies.hpp"
#include "codegen/spirv/module.hpp"

namespace helios::codegen {

namespace {

std::string str(uint32_t v) {
  return std::to_string(v);
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("gemm_coop: " + what);
}

} // namespace

uint32_t GemmCoopParams::sharedBytes() const {
  if (workgroupScope) return 0;
  return 16u * (coop::sharedAVecs(*this) + stages * coop::tileB(*this).stageVecs());
}

std::string GemmCoopParams::cacheKey() const {
  return "gemm_coop:c" + str(coopM) + "x" + str(coopN) + "x" + str(coopK) + ":t" + str(BM) + "x" + str(BN) +
         "x" + str(BK) + ":sg" + str(sgRows) + "x" + str(sgCols) + ":s" + str(stages) + ":p" + str(padA) +
         "," + str(padB) + ":tA" + str(transA) + ":tB" + str(transB) + ":b" + str(batched) + ":o16" +
         str(halfC()) + ":ab" + str(alphaBeta) + ":bias" + str(bias) + ":gelu" + str(gelu) + ":g" +
         str(groupM) + ":sgs" + str(subgroupSize) + ":smem" + str(maxSharedBytes) + ":wg" +
         str(workgroupScope) + ":a32" + str(storedA == Elem::F32) + ":b32" + str(storedB == Elem::F32) +
         ":tl" + str(tensorLayouts) + ":u" + str(unroll) + (stagedStore ? ":ss" : "") +
         (producers ? ":ws" + str(producers) : "") + (bounded ? ":bd" : "") + (boundedVectors ? ":bv" : "") +
         (crosswiseA ? ":xa" : "") + (crosswiseB ? ":xb" : "") + (kSlices > 1 ? ":ks" + str(kSlices) : "") +
         (edgeShift ? ":es" : "") + (lowered ? ":low" : "") + (biasOnVectors ? ":bov" : "") +
         (operands == Elem::BF16 ? ":bf16" : "");
}

std::string GemmCoopParams::name() const {
  // Appends only: GCC 12 flags `const char* + std::string` chains here with a false -Wrestrict.
  std::string n = workgroupScope ? "gemm_coop2_" : "gemm_coop_";
  const auto add = [&n](std::initializer_list<std::string_view> parts) {
    for (std::string_view part : parts)
      n += part;
  };
  if (operands == Elem::BF16) add({"bf16_"});
  add({transA ? "t" : "n", transB ? "t" : "n", "_", elemName(storedC), batched ? "_b" : "",
       alphaBeta ? "_ab" : "", bias ? "_bias" : "", gelu ? "_gelu" : "", storedA == Elem::F32 ? "_a32" : "",
       storedB == Elem::F32 ? "_b32" : ""});
  if (workgroupScope) {
    add({"_", str(BM), "x", str(BN), "x", str(BK), "_wg", str(invocations()), "_g", str(coopM), "x",
         str(coopN), "x", str(coopK)});
    if (groupM > 1) add({"_r", str(groupM)});
    if (unroll > 1) add({"_u", str(unroll)});
    if (tensorLayouts) add({"_tl"});
    return n;
  }
  add({"_", str(BM),     "x",  str(BN),     "x",  str(BK),    "_sg", str(sgRows),
       "x", str(sgCols), "_s", str(stages), "_c", str(coopM), "x",   str(coopN),
       "x", str(coopK),  "_p", str(padA),   "_",  str(padB)});
  if (groupM > 1) add({"_g", str(groupM)});
  if (stagedStore) add({"_ss"});
  if (producers) add({"_ws", str(producers)});
  if (bounded) add({boundedVectors ? "_bv" : "_bd", crosswiseA ? "_xa" : "", crosswiseB ? "_xb" : ""});
  if (kSlices > 1) add({"_ks", str(kSlices)});
  if (edgeShift) add({"_es"});
  if (subgroupSize != 32) add({"_w", str(subgroupSize)});
  if (lowered) add({"_low"});
  if (biasOnVectors) add({"_bov"});
  return n;
}

void GemmCoopParams::validate() const {
  const std::string me = name() + ": ";
  require(coopM && coopN && coopK && coopM % 8 == 0 && coopN % 8 == 0 && coopK % 8 == 0,
          me + "coop shape " + str(coopM) + "x" + str(coopN) + "x" + str(coopK) + " must be multiples of 8");
  require(subgroupSize >= 4 && subgroupSize <= 64 && (subgroupSize & (subgroupSize - 1)) == 0,
          me + "subgroup size " + str(subgroupSize) + " must be a power of two from 4 to 64");
  require(isHalf(operands), me + "the coop operands are a 16-bit kind (f16 or bf16)");
  for (const auto& [side, e] : {std::pair{"A", storedA}, std::pair{"B", storedB}})
    require(e == operands || e == Elem::F32,
            me + side + " is stored as " + elemName(e) + ": f32 or the operands' " + elemName(operands));
  require(storedC == operands || storedC == Elem::F32,
          me + "C is stored as " + elemName(storedC) + ": f32 or the operands' " + elemName(operands));
  if (workgroupScope) {
    require(BK % coopK == 0, me + "BK=" + str(BK) + " is not a multiple of coopK=" + str(coopK));
    require(BM % coopM == 0 && BN % coopN == 0,
            me + "BM x BN must be multiples of the granularity " + str(coopM) + "x" + str(coopN));
    require(BK % 8 == 0 && BN % 8 == 0 && BM % 8 == 0,
            me + "tile sides must be multiples of 8 (16-byte loads)");
    require(stages == 1 && padA == 0 && padB == 0, me + "workgroup scope has no stages or padding");
    require(unroll >= 1 && unroll <= 16, me + "unroll must be 1 to 16");
    require(storedA == Elem::F16 && storedB == Elem::F16 && operands == Elem::F16,
            me + "workgroup scope reads f16 operands only");
    require(!stagedStore, me + "the staged store is for subgroup scope");
    require(!producers, me + "copy subgroups are for subgroup scope");
    require(!bounded, me + "the bounded kernel is subgroup scope");
    require(!lowered, me + "the coop lowering is for subgroup scope");
    require(subgroupSize && invocations() <= 1024, me + str(invocations()) + " invocations (max 1024)");
    return;
  }
  require(!lowered || spv::coopLoweredMulAddShuffles(coopM, coopN, coopK, subgroupSize),
          me + "the coop lowering splits every coop matrix evenly over a subgroup, in powers of two");
  require(!tensorLayouts && unroll == 1, me + "tensor layouts and unrolling are for workgroup scope");
  require(sgRows && sgCols && BM % (sgRows * coopM) == 0,
          me + "BM=" + str(BM) + " is not a multiple of sgRows*coopM=" + str(sgRows * coopM));
  require(BN % (sgCols * coopN) == 0,
          me + "BN=" + str(BN) + " is not a multiple of sgCols*coopN=" + str(sgCols * coopN));
  require(BK && BK % coopK == 0, me + "BK=" + str(BK) + " is not a multiple of coopK=" + str(coopK));
  require(stages == 1 || stages == 2, me + "stages must be 1 or 2");
  require(!producers || stages == 2, me + "copy subgroups need 2 stages");
  require(padA % 8 == 0 && padB % 8 == 0, me + "padding must be a multiple of 8 halves (16-byte rows)");
  require(subgroupSize && invocations() <= 1024, me + str(invocations()) + " invocations (max 1024)");
  require(accM() * accN() <= 32,
          me + str(accM() * accN()) + " accumulators per subgroup (at most 32; more would spill)");
  const coop::TileCopy ta = coop::tileA(*this), tb = coop::tileB(*this);
  for (const auto& [side, t] : {std::pair{"A", ta}, std::pair{"B", tb}})
    require((t.rows * t.vecsPerRow) % copiers() == 0, me + side + " slice (" + str(t.rows * t.vecsPerRow) +
                                                          " vectors) does not split over " + str(copiers()) +
                                                          " copying invocations");
  require(kSlices >= 1 && kSlices <= 64, me + "kSlices must be 1 to 64");
  if (kSlices > 1)
    require(!batched && !producers, me + "K slices are not batched and have no copy subgroups");
  require(!boundedVectors || bounded, me + "boundedVectors needs bounded");
  require(!edgeShift || (bounded && kSlices == 1 && !producers),
          me + "edgeShift is for bounded kernels with whole K and no copy subgroups");
  require(!(crosswiseA || crosswiseB) || (bounded && !boundedVectors),
          me + "crosswise copies are the bounded scalar ones");
  if (bounded) {
    require(storedA == operands && storedB == operands, me + "the bounded kernel reads 16-bit operands");
    require(!stagedStore || boundedVectors,
            me + "the bounded kernel stages C as vectors only with vector copies");
  }
  if (stagedStore || bounded) {
    require(!alphaBeta || bounded, me + "the staged store has no alpha/beta");
    require(coopN % 4 == 0 && (coopM * warpN() / 4) % subgroupSize == 0,
            me + "the staged store copies whole rows of 16-byte vectors per lane (coopM x warpN / 4 = " +
                str(coopM * warpN() / 4) + " vectors over " + str(subgroupSize) + " lanes)");
  }
  require(sharedBytes() <= maxSharedBytes,
          me + "needs " + str(sharedBytes()) + " bytes of shared memory, device allows " +
              str(maxSharedBytes) + " (use fewer stages, a smaller BK or a smaller tile)");
}

GemmCoopGroups gemmCoopGroups(const GemmCoopParams& p, uint32_t M, uint32_t N, uint32_t batch) {
  const uint32_t z = p.kSlices > 1 ? p.kSlices : p.batched ? batch : 1u;
  if (p.bounded) return {(N + p.BN - 1) / p.BN, (M + p.BM - 1) / p.BM, z};
  return {N / p.BN, M / p.BM, z};
}

bool edgeShiftFits(const GemmCoopParams& p, uint32_t M, uint32_t N, uint32_t K) {
  return M >= p.BM && N >= p.BN && K > p.BK;
}

uint32_t gemmCoopTileCount(const GemmCoopParams& p, uint32_t M, uint32_t N) {
  return ((N + p.BN - 1) / p.BN) * ((M + p.BM - 1) / p.BM);
}

uint64_t gemmCoopPartialElements(const GemmCoopParams& p, uint32_t M, uint32_t N) {
  return p.kSlices > 1 ? uint64_t{gemmCoopTileCount(p, M, N)} * p.kSlices * p.BM * p.BN : 0;
}

} // namespace helios::codegen
