// The GEMM planner (engine/ops/gemm_plan.hpp) as the pure function it is: captured device profiles and a
// Tuning record in, plans out; no device. Each case checks the order of its policies (forced tile, coop,
// tiled fallback), the passes it asks for (16-bit copies, padding, split K, the shared-B fold), the grid,
// and that a Tuning record's choice reaches the kernel through the planner alone.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "engine/ops/gemm_plan.hpp"
#include "engine/tuning/defaults.hpp"
#include "gemm_fixture_devices.hpp"

using namespace helios;
using namespace helios::ops;
using Catch::Matchers::ContainsSubstring;
using codegen::Elem;

namespace {

tuning::Tuning defaults(const probe::DeviceCaps& caps) {
  tuning::DeviceFacts facts;
  facts.computeUnits = computeUnitsOr(caps.shader_cores, kDefaultComputeUnits);
  return tuning::defaultTuning(facts);
}

vk::BufferRange fake(uintptr_t handle, uint64_t offset = 0) {
  return {reinterpret_cast<VkBuffer>(handle), offset, uint64_t{1} << 40};
}

MatmulArgs gemm(uint32_t M, uint32_t N, uint32_t K, Elem a = Elem::F16) {
  MatmulArgs args;
  args.a = fake(1), args.b = fake(2), args.c = fake(3);
  args.M = M, args.N = N, args.K = K;
  args.aType = a;
  return args;
}

uint32_t up(uint32_t x, uint32_t m) {
  return (x + m - 1) / m;
}

struct Fixture {
  probe::DeviceCaps caps;
  tuning::Tuning record;
  DeviceProfile profile;
  explicit Fixture(probe::DeviceCaps c) : caps(std::move(c)), record(defaults(caps)) { rebuild(); }
  void rebuild() { profile = profileFromCaps(caps.name, caps, record); }
};

Fixture h100() {
  return Fixture(testing::fixtureCaps("nvidia-h100-580.json"));
}
Fixture lavapipe() {
  return Fixture(testing::lavapipeCaps());
}

} // namespace

TEST_CASE("gemm plan: a forced tile or the tiled kernel skips the coop policy", "[gemm_plan]") {
  const Fixture dev = h100();
  MatmulArgs args = gemm(4096, 4096, 4096);
  args.tile = codegen::GemmTile::parse("64x64x8_4x4");
  GemmPlan plan = planGemm(args, dev.profile);
  CHECK(plan.family == GemmFamily::Tiled);
  CHECK_FALSE(plan.coop);
  CHECK(plan.tiled.tile == *args.tile);
  CHECK(plan.grid.x == 64);
  CHECK(plan.grid.y == 64);

  args.tile.reset();
  args.kernel = MatmulKernel::Tiled;
  args.aType = Elem::F32;
  args.roundTo = Elem::BF16;
  plan = planGemm(args, dev.profile);
  CHECK(plan.family == GemmFamily::Tiled);
  CHECK_FALSE(plan.coop);
  CHECK(plan.halfCopies); // the tiled kernel cannot round while it loads: 16-bit copies first
  CHECK(plan.tiled.inType == Elem::BF16);
}

TEST_CASE("gemm plan: coop where the policy takes it, with the kernel's grid", "[gemm_plan]") {
  const Fixture dev = h100();
  const GemmPlan plan = planGemm(gemm(4096, 4096, 4096), dev.profile);
  REQUIRE(plan.family == GemmFamily::Coop);
  REQUIRE(plan.coop);
  CHECK(plan.coop->decision == CoopDecision::DirectCoop);
  const codegen::GemmCoopParams& p = plan.coopParams;
  CHECK(plan.grid.x == 4096 / p.BN);
  CHECK(plan.grid.y == 4096 / p.BM);
  CHECK(plan.grid.z == 1);
  CHECK_FALSE(plan.halfCopies);
  CHECK(p.storedA == Elem::F16);
}

