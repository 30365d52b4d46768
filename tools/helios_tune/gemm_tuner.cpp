#include "gemm_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>

#include "codegen/spirv/tools.hpp"
#include "engine/core/half.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "engine/tuning/values.hpp"
#include "gates.hpp"

namespace helios::tune {

namespace {

using tuning::Candidate;
constexpr double kRejected = std::numeric_limits<double>::infinity();

// Coop tilings tried besides the device's menu (codegen validates each against the device; misfits are
// gated).
const char* const kExtraCoopTiles[] = {"128x128x32_sg2x2_s2", "128x128x64_sg2x2_s1", "128x128x32_sg2x4_s2",
                                       "128x64x32_sg2x2_s2",  "64x128x32_sg2x2_s2",  "64x64x32_sg2x2_s2",
                                       "64x64x64_sg2x2_s2",   "256x128x32_sg4x2_s1", "128x256x32_sg2x4_s1",
                                       "32x64x32_sg1x2_s2",   "64x32x32_sg2x1_s2"};

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

// The main kernel a candidate dispatches: a key naming everything that decides the GPU work (path, split,
// padded sizes, kernel parameters), and the spirv-val verdict on its module ("" when it passes). Throws what
// validate() throws for parameters that cannot be built.
struct Planned {
  std::string key, invalid;
};
Planned planned(vk::Context& ctx, const ops::MatmulArgs& base, const tuning::Tuning& record) {
  const ops::MatmulArgs a = argsFor(base, record);
  const ops::CoopDeviceInfo dev = ops::coopDeviceInfo(ctx.device());
  if (a.kernel != ops::MatmulKernel::Tiled && dev.coopMatrix) {
    const ops::CoopPlan plan = ops::planMatmulCoop(a, dev, {}, &record);
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
  const codegen::GemmTiledParams p = ops::matmulTiledPlan(a, ctx.device());
  p.validate(ops::gemmDeviceLimits(ctx.device()));
  const spv::ValidationResult v =
      spv::validate(codegen::generateGemmTiled(p, ops::gemmDeviceLimits(ctx.device())).spirv);
  return {"tiled/" + p.cacheKey(), v.ok ? "" : v.message};
}

std::string describe(const tuning::GemmChoice& c) {
  std::string s = tuning::name(c.kernel);
  if (c.tile) s += " " + tuning::text(*c.tile);
  if (c.tiled) s += " " + *c.tiled;
  if (c.groupM) s += " g" + std::to_string(*c.groupM);
  if (c.kSlices) s += " k" + std::to_string(*c.kSlices);
  if (c.pad) s += " p" + tuning::text(*c.pad);
  if (c.stagedStore) s += *c.stagedStore ? " ss" : " no-ss";
  return s;
}

} // namespace

void runWithRecord(ops::Executor& exec, const ops::MatmulArgs& base, const tuning::Tuning& record) {
  const ops::MatmulArgs a = argsFor(base, record);
  if (a.kernel == ops::MatmulKernel::Tiled || !ops::coopDeviceInfo(exec.context().device()).coopMatrix) {
    ops::matmul(exec, a);
    return;
  }
  ops::CoopRunOptions opt;
  opt.tuning = record;
  opt.record = false;
  ops::matmulCoop(exec, a, opt);
}

GemmSpace gemmSpace(vk::Context& ctx, const tuning::GemmShape& s, bool allowCoop) {
  GemmSpace g;
  tuning::SearchSpace& space = g.space;
  const ops::CoopDeviceInfo dev = ops::coopDeviceInfo(ctx.device());
  const bool coop = dev.coopMatrix && allowCoop;
  if (coop) {
    for (const codegen::GemmCoopParams& t :
         codegen::gemmCoopTilings(dev.coopM, dev.coopN, dev.coopK, dev.maxSharedBytes, dev.subgroupSize))
      if (!t.workgroupScope && !t.producers)
        g.coopTiles.push_back({t.BM, t.BN, t.BK, t.sgRows, t.sgCols, t.stages});
    for (const char* text : kExtraCoopTiles) {
      const tuning::CoopTile t = tuning::parseCoopTile("tile", text);
      if (std::find(g.coopTiles.begin(), g.coopTiles.end(), t) == g.coopTiles.end()) g.coopTiles.push_back(t);
    }
  }
  for (const codegen::GemmTile& t : codegen::gemmTiledCandidates())
    g.tiledTiles.push_back(t.str());
  // Index 0 of every dimension is "as the policy chooses", so the all-zero candidate is today's default.
  const auto indices = [](size_t n) {
    std::vector<int64_t> v{-1};
    for (size_t i = 0; i < n; ++i)
      v.push_back(int64_t(i));
    return v;
  };
  space.dims.push_back({"kernel", coop ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{1}});
  space.dims.push_back({"coopTile", indices(g.coopTiles.size())});
  space.dims.push_back({"groupM", coop ? std::vector<int64_t>{-1, 0, 4, 8, 16} : std::vector<int64_t>{-1}});
  space.dims.push_back(
      {"kSlices", coop && s.batch == 1 ? std::vector<int64_t>{-1, 1, 2, 4, 8} : std::vector<int64_t>{-1}});
  space.dims.push_back({"pad", coop ? std::vector<int64_t>{-1, 0, 8} : std::vector<int64_t>{-1}});
  space.dims.push_back({"stagedStore", coop ? std::vector<int64_t>{-1, 0} : std::vector<int64_t>{-1}});
  space.dims.push_back({"tiledTile", indices(g.tiledTiles.size())});
  // One spelling per candidate: coop dimensions stay at "policy" on tiled candidates and the other way.
  space.valid = [dims = space.dims](const Candidate& c) {
    const bool tiled = dims[0].values[c[0]] == 1;
    bool coopParts = false;
    for (size_t i = 1; i + 1 < c.size(); ++i)
      coopParts = coopParts || c[i] != 0;
    return tiled ? !coopParts : c.back() == 0;
  };
  return g;
}

tuning::GemmChoice gemmChoice(const GemmSpace& g, const Candidate& c, const tuning::GemmShape& s) {
  const tuning::SearchSpace& space = g.space;
  tuning::GemmChoice choice;
  choice.shape = s;
  choice.kernel = space.value(c, "kernel") == 1 ? tuning::GemmKernel::Tiled : tuning::GemmKernel::Coop;
  if (const int64_t t = space.value(c, "coopTile"); t >= 0) choice.tile = g.coopTiles[size_t(t)];
  if (const int64_t v = space.value(c, "groupM"); v >= 0) choice.groupM = uint32_t(v);
  if (const int64_t v = space.value(c, "kSlices"); v >= 0) choice.kSlices = uint32_t(v);
  if (const int64_t v = space.value(c, "pad"); v >= 0)
    choice.pad = tuning::SharedPad{uint32_t(v), uint32_t(v)};
  if (space.value(c, "stagedStore") == 0) choice.stagedStore = false;
  if (const int64_t t = space.value(c, "tiledTile"); t >= 0) choice.tiled = g.tiledTiles[size_t(t)];
  return choice;
}

GemmTuneResult tuneGemm(vk::Context& ctx, const tuning::GemmShape& shape, const tuning::Tuning& base,
                        const GemmTuneOptions& o) {
  GemmTuneResult result;
  Operands ops_ = makeOperands(ctx, shape, o.seed);
  const GemmSpace space = gemmSpace(ctx, shape, o.allowCoop);
  const auto reject = [&](const tuning::GemmChoice& g, const std::string& gate, const std::string& why) {
    ++result.rejected;
    if (result.rejections.size() < 8) result.rejections.push_back(describe(g) + ": " + gate + ": " + why);
    return kRejected;
  };
  std::set<std::string> kernels; // the planned kernels timed so far
  const auto cost = [&](const Candidate& c) -> double {
    const tuning::GemmChoice g = gemmChoice(space, c, shape);
    tuning::Tuning record = base;
    tuning::putGemm(record, g, tuning::Source::File);
    try {
      const Planned k = planned(ctx, ops_.args, record);
      if (!k.invalid.empty()) return reject(g, "spirv-val", k.invalid);
      // A choice the plan does not take (a tiling that does not divide, K slices on a batch, ...) runs a
      // kernel already timed: not timed again, and never recorded as a choice.
      if (!kernels.insert(k.key).second) {
        ++result.duplicates;
        return kRejected;
      }
    } catch (const std::exception& e) {
      return reject(g, "parameters", e.what());
    }
    std::vector<float> first;
    double error = 0;
    for (int run = 0; run < 3; ++run) {
      poisonC(ctx, ops_, shape);
      WatchingExecutor exec(ctx);
      try {
        o.runner(exec, ops_.args, record);
        exec.flush();
      } catch (const std::exception& e) {
        return reject(g, "pipeline", e.what());
      }
      if (run == 0)
        if (const std::string why = spillGate(ctx, exec); !why.empty()) return reject(g, "spills", why);
      std::vector<float> got = readC(ctx, ops_, shape);
      if (run == 0) {
        error = maxError(ops_, got, shape, o.samples, o.seed + 1);
        if (!(error <= o.maxError)) return reject(g, "max error", std::to_string(error));
        first = std::move(got);
      } else if (std::memcmp(first.data(), got.data(), first.size() * sizeof(float)) != 0) {
        return reject(g, "determinism", "run " + std::to_string(run + 1) + " differs from run 1");
      }
    }
    // Timing records many calls before any completes: a candidate whose per-call scratch (K-slice partial
    // tiles) does not fit that many times is rejected, not the run.
    try {
      const double us = timeUs(ctx, o.timing, [&](ops::Executor& e) { o.runner(e, ops_.args, record); });
      return us * (1.0 + o.errorWeight * error / o.maxError);
    } catch (const std::exception& e) {
      return reject(g, "timing", e.what());
    }
  };
  tuning::SearchOptions so;
  so.seed = o.seed;
  so.maxEvaluations = o.maxEvaluations;
  so.stop = o.stop;
  so.progress = [&](uint32_t n, const tuning::Scored& best) {
    if (o.progress) o.progress(n, best.cost);
  };
  const Candidate start(space.space.dims.size(), 0);
  const std::vector<tuning::Scored> all = tuning::evolve(space.space, start, cost, so);
  result.evaluated = static_cast<uint32_t>(all.size());
  for (const tuning::Scored& s : all)
    if (s.candidate == start) result.defaultUs = std::isfinite(s.cost) ? s.cost : 0;
  if (!all.empty() && std::isfinite(all.front().cost)) {
    const Candidate& winner = all.front().candidate;
    const Pick pick = pickWinner(result.defaultUs, all.front().cost, o.minGain, [&](bool timeWinner) {
      tuning::Tuning record = base;
      tuning::putGemm(record, gemmChoice(space, timeWinner ? winner : start, shape), tuning::Source::File);
      return timeUs(ctx, o.timing, [&](ops::Executor& e) { o.runner(e, ops_.args, record); });
    });
    result.defaultUs = pick.defaultUs;
    result.best = gemmChoice(space, pick.winner ? winner : start, shape);
    result.bestUs = pick.chosenUs;
  }
  return result;
}

} // namespace helios::tune
