#include "gemm_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

#include "codegen/spirv/tools.hpp"
#include "engine/core/half.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/ops/gemm_plan_menu.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "engine/tuning/values.hpp"
#include "gates.hpp"
#include "search_harness.hpp"

namespace helios::tune {

namespace {

using tuning::Candidate;
constexpr double kRejected = std::numeric_limits<double>::infinity();

// The operands of one shape, on the device and as doubles for the reference.
struct Operands {
  vk::Buffer a, b, c;
  std::vector<double> ha, hb; // as stored (transposed where the layout says)
  ops::MatmulArgs args;
};

Operands makeOperands(vk::Context& ctx, const tuning::GemmShape& s, uint64_t seed) {
  Operands o;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const bool f16 = ctx.device().features().storageBuffer16BitAccess && ctx.device().features().shaderFloat16;
  const auto fill = [&](uint64_t n, std::vector<double>& h, vk::Buffer& buf, const char* what) {
    std::vector<float> v(n);
    for (float& x : v)
      x = u(rng);
    if (f16) {
      const std::vector<uint16_t> half = toHalf(v);
      v = fromHalf(half);
      buf = ctx.buffer(n * 2, what);
      ctx.uploadVector(buf, half);
    } else {
      buf = ctx.buffer(n * 4, what);
      ctx.uploadVector(buf, v);
    }
    h.assign(v.begin(), v.end());
  };
  fill(uint64_t{s.batch} * s.m * s.k, o.ha, o.a, "tune A");
  fill(uint64_t{s.batch} * s.k * s.n, o.hb, o.b, "tune B");
  o.c = ctx.buffer(uint64_t{s.batch} * s.m * s.n * (s.f16Out ? 2 : 4), "tune C");
  ops::MatmulArgs& a = o.args;
  a.a = o.a.range(), a.b = o.b.range(), a.c = o.c.range();
  a.M = s.m, a.N = s.n, a.K = s.k, a.batch = s.batch, a.transA = s.transA, a.transB = s.transB;
  a.aType = f16 ? ops::MatmulDType::F16 : ops::MatmulDType::F32;
  a.outType = s.f16Out ? ops::MatmulDType::F16 : ops::MatmulDType::F32;
  return o;
}

std::vector<float> readC(vk::Context& ctx, const Operands& o, const tuning::GemmShape& s) {
  const size_t n = size_t{s.batch} * s.m * s.n;
  if (s.f16Out) return fromHalf(ctx.downloadVector<uint16_t>(o.c, n));
  return ctx.downloadVector<float>(o.c, n);
}

// C filled with NaN, so an output a candidate never writes fails the error gate.
void poisonC(vk::Context& ctx, const Operands& o, const tuning::GemmShape& s) {
  const size_t n = size_t{s.batch} * s.m * s.n;
  if (s.f16Out)
    ctx.uploadVector(o.c, std::vector<uint16_t>(n, 0x7e00));
  else
    ctx.uploadVector(o.c, std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()));
}

// Largest |got - ref| / sum |a b| over `samples` outputs chosen from `seed` (NaN counts as infinite).
double maxError(const Operands& o, const std::vector<float>& got, const tuning::GemmShape& s,
                uint32_t samples, uint64_t seed) {
  std::mt19937_64 rng(seed);
  double worst = 0;
  for (uint32_t t = 0; t < samples; ++t) {
    const uint64_t b = rng() % s.batch, i = rng() % s.m, j = rng() % s.n;
    double ref = 0, mag = 0;
    for (uint64_t k = 0; k < s.k; ++k) {
      const double x = o.ha[b * s.m * s.k + (s.transA ? k * s.m + i : i * s.k + k)];
      const double y = o.hb[b * s.k * s.n + (s.transB ? j * s.k + k : k * s.n + j)];
      ref += x * y;
      mag += std::fabs(x * y);
    }
    const double g = got[(b * s.m + i) * s.n + j];
    const double e = std::isfinite(g) ? std::fabs(g - ref) / (mag + 1e-30) : kRejected;
    worst = std::max(worst, e);
  }
  return worst;
}

ops::MatmulArgs argsFor(const ops::MatmulArgs& base, const tuning::Tuning& record) {
  ops::MatmulArgs a = base;
  const tuning::GemmChoice* c = tuning::findGemm(
      record, ops::gemmShape(a.M, a.N, a.K, a.batch, a.transA, a.transB, a.outType == ops::MatmulDType::F16));
  if (c && c->kernel == tuning::GemmKernel::Tiled) {
    a.kernel = ops::MatmulKernel::Tiled;
    if (c->tiled) a.tile = codegen::GemmTile::parse(*c->tiled);
  }
  return a;
}

// On the tiled path: the record's tile (argsFor), else the menu's, never the tile of the device's own record
// (matmulTiledPlan reads that one, and it is not the record under test: after a run, the file just written).
ops::MatmulArgs withTiledTile(ops::MatmulArgs a, const vk::Device& device) {
  if (!a.tile) a.tile = ops::matmulTiledParams(a, ops::gemmDeviceLimits(device)).tile;
  return a;
}

// The main kernel a candidate dispatches: a key naming everything that decides the GPU work (path, split,
// padded sizes, kernel parameters), and the spirv-val verdict on its module ("" when it passes). Throws what
// validate() throws for parameters that cannot be built.
struct Planned {
  std::string key, invalid;
};
Planned planned(vk::Context& ctx, const ops::CoopDeviceInfo& dev, const ops::MatmulArgs& base,
                const tuning::Tuning& record) {
  const ops::MatmulArgs a = argsFor(base, record);
  if (a.kernel != ops::MatmulKernel::Tiled && dev.coopMatrix) {
    const ops::CoopPlan plan = ops::planMatmulCoop(a, dev, &record);
    if (ops::isCoop(plan.decision)) {
      codegen::GemmCoopParams p = ops::coopKernelParams(plan, a);
      p.validate();
      const spv::ValidationResult v = spv::validate(codegen::generateGemmCoop(p).spirv);
      return {std::string(ops::coopDecisionName(plan.decision)) + "/" + std::to_string(plan.splitK) + "/" +
                  std::to_string(plan.Mp) + "x" + std::to_string(plan.Np) + "x" + std::to_string(plan.Kp) +
                  "/" + p.cacheKey(),
              v.ok ? "" : v.message};
    }
  }
  const codegen::GemmTiledParams p = ops::matmulTiledPlan(withTiledTile(a, ctx.device()), ctx.device());
  p.validate(ops::gemmDeviceLimits(ctx.device()));
  const spv::ValidationResult v =
      spv::validate(codegen::generateGemmTiled(p, ops::gemmDeviceLimits(ctx.device())).spirv);
  return {"tiled/" + p.cacheKey(), v.ok ? "" : v.message};
}

} // namespace