TEST_CASE("gemm plan: a coop miss falls back to the tiled kernel with its reason", "[gemm_plan]") {
  const Fixture dev = h100();
  const GemmPlan f32 = planGemm(gemm(1000, 1000, 1000, Elem::F32), dev.profile);
  CHECK(f32.family == GemmFamily::Tiled);
  REQUIRE(f32.coop);
  CHECK(f32.coop->missKey == "type not supported: f32 inputs");
  CHECK(f32.tiled.inType == Elem::F32);
  CHECK(f32.grid.x == up(1000, f32.tiled.tile.BN));
  // Forced coop refuses instead, naming the policy's reason.
  MatmulArgs forced = gemm(1000, 1000, 1000, Elem::F32);
  forced.kernel = MatmulKernel::Coop;
  CHECK_THROWS_WITH(planGemm(forced, dev.profile), ContainsSubstring("f32 inputs"));
  // A device without cooperative matrices never asks the policy; forcing coop there is refused.
  const Fixture lp = lavapipe();
  const GemmPlan plain = planGemm(gemm(64, 64, 64), lp.profile);
  CHECK(plain.family == GemmFamily::Tiled);
  CHECK_FALSE(plain.coop);
  MatmulArgs coopOnLavapipe = gemm(64, 64, 64);
  coopOnLavapipe.kernel = MatmulKernel::Coop;
  CHECK_THROWS_WITH(planGemm(coopOnLavapipe, lp.profile), ContainsSubstring("no cooperative matrices"));
}

TEST_CASE("gemm plan: rounding f32 operands happens while staging directly, on copies otherwise",
          "[gemm_plan]") {
  const Fixture dev = h100();
  MatmulArgs direct = gemm(4096, 4096, 4096, Elem::F32);
  direct.roundTo = Elem::F16;
  const GemmPlan d = planGemm(direct, dev.profile);
  REQUIRE(d.family == GemmFamily::Coop);
  CHECK_FALSE(d.halfCopies);
  CHECK(d.coopParams.storedA == Elem::F32); // rounded as staged
  CHECK(d.coopParams.operands == Elem::F16);

  Fixture padOnly = h100();
  padOnly.record.gemm.bounded.value = tuning::BoundedMode::Never;
  padOnly.record.gemm.bounded.source = tuning::Source::Env;
  padOnly.rebuild();
  MatmulArgs padded = gemm(4000, 4096, 4096, Elem::F32);
  padded.roundTo = Elem::F16;
  const GemmPlan p = planGemm(padded, padOnly.profile);
  REQUIRE(p.family == GemmFamily::Coop);
  CHECK(p.coop->decision == CoopDecision::PaddedCoop);
  CHECK(p.halfCopies);
  CHECK(p.coopParams.storedA == Elem::F16);
  CHECK(p.grid.y == p.coop->Mp / p.coopParams.BM); // over the padded problem
  CHECK(p.coop->Mp > 4000);
}

TEST_CASE("gemm plan: split K runs the slices as one batched pass; a shared B folds into M", "[gemm_plan]") {
  const Fixture dev = h100();
  MatmulArgs tn = gemm(768, 768, 16384);
  tn.transA = true;
  const GemmPlan split = planGemm(tn, dev.profile);
  REQUIRE(split.family == GemmFamily::Coop);
  REQUIRE(split.coop->splitK > 1);
  CHECK(split.coopParams.batched);
  CHECK(split.coopParams.kSlices == 1);
  CHECK(split.grid.z == split.coop->splitK);

  MatmulArgs shared = gemm(2048, 768, 768);
  shared.batch = 4;
  shared.strideB = 0;
  const GemmPlan fold = planGemm(shared, dev.profile);
  REQUIRE(fold.family == GemmFamily::Coop);
  CHECK(fold.coop->decision == CoopDecision::Rewrite);
  CHECK_FALSE(fold.coopParams.batched);
  CHECK(fold.grid.y == 4 * 2048 / fold.coopParams.BM);
  CHECK(fold.grid.z == 1);
}

