#pragma once
// The Tuning record: every tuning choice Helios makes for one device, typed, each field remembering where its
// value came from. It is filled in one place (resolve.hpp), in this order: defaults derived from the
// device's facts (defaults.cpp) -> the device's tuning file in the cache directory (file.hpp) -> an explicit
// `--tuning FILE` -> environment overrides (overrides.hpp). docs/TUNING.md lists the fields and their
// environment names.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernels/gemm_coop_tile.hpp"

namespace helios::tuning {

enum class Source : uint8_t { Default, File, Explicit, Env };
const char* sourceName(Source s); // "default", "file", "--tuning", "env"

template <class T> struct Field {
  T value{};
  Source source = Source::Default;
  void set(T v, Source s) {
    value = std::move(v);
    source = s;
  }
  // A caller's own default (tests, the self-test): replaces the value only where no file, --tuning or
  // override set it.
  void preset(T v) {
    if (source == Source::Default) value = std::move(v);
  }
  bool operator==(const Field&) const = default;
};

// An f16 x f16 -> f32 cooperative-matrix shape, "16x16x16".
struct MatShape {
  uint32_t m = 0, n = 0, k = 0;
  bool operator==(const MatShape&) const = default;
};

// A subgroup-scope coop GEMM tiling, "BMxBNxBK_sgRxC_sS" (e.g. "64x64x32_sg2x2_s2"): the kernel's own.
using CoopTile = codegen::CoopTile;

// Halves appended to the shared rows of A and B, "AxB".
struct SharedPad {
  uint32_t a = 0, b = 0;
  bool operator==(const SharedPad&) const = default;
};

enum class CoopMode : uint8_t { Auto, On, Off };                             // "auto", "on", "off"
enum class BoundedMode : uint8_t { Policy, Never, Always, All, AllVectors }; // "policy", "never", ...
enum class DeltaMode : uint8_t { Policy, Read, Recompute };                  // "policy", "read", "recompute"
enum class GemmKernel : uint8_t { Coop, Tiled };                             // "coop", "tiled"
enum class AttentionPassId : uint8_t { Forward, QueryGrad, KeyValueGrad };   // "forward", "dq", "dkv"

// One GEMM problem as the policy sees it (exact match).
struct GemmShape {
  uint32_t m = 0, n = 0, k = 0, batch = 1;
  bool transA = false, transB = false;
  bool f16Out = false;
  bool operator==(const GemmShape&) const = default;
};

// The tuned choice for one GEMM shape; unset parts stay as the policy chooses.
struct GemmChoice {
  GemmShape shape;
  GemmKernel kernel = GemmKernel::Coop;
  std::optional<CoopTile> tile;      // coop (workgroup scope: only BM x BN x BK)
  std::optional<uint32_t> groupM;    // coop: raster band (0: row by row)
  std::optional<uint32_t> kSlices;   // coop: K slices in one dispatch (1: none)
  std::optional<SharedPad> pad;      // coop
  std::optional<bool> stagedStore;   // coop: false turns the staged C store off
  std::optional<uint32_t> producers; // coop, subgroup scope: copy subgroups (0: every invocation copies)
  std::optional<bool> coop2;         // coop: the workgroup-scope (NV2) kernel on or off for this shape
  std::optional<uint32_t> unroll;    // coop2: K slices per loop trip
  std::optional<bool> tensorLayouts; // coop2: A and B loaded through tensor layouts
  std::optional<std::string> tiled;  // tiled: codegen::GemmTile::str() form
  bool operator==(const GemmChoice&) const = default;
};

// The tuned choice for one coop attention pass.
struct AttentionChoice {
  AttentionPassId pass = AttentionPassId::Forward;
  uint32_t headDim = 64;
  bool causal = false;
  std::optional<uint32_t> tile, subgroups;
  std::optional<bool> prefetch;
  std::optional<uint32_t> pad;
  bool operator==(const AttentionChoice&) const = default;
};

// Which device and build a tuning file belongs to.
struct TuningKey {
  uint32_t vendorId = 0, deviceId = 0, driverVersion = 0;
  std::string kernelVersion; // HELIOS_KERNEL_VERSION
  bool operator==(const TuningKey&) const = default;
};

// The device facts the defaults derive from (vk::Device and the probe).
struct DeviceFacts {
  TuningKey key;
  std::string name;
  uint32_t computeUnits = 132;
  uint32_t minSubgroup = 32, maxSubgroup = 32;
  uint32_t maxSharedBytes = 49152;
};

struct GemmTuning {
  // Cooperative matrices.
  Field<CoopMode> coop{CoopMode::Auto};       // HELIOS_COOP: forced on/off, or the self-test decides
  Field<std::optional<MatShape>> coopShape;   // HELIOS_COOP_SHAPE: one of the device's shapes
  Field<std::optional<MatShape>> coopEmulate; // HELIOS_COOP_EMULATE: lowered coop (test mode)
  Field<uint32_t> coopSubgroup{0};            // HELIOS_COOP_SUBGROUP: 0 = coopRegisterPlan's
  Field<bool> coop2{false};                   // HELIOS_COOP2: the workgroup-scope (NV2) kernel
  // The coop policy (engine/ops/matmul_policy.hpp) reads these directly. Each comment gives the reason in a
  // sentence and the bench/results file with the measurements; the values are the hand-tuned H100 choices.
  Field<uint64_t> fillWorkgroups{0}; // one wave of workgroups; 0: from the compute units
  // Padding: padded work / real work - 1 at most paddingCap (inclusive), on problems of at least minFlops.
  Field<double> paddingCap{0.20};
  Field<double> minFlops{2e6};
  Field<bool> allowPadding{true}, allowRewrite{true}, allowSplitK{true};
  // Unaligned problems run as they are by the bounds-checked kernel (one dispatch, no pad or crop passes)
  // when padding is over the cap and they have at least boundedMinFlops (below it the tiled kernel), or
  // when padding is within the cap and they have at most boundedMaxFlops (above it padding) or rows of
  // whole 16-byte vectors: scalar copies beat padding only on small problems, vector copies on all measured
  // (2026-11-24-h100-gemm-bounded-vs-padded.json, 2026-11-24-h100-gemm-bounded-vectors.json).
  Field<BoundedMode> bounded{BoundedMode::Policy}; // HELIOS_COOP_BOUNDED
  Field<double> boundedMinFlops{3e7}, boundedMaxFlops{1.1e9};
  Field<bool> boundedVectors{true}; // HELIOS_COOP_BOUNDED_VECTORS
  // The bounded kernel's scalar copies of A, and of B stored N x K, read crosswise (GemmCoopParams::
  // crosswiseA/B): one load instruction then reads consecutive halves; B stored K x N gained nothing
  // (2026-11-25-h100-gemm-crosswise.json).
  Field<bool> crosswiseA{true}, crosswiseB{true}; // HELIOS_COOP_CROSSWISE
  // A bounded grid under one wave splits its tile among twice the subgroups (matmul_policy.cpp,
  // withMoreSubgroups; 2026-11-25-h100-gemm-bounded-subgroups.json).
  Field<bool> underWaveSubgroups{true}; // HELIOS_COOP_UNDER_WAVE_SUBGROUPS
  // Bounded plans with vector copies and whole K whose tiles fit inside the problem shift their edge tiles
  // back inside and check only the first K step (GemmCoopParams::edgeShift), except B stored N x K on the
  // single-stage tiling, where it lost (2026-11-25-h100-gemm-edge-shift.json); edgeShiftScalar: the same
  // for scalar copies on grids under one wave only (2026-11-25-h100-gemm-edge-shift-scalar.json).
  Field<bool> edgeShift{true}, edgeShiftScalar{true}; // HELIOS_COOP_EDGE_SHIFT(_SCALAR)
  // A single GEMM (direct or bounded; not the TN split) whose tiles leave the GPU idle cuts K into up to
  // maxKSlices slices inside its one dispatch (GemmCoopParams::kSlices), only with at least minSlicedSteps K
  // steps (the hand-over costs some 16 steps of a 64x64 tile). The count doubles while the grid is under a
  // wave and each slice keeps minSliceSteps, or under four waves and each keeps busySliceSteps
  // (scalarBusySliceSteps for the bounded kernel's scalar copies, whose steps cost three times as much)
  // (2026-11-24-h100-gemm-k-slices.json, -bounded-vs-padded.json). 1 turns it off.
  Field<uint32_t> maxKSlices{16}, minSlicedSteps{32}, minSliceSteps{8}, busySliceSteps{64},
      scalarBusySliceSteps{16};
  // K step of the 64x64 tile for aligned problems whose K it divides: 64 (else 32), or 32 always; 64 won
  // from 512x512x1024 up (2026-11-25-h100-gemm-small-tile-bk64.json).
  Field<uint32_t> smallTileBK{64}; // HELIOS_COOP_SMALL_TILE_BK
  Field<bool> stagedStore{true};   // HELIOS_GEMM_STAGED_STORE
  // Grids of at least bandMinTiles tiles both ways walk bands of bandRows tile rows (GemmCoopParams::groupM),
  // so each B tile is read from L2 by that many rows of A tiles
  // (2026-11-25-h100-gemm-raster-pad-bounded-tiles.json). 0 rows: row by row.
  Field<uint32_t> bandRows{8}, bandMinTiles{16};
  // The coop tiling menu, preferred first (empty: the planner's menu for the device's shape).
  Field<std::vector<CoopTile>> tilings;
  Field<std::optional<CoopTile>> directTile, boundedTile; // HELIOS_COOP_DIRECT_TILE, _BOUNDED_TILE
  Field<std::optional<uint32_t>> groupM;                  // HELIOS_COOP_GROUP_M
  Field<std::optional<uint32_t>> kSlices;                 // HELIOS_COOP_KSLICES
  Field<std::optional<SharedPad>> pad;                    // HELIOS_COOP_PAD
  // Per shape, from the tuner.
  Field<std::vector<GemmChoice>> shapes;
  bool operator==(const GemmTuning&) const = default;
};

struct AttentionTuning {
  Field<bool> rowOps{true};                       // HELIOS_ATTENTION_ROWOPS (where NV2 has them)
  Field<std::optional<uint32_t>> tile, subgroups; // HELIOS_ATTENTION_TILE, _SUBGROUPS (row-op passes)
  Field<bool> prefetch{true};                     // HELIOS_ATTENTION_PREFETCH=0 turns it off
  Field<bool> pad{true};                          // HELIOS_ATTENTION_PAD=0 turns it off
  // HELIOS_ATTENTION_KEY_SPLITS: the forward's and dQ's key walk split 1, 2 or 4 ways (unset: by grid fill).
  Field<std::optional<uint32_t>> keySplits;
  // HELIOS_ATTENTION_DELTA: the dK/dV pass reads delta or recomputes it (and runs beside dQ); policy:
  // recompute.
  Field<DeltaMode> delta{DeltaMode::Policy};
  Field<std::vector<AttentionChoice>> shapes;
  bool operator==(const AttentionTuning&) const = default;
};

struct Tuning {
  TuningKey key;
  GemmTuning gemm;
  AttentionTuning attention;
  bool operator==(const Tuning&) const = default;
};

// Calls f(name, field) for every field, in a fixed order (file, printing and source bookkeeping use it).
template <class T, class F> void forEachField(T& t, F&& f) {
  auto& g = t.gemm;
  f("gemm.coop", g.coop);
  f("gemm.coopShape", g.coopShape);
  f("gemm.coopEmulate", g.coopEmulate);
  f("gemm.coopSubgroup", g.coopSubgroup);
  f("gemm.coop2", g.coop2);
  f("gemm.fillWorkgroups", g.fillWorkgroups);
  f("gemm.paddingCap", g.paddingCap);
  f("gemm.minFlops", g.minFlops);
  f("gemm.allowPadding", g.allowPadding);
  f("gemm.allowRewrite", g.allowRewrite);
  f("gemm.allowSplitK", g.allowSplitK);
  f("gemm.bounded", g.bounded);
  f("gemm.boundedMinFlops", g.boundedMinFlops);
  f("gemm.boundedMaxFlops", g.boundedMaxFlops);
  f("gemm.boundedVectors", g.boundedVectors);
  f("gemm.crosswiseA", g.crosswiseA);
  f("gemm.crosswiseB", g.crosswiseB);
  f("gemm.underWaveSubgroups", g.underWaveSubgroups);
  f("gemm.edgeShift", g.edgeShift);
  f("gemm.edgeShiftScalar", g.edgeShiftScalar);
  f("gemm.maxKSlices", g.maxKSlices);
  f("gemm.minSlicedSteps", g.minSlicedSteps);
  f("gemm.minSliceSteps", g.minSliceSteps);
  f("gemm.busySliceSteps", g.busySliceSteps);
  f("gemm.scalarBusySliceSteps", g.scalarBusySliceSteps);
  f("gemm.smallTileBK", g.smallTileBK);
  f("gemm.stagedStore", g.stagedStore);
  f("gemm.bandRows", g.bandRows);
  f("gemm.bandMinTiles", g.bandMinTiles);
  f("gemm.tilings", g.tilings);
  f("gemm.directTile", g.directTile);
  f("gemm.boundedTile", g.boundedTile);
  f("gemm.groupM", g.groupM);
  f("gemm.kSlices", g.kSlices);
  f("gemm.pad", g.pad);
  f("gemm.shapes", g.shapes);
  auto& a = t.attention;
  f("attention.rowOps", a.rowOps);
  f("attention.tile", a.tile);
  f("attention.subgroups", a.subgroups);
  f("attention.prefetch", a.prefetch);
  f("attention.pad", a.pad);
  f("attention.keySplits", a.keySplits);
  f("attention.delta", a.delta);
  f("attention.shapes", a.shapes);
}

// The tuned choice for `s`, or nullptr.
const GemmChoice* findGemm(const Tuning& t, const GemmShape& s);
const AttentionChoice* findAttention(const Tuning& t, AttentionPassId pass, uint32_t headDim, bool causal);
// Adds or replaces the entry for the same shape (pass, head dim, causal), with `source`.
void putGemm(Tuning& t, const GemmChoice& c, Source source);
void putAttention(Tuning& t, const AttentionChoice& c, Source source);

} // namespace helios::tuning