std::string describe(const tuning::GemmChoice& c) {
  std::string s = tuning::name(c.kernel);
  const auto num = [&](const char* key, const std::optional<uint32_t>& v) {
    if (v) s += std::string(" ") + key + std::to_string(*v);
  };
  const auto flag = [&](const char* key, const std::optional<bool>& v) {
    if (v) s += std::string(*v ? " " : " no-") + key;
  };
  flag("coop2", c.coop2);
  if (c.tile) s += " " + tuning::text(*c.tile);
  if (c.tiled) s += " " + *c.tiled;
  num("w", c.producers);
  num("g", c.groupM);
  num("k", c.kSlices);
  if (c.pad) s += " p" + tuning::text(*c.pad);
  flag("ss", c.stagedStore);
  num("u", c.unroll);
  flag("tl", c.tensorLayouts);
  return s;
}

void runWithRecord(ops::Executor& exec, const ops::MatmulArgs& base, const tuning::Tuning& record) {
  const ops::MatmulArgs a = argsFor(base, record);
  const vk::Device& device = exec.context().device();
  if (a.kernel == ops::MatmulKernel::Tiled || !ops::coopDeviceInfo(device).coopMatrix) {
    ops::matmul(exec, withTiledTile(a, device));
    return;
  }
  ops::CoopRunOptions opt;
  opt.tuning = record;
  opt.record = false;
  ops::matmulCoop(exec, a, opt);
}