TEST_CASE("gemm plan: the Tuning record's choices reach the kernel through the planner", "[gemm_plan]") {
  // The tiled kernel's tile for one shape (lavapipe), ignored where it does not fit the device.
  Fixture lp = lavapipe();
  tuning::GemmChoice tiled;
  tiled.shape = {300, 200, 100, 1, false, false, false};
  tiled.kernel = tuning::GemmKernel::Tiled;
  tiled.tiled = "32x32x8_4x4_p4_s1";
  tuning::putGemm(lp.record, tiled, tuning::Source::File);
  lp.rebuild();
  const GemmPlan t = planGemm(gemm(300, 200, 100, Elem::F32), lp.profile);
  CHECK(t.tiled.tile.str() == "32x32x8_4x4_p4_s1");
  CHECK(t.grid.x == up(200, 32));
  CHECK(planGemm(gemm(300, 200, 101, Elem::F32), lp.profile).tiled.tile.str() == "128x128x8_8x8_p4_s2");
  // A tile the device's limits refuse (a pad off the shared read width) leaves the heuristic's.
  tiled.shape.k = 99;
  tiled.tiled = "32x32x8_4x4_p1_s1";
  tuning::putGemm(lp.record, tiled, tuning::Source::File);
  lp.rebuild();
  CHECK(planGemm(gemm(300, 200, 99, Elem::F32), lp.profile).tiled.tile.str() == "128x128x8_8x8_p4_s2");

  // The coop tile for one shape (H100), and a global field (gemm.groupM) after it.
  Fixture dev = h100();
  tuning::GemmChoice coop;
  coop.shape = {4096, 4096, 4096, 1, false, false, false};
  coop.tile = tuning::CoopTile{64, 64, 32, 2, 2, 2};
  tuning::putGemm(dev.record, coop, tuning::Source::File);
  dev.record.gemm.groupM.value = 4;
  dev.record.gemm.groupM.source = tuning::Source::Env;
  dev.rebuild();
  const GemmPlan c = planGemm(gemm(4096, 4096, 4096), dev.profile);
  REQUIRE(c.family == GemmFamily::Coop);
  CHECK(c.coopParams.BM == 64);
  CHECK(c.coopParams.BN == 64);
  CHECK(c.coopParams.BK == 32);
  CHECK(c.coopParams.stages == 2);
  CHECK(c.coopParams.groupM == 4);
  CHECK(c.grid.x == 64);
  // A shape tuned to the tiled kernel falls back with that reason.
  tuning::GemmChoice toTiled;
  toTiled.shape = {2048, 2048, 2048, 1, false, false, false};
  toTiled.kernel = tuning::GemmKernel::Tiled;
  tuning::putGemm(dev.record, toTiled, tuning::Source::File);
  dev.rebuild();
  const GemmPlan f = planGemm(gemm(2048, 2048, 2048), dev.profile);
  CHECK(f.family == GemmFamily::Tiled);
  CHECK(f.coop->missKey == "tuned to the tiled kernel");
}

TEST_CASE("gemm plan: a lowered profile plans coop on small tiles; fixtures build as the live device does",
          "[gemm_plan]") {
  Fixture lowered = lavapipe();
  lowered.record.gemm.coopEmulate.value = tuning::MatShape{16, 16, 16};
  lowered.rebuild();
  CHECK(lowered.profile.coop.lowered);
  const GemmPlan plan = planGemm(gemm(128, 128, 128), lowered.profile);
  REQUIRE(plan.family == GemmFamily::Coop);
  CHECK(plan.coopParams.lowered);
  CHECK(loweredTilingFits(plan.coopParams));
  // A shape that does not split over lavapipe's 8 lanes is refused by name.
  lowered.record.gemm.coopEmulate.value = tuning::MatShape{2, 2, 2};
  CHECK_THROWS_WITH(lowered.rebuild(), ContainsSubstring("HELIOS_COOP_EMULATE=2x2x2"));
  // gemm.coop2 off (the default) leaves NV2's workgroup-scope shapes to the shapes' own choices.
  const Fixture nv2 = h100();
  CHECK(nv2.profile.coop.workgroupShapes.empty());
  CHECK_FALSE(nv2.profile.coop.nv2Shapes.empty());
  CHECK(nv2.profile.limits.maxSharedBytes == nv2.caps.max_compute_shared_memory);
}