ops::MatmulArgs shapeArgs(const tuning::GemmShape& s) {
  ops::MatmulArgs a;
  a.M = s.m, a.N = s.n, a.K = s.k, a.batch = s.batch, a.transA = s.transA, a.transB = s.transB;
  a.aType = ops::MatmulDType::F16;
  a.outType = s.f16Out ? ops::MatmulDType::F16 : ops::MatmulDType::F32;
  return a;
}

namespace {

// Index 0 ("as the policy chooses") and then the values.
std::vector<int64_t> axis(bool on, std::initializer_list<int64_t> values) {
  std::vector<int64_t> v{-1};
  if (on) v.insert(v.end(), values);
  return v;
}

// The policy's kernel for `shape` with `choice` (only coop2 set, or nothing) in place of any tuned entry.
std::optional<codegen::GemmCoopParams> policyKernel(const ops::CoopDeviceInfo& dev,
                                                    const tuning::GemmShape& shape,
                                                    const tuning::Tuning& base,
                                                    const tuning::GemmChoice& choice) {
  tuning::Tuning record = base;
  tuning::putGemm(record, choice, tuning::Source::File);
  const ops::MatmulArgs a = shapeArgs(shape);
  const ops::CoopPlan plan = ops::planMatmulCoop(a, dev, &record);
  if (!ops::isCoop(plan.decision)) return std::nullopt;
  return ops::coopKernelParams(plan, a);
}

bool validates(const codegen::GemmCoopParams& p) {
  try {
    p.validate();
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// The names of the axes that only the subgroup-scope kernel has, and those only the workgroup-scope one has.
const std::vector<const char*> kSubgroupAxes = {"sgRows",  "sgCols", "stages", "producers",  "groupM",
                                                "kSlices", "padA",   "padB",   "stagedStore"};
const std::vector<const char*> kWorkgroupAxes = {"unroll", "tensorLayouts"};

// The workgroup scope: asked for, or left to the policy that takes it, or implied by one of its own axes (so
// one move of the search reaches them).
bool usesWorkgroupScope(const GemmSpace& g, const Candidate& c) {
  const int64_t v = g.space.value(c, "coop2");
  const bool ownAxis = g.space.value(c, "unroll") >= 0 || g.space.value(c, "tensorLayouts") >= 0;
  return g.workgroupBase && (v == 1 || (v == -1 && (g.policyWorkgroup || ownAxis)));
}

// The subgroup-scope kernel `c` asks for, on the policy's kernel for the shape.
codegen::GemmCoopParams subgroupKernel(const GemmSpace& g, const Candidate& c) {
  codegen::GemmCoopParams p = g.subgroupBase;
  const auto pick = [&](const char* axis, uint32_t policy) {
    const int64_t v = g.space.value(c, axis);
    return v < 0 ? policy : uint32_t(v);
  };
  p.setTiling({pick("bm", p.BM), pick("bn", p.BN), pick("bk", p.BK), pick("sgRows", p.sgRows),
               pick("sgCols", p.sgCols), pick("stages", p.stages)});
  p.producers = pick("producers", p.producers);
  p.padA = pick("padA", p.padA), p.padB = pick("padB", p.padB);
  p.kSlices = pick("kSlices", p.kSlices);
  return p;
}

} // namespace

GemmSpace gemmSpace(const ops::CoopDeviceInfo& dev, const tuning::GemmShape& s, const tuning::Tuning& base,
                    bool allowCoop) {
  GemmSpace g;
  tuning::SearchSpace& space = g.space;
  bool coop = dev.coopMatrix && allowCoop;
  bool nv2 = false;
  if (coop) {
    tuning::GemmChoice policy, sub, wg;
    policy.shape = sub.shape = wg.shape = s;
    sub.coop2 = false;
    wg.coop2 = true;
    const auto own = policyKernel(dev, s, base, policy);
    g.policyWorkgroup = own && own->workgroupScope;
    const auto subgroup = policyKernel(dev, s, base, sub);
    g.subgroupBase = subgroup ? *subgroup
                              : codegen::gemmCoopDefault(dev.coopM, dev.coopN, dev.coopK, dev.maxSharedBytes,
                                                         dev.subgroupSize);
    g.subgroupBase.transA = s.transA, g.subgroupBase.transB = s.transB;
    if (!dev.nv2Shapes.empty())
      if (const auto w = policyKernel(dev, s, base, wg); w && w->workgroupScope) g.workgroupBase = *w;
    nv2 = g.workgroupBase.has_value();
  }
  for (const codegen::GemmTile& t : ops::gemmTiledCandidates())
    g.tiledTiles.push_back(t.str());
  std::vector<int64_t> tiled{-1};
  for (size_t i = 0; i < g.tiledTiles.size(); ++i)
    tiled.push_back(int64_t(i));
  space.dims = {
      {"kernel", coop ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{1}},
      {"coop2", axis(nv2, {0, 1})},
      {"bm", axis(coop, {32, 64, 128, 256})},
      {"bn", axis(coop, {32, 64, 128, 256})},
      {"bk", axis(coop, {16, 32, 64})},
      {"sgRows", axis(coop, {1, 2, 4})},
      {"sgCols", axis(coop, {1, 2, 4})},
      {"stages", axis(coop, {1, 2})},
      {"producers", axis(coop, {0, 1, 2})},
      {"groupM", axis(coop, {0, 4, 8, 16})},
      {"kSlices", axis(coop && s.batch == 1, {1, 2, 4, 8})},
      {"padA", axis(coop, {0, 8, 16})},
      {"padB", axis(coop, {0, 8, 16})},
      {"stagedStore", axis(coop, {0})},
      {"unroll", axis(nv2, {1, 2, 4, 8})},
      {"tensorLayouts", axis(nv2, {0, 1})},
      {"tiledTile", tiled},
  };
  // One spelling per candidate: coop axes stay at "policy" on tiled candidates and the other way; each
  // scope's own axes only on that scope; a subgroup-scope kernel must validate.
  space.valid = [g = GemmSpace(g)](const Candidate& c) { // a copy: the returned space moves
    const tuning::SearchSpace& sp = g.space;
    const bool isTiled = sp.value(c, "kernel") == 1;
    bool coopParts = false;
    for (size_t i = 1; i + 1 < c.size(); ++i)
      coopParts = coopParts || c[i] != 0;
    if (isTiled) return !coopParts;
    if (sp.value(c, "tiledTile") >= 0) return false;
    const bool wg = usesWorkgroupScope(g, c);
    for (const char* a : wg ? kSubgroupAxes : kWorkgroupAxes)
      if (sp.value(c, a) >= 0) return false;
    return wg || validates(subgroupKernel(g, c));
  };
  return g;
}

tuning::GemmChoice gemmChoice(const GemmSpace& g, const Candidate& c, const tuning::GemmShape& s) {
  const tuning::SearchSpace& space = g.space;
  tuning::GemmChoice choice;
  choice.shape = s;
  choice.kernel = space.value(c, "kernel") == 1 ? tuning::GemmKernel::Tiled : tuning::GemmKernel::Coop;
  const auto opt = [&](const char* axis) {
    const int64_t v = space.value(c, axis);
    return v < 0 ? std::nullopt : std::optional<uint32_t>(uint32_t(v));
  };
  if (const auto v = opt("coop2")) choice.coop2 = *v == 1;
  // The tiling: the scope's policy tiling with the candidate's parts, recorded only where it differs.
  const bool wg = usesWorkgroupScope(g, c);
  if (wg && !g.policyWorkgroup) choice.coop2 = true;
  const codegen::GemmCoopParams& from = wg ? *g.workgroupBase : g.subgroupBase;
  const tuning::CoopTile policy = from.tiling();
  const tuning::CoopTile tile{opt("bm").value_or(policy.bm),       opt("bn").value_or(policy.bn),
                              opt("bk").value_or(policy.bk),       opt("sgRows").value_or(policy.rows),
                              opt("sgCols").value_or(policy.cols), opt("stages").value_or(policy.stages)};
  if (choice.kernel == tuning::GemmKernel::Coop && !(tile == policy)) choice.tile = tile;
  choice.producers = opt("producers");
  choice.groupM = opt("groupM");
  choice.kSlices = opt("kSlices");
  const auto padA = opt("padA"), padB = opt("padB");
  if (padA || padB) choice.pad = tuning::SharedPad{padA.value_or(from.padA), padB.value_or(from.padB)};
  if (space.value(c, "stagedStore") == 0) choice.stagedStore = false;
  choice.unroll = opt("unroll");
  if (const auto v = opt("tensorLayouts")) choice.tensorLayouts = *v == 1;
  if (const int64_t t = space.value(c, "tiledTile"); t >= 0) choice.tiled = g.tiledTiles[size_t(t)];
  return choice;
}

GemmTuneResult tuneGemm(vk::Context& ctx, const tuning::GemmShape& shape, const tuning::Tuning& base,
                        const GemmTuneOptions& o) {
  Operands ops_ = makeOperands(ctx, shape, o.seed);
  const ops::CoopDeviceInfo dev = o.device ? *o.device : ops::coopDeviceInfo(ctx.device());
  const GemmSpace space = gemmSpace(dev, shape, base, o.allowCoop);
  const TrialMaker trial = [&](const Candidate& c, const std::function<double(const Trial&)>& body) {
    const tuning::GemmChoice g = gemmChoice(space, c, shape);
    tuning::Tuning record = base;
    tuning::putGemm(record, g, tuning::Source::File);
    const auto check = [&] {
      const Planned k = planned(ctx, dev, ops_.args, record);
      return Checked{k.invalid.empty() ? "" : "spirv-val", k.invalid, k.key};
    };
    return body({describe(g), check, [&](ops::Executor& e) { o.runner(e, ops_.args, record); }});
  };
  GatedOutputs outputs;
  outputs.poison = [&] { poisonC(ctx, ops_, shape); };
  outputs.read = [&] { return std::vector<std::vector<float>>{readC(ctx, ops_, shape)}; };
  outputs.error = [&](const std::vector<std::vector<float>>& got) {
    return maxError(ops_, got[0], shape, o.samples, o.seed + 1);
  };
  outputs.maxError = o.maxError;
  outputs.errorWeight = o.errorWeight;
  const HarnessResult h = searchCandidates(ctx, space.space, trial, outputs, o);
  GemmTuneResult result;
  static_cast<SearchOutcome&>(result) = h;
  if (h.chosen) result.best = gemmChoice(space, *h.chosen, shape);
  return result;
}

PairUs timeGemmRecords(vk::Context& ctx, const tuning::GemmShape& shape, const tuning::Tuning& first,
                       const tuning::Tuning& second, const TimingOptions& timing, uint32_t rounds) {
  const Operands o = makeOperands(ctx, shape, 1);
  return timeRecords(ctx, timing, rounds, [&](ops::Executor& e, bool useSecond) {
    runWithRecord(e, o.args, useSecond ? second : first);
  });
}

} // namespace helios::tune
