#include "codegen/kernels/norm.hpp"

#include "codegen/kernels/elem_io.hpp"

#include <stdexcept>

namespace helios::codegen {

using namespace helios::spv;

const char* toString(NormKind k) {
  return k == NormKind::LayerNorm ? "layernorm" : "rmsnorm";
}

const char* toString(NormPass p) {
  switch (p) {
  case NormPass::Forward:
    return "fwd";
  case NormPass::BackwardRows:
    return "bwd_rows";
  }
  return "?";
}

std::string NormParams::cacheKey() const {
  return std::string("norm:") + toString(kind) + ":" + toString(pass) +
         ":f32:" + (isHalf(out) ? std::string(elemName(out)) + "out:" : "") +
         rowKernelKeySuffix(localSize, strategy) + (accumulate ? ":acc" : "") + (vec4 ? ":v4" : "") +
         (residual ? ":res" : "");
}

namespace {

Kernel finish(Module& m, const NormParams& p, const PushConstants& pc, uint32_t numBuffers) {
  std::string name = std::string("norm_") + toString(p.kind) + "_" + toString(p.pass) + "_f32" +
                     (isHalf(p.out) ? "_" + std::string(elemName(p.out)) + "out" : "") +
                     (p.accumulate ? "_acc" : "") + (p.vec4 ? "_v4" : "") + (p.residual ? "_res" : "") +
                     "_wg" + std::to_string(p.localSize) + "_" + toString(p.strategy);
  return linearKernel(std::move(name), p.cacheKey(), m.build(), numBuffers, pc.size, p.localSize);
}

// Column elements as scalars or, with p.vec4, as 4-vectors: `width` of them per row; scalars splat to the
// element type and per-invocation sums fold to one float before the workgroup reduction.
struct Lanes {
  FunctionBuilder& f;
  TypeId type; // f32 or vec4
  bool vec4;
  Value splat(Value s) const { return vec4 ? f.splat(type, s) : s; }
  Value fold(Value v) const { return vec4 ? f.dot(v, splat(f.f32(1.0f))) : v; }
  Value width(Value cols) const { return vec4 ? f.shr(cols, f.u32(2)) : cols; }
  Value zero(Module& m) const {
    const Value z = f.f32(0.0f);
    return vec4 ? m.constComposite(type, {z, z, z, z}) : z;
  }
};

Kernel forward(const NormParams& p) {
  const bool ln = p.kind == NormKind::LayerNorm;
  Module m;
  const TypeId f32 = m.f32();
  m.u32(); // the uint type keeps its place (byte-identical kernels)
  const TypeId el = p.vec4 ? m.vectorType(f32, 4) : f32;
  const TypeId yEl = isHalf(p.out) ? elemStorageType(m, p.out, p.vec4 ? 4 : 1) : el;
  uint32_t b = 0;
  const Buffer x = m.storageBuffer(b++, el, Access::ReadOnly);
  const Buffer gamma = m.storageBuffer(b++, el, Access::ReadOnly);
  const Buffer beta = ln ? m.storageBuffer(b++, el, Access::ReadOnly) : Buffer{};
  const Buffer y = m.storageBuffer(b++, yEl, Access::WriteOnly);
  const Buffer mean = ln ? m.storageBuffer(b++, f32, Access::WriteOnly) : Buffer{};
  const Buffer rstd = m.storageBuffer(b++, f32, Access::WriteOnly);
  const Buffer r = p.residual ? m.storageBuffer(b++, el, Access::ReadOnly) : Buffer{};
  const Buffer sum = p.residual ? m.storageBuffer(b++, el, Access::WriteOnly) : Buffer{};
  const PushConstants pc = declarePush<NormPush>(m);
  const WorkgroupReducer reducer(m, p.localSize, p.strategy);
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  const Lanes v{f, el, p.vec4};

  const Value row = rowIndex(f);
  const Value rows = f.loadPush(pc, 0), cols = f.loadPush(pc, 1), eps = f.loadPush(pc, 2);
  f.ifThen(f.ge(row, rows), [&] { f.ret(); });
  const Value width = v.width(cols);
  const Value base = f.imul(row, width);
  const Value colsF = f.convert(cols, f32);
  const Value acc = f.variable(el, v.zero(m));
  // x[i], or with a residual s[i] = x[i] + r[i] (written to s by the row's first pass).
  const auto loadX = [&](Value i, bool first) {
    if (!p.residual) return f.loadAt(x, i);
    const Value s = f.fadd(f.loadAt(x, i), f.loadAt(r, i));
    if (first) f.storeAt(sum, i, s);
    return s;
  };

  Value mu = f.f32(0.0f);
  if (ln) {
    forColumns(f, width, p.localSize,
               [&](Value j) { f.store(acc, f.fadd(f.load(acc), loadX(f.iadd(base, j), true))); });
    mu = f.fdiv(reducer.reduce(f, v.fold(f.load(acc)), Combine::Sum), colsF);
    f.store(acc, v.zero(m));
  }
  const Value muV = v.splat(mu);
  // Sum of squares about the mean (LayerNorm) or about 0 (RMSNorm).
  forColumns(f, width, p.localSize, [&](Value j) {
    const Value d = ln ? f.fsub(loadX(f.iadd(base, j), false), muV) : loadX(f.iadd(base, j), true);
    f.store(acc, f.fma(d, d, f.load(acc)));
  });
  const Value var = f.fdiv(reducer.reduce(f, v.fold(f.load(acc)), Combine::Sum), colsF);
  const Value rs = f.inverseSqrt(f.fadd(var, eps));
  const Value rsV = v.splat(rs);
  forColumns(f, width, p.localSize, [&](Value j) {
    const Value i = f.iadd(base, j);
    const Value xv = loadX(i, false);
    const Value g = f.loadAt(gamma, j);
    const Value xhat = ln ? f.fmul(f.fsub(xv, muV), rsV) : f.fmul(xv, rsV);
    const Value yv = ln ? f.fma(xhat, g, f.loadAt(beta, j)) : f.fmul(xhat, g);
    f.storeAt(y, i, isHalf(p.out) ? elemFromF32(f, p.out, yv) : yv);
  });
  f.ifThen(f.eq(f.localId(0), f.u32(0)), [&] {
    if (ln) f.storeAt(mean, row, mu);
    f.storeAt(rstd, row, rs);
  });
  f.ret();
  return finish(m, p, pc, b);
}

Kernel backwardRows(const NormParams& p) {
  const bool ln = p.kind == NormKind::LayerNorm;
  Module m;
  const TypeId f32 = m.f32();
  m.u32(); // the uint type keeps its place (byte-identical kernels)
  const TypeId el = p.vec4 ? m.vectorType(f32, 4) : f32;
  uint32_t b = 0;
  const Buffer x = m.storageBuffer(b++, el, Access::ReadOnly);
  const Buffer gamma = m.storageBuffer(b++, el, Access::ReadOnly);
  const Buffer dy = m.storageBuffer(b++, el, Access::ReadOnly);
  const Buffer mean = ln ? m.storageBuffer(b++, f32, Access::ReadOnly) : Buffer{};
  const Buffer rstd = m.storageBuffer(b++, f32, Access::ReadOnly);
  const Buffer dx = m.storageBuffer(b++, el, p.accumulate ? Access::ReadWrite : Access::WriteOnly);
  const Buffer partials = m.storageBuffer(b++, el, Access::ReadWrite);
  const bool dxHalf = isHalf(p.out);
  const Buffer dx16 =
      dxHalf ? m.storageBuffer(b++, elemStorageType(m, p.out, p.vec4 ? 4 : 1), Access::WriteOnly) : Buffer{};
  const PushConstants pc = declarePush<NormBackwardPush>(m);
  const WorkgroupReducer reducer(m, p.localSize, p.strategy);
  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  const Lanes v{f, el, p.vec4};

  const Value block = f.workgroupId(0);
  const Value rows = f.loadPush(pc, 0), cols = f.loadPush(pc, 1), blockRows = f.loadPush(pc, 2);
  const Value first = f.imul(block, blockRows);
  f.ifThen(f.ge(first, rows), [&] { f.ret(); });
  const Value last = f.umin(rows, f.iadd(first, blockRows));
  const Value width = v.width(cols);
  // partials layout: [part][numBlocks][cols]; part 0 dgamma, part 1 dbeta.
  const Value numBlocks = f.builtin(BuiltIn::NumWorkgroups, 0);
  const Value gammaBase = f.imul(block, width);
  const Value betaBase = f.iadd(f.imul(numBlocks, width), gammaBase);
  const Value invCols = f.fdiv(f.f32(1.0f), f.convert(cols, f32));
  const Value acc1 = f.variable(el), acc2 = f.variable(el);

  f.forRange(first, last, [&](Value row) {
    const Value base = f.imul(row, width);
    const Value mu = v.splat(ln ? f.loadAt(mean, row) : f.f32(0.0f));
    const Value rsS = f.loadAt(rstd, row), rs = v.splat(rsS);
    const Value isFirst = f.eq(row, first);
    // xhat (LayerNorm) or x (RMSNorm), and g = dy * gamma.
    const auto xhatOf = [&](Value xv) { return ln ? f.fmul(f.fsub(xv, mu), rs) : xv; };
    f.store(acc1, v.zero(m));
    f.store(acc2, v.zero(m));
    forColumns(f, width, p.localSize, [&](Value j) {
      const Value i = f.iadd(base, j);
      const Value xh = xhatOf(f.loadAt(x, i));
      const Value dyv = f.loadAt(dy, i);
      const Value g = f.fmul(dyv, f.loadAt(gamma, j));
      if (ln) f.store(acc1, f.fadd(f.load(acc1), g));
      f.store(acc2, f.fma(g, xh, f.load(acc2)));
    });
    const Value meanG =
        v.splat(ln ? f.fmul(reducer.reduce(f, v.fold(f.load(acc1)), Combine::Sum), invCols) : f.f32(0.0f));
    const Value meanGX = f.fmul(reducer.reduce(f, v.fold(f.load(acc2)), Combine::Sum), invCols);
    // RMSNorm: dx = rstd * (g - x * rstd^2 * mean(g*x)) = rstd * (g - x * k), k = rstd^2 * mean(g*x).
    const Value k = v.splat(ln ? meanGX : f.fmul(f.fmul(rsS, rsS), meanGX));
    forColumns(f, width, p.localSize, [&](Value j) {
      const Value i = f.iadd(base, j);
      const Value xv = f.loadAt(x, i);
      const Value xh = xhatOf(xv);
      const Value dyv = f.loadAt(dy, i);
      const Value g = f.fmul(dyv, f.loadAt(gamma, j));
      const Value inner = ln ? f.fsub(f.fsub(g, meanG), f.fmul(xh, k)) : f.fsub(g, f.fmul(xv, k));
      const Value dxv = f.fmul(rs, inner);
      const Value dxSum = p.accumulate ? f.fadd(f.loadAt(dx, i), dxv) : dxv;
      f.storeAt(dx, i, dxSum);
      if (dxHalf) f.storeAt(dx16, i, elemFromF32(f, p.out, dxSum));
      // Partial sums of this block: the first row stores, later rows add (the load of the first row's
      // stale value is discarded by the select, so the scratch needs no clearing).
      const Value gp = f.iadd(gammaBase, j);
      const Value dgamma = ln ? f.fmul(dyv, xh) : f.fmul(f.fmul(dyv, xv), rs);
      const Value oldG = f.loadAt(partials, gp);
      f.storeAt(partials, gp, f.select(isFirst, dgamma, f.fadd(oldG, dgamma)));
      if (ln) {
        const Value bp = f.iadd(betaBase, j);
        const Value oldB = f.loadAt(partials, bp);
        f.storeAt(partials, bp, f.select(isFirst, dyv, f.fadd(oldB, dyv)));
      }
    });
  });
  f.ret();
  return finish(m, p, pc, b);
}

} // namespace

Kernel generateNorm(const NormParams& p) {
  checkRowLocalSize(p.localSize, "norm");
  if (p.accumulate && p.pass != NormPass::BackwardRows)
    throw std::invalid_argument("norm: accumulate is for the backward pass");
  if (p.residual && p.pass != NormPass::Forward)
    throw std::invalid_argument("norm: a residual input is for the forward pass");
  switch (p.pass) {
  case NormPass::Forward:
    return forward(p);
  case NormPass::BackwardRows:
    return backwardRows(p);
  }
  throw BuildError("norm: unknown pass");
}

void registerNorm(KernelRegistry& registry) {
  registry.add({"rows.norm_f32",
                "LayerNorm / RMSNorm forward, backward rows (dx + block partials; ops::columnSum sums those)",
                [] { return generateNorm({}); },
                [] {
                  std::vector<Kernel> ks;
                  for (auto kind : {NormKind::LayerNorm, NormKind::RmsNorm})
                    for (auto pass : {NormPass::Forward, NormPass::BackwardRows})
                      for (uint32_t wg : {32u, 64u, 128u, 256u, 512u, 1024u})
                        for (auto s : {ReduceStrategy::Subgroup, ReduceStrategy::SharedTree}) {
                          ks.push_back(generateNorm({kind, pass, wg, s}));
                          ks.push_back(generateNorm({kind, pass, wg, s, Elem::F32, false, true}));
                          for (bool v4 : {false, true}) {
                            if (pass == NormPass::Forward)
                              for (Elem out : {Elem::F16, Elem::BF16})
                                ks.push_back(generateNorm({kind, pass, wg, s, out, false, v4}));
                            else
                              ks.push_back(generateNorm({kind, pass, wg, s, Elem::F32, true, v4}));
                          }
                          // Forward with the residual add; backward with dx's 16-bit copy (appended: the
                          // kernels above keep their order).
                          if (pass == NormPass::Forward)
                            for (Elem out : {Elem::F32, Elem::F16, Elem::BF16})
                              for (bool v4 : {false, true}) {
                                NormParams np{kind, pass, wg, s, out, false, v4};
                                np.residual = true;
                                ks.push_back(generateNorm(np));
                              }
                          if (pass == NormPass::BackwardRows)
                            for (Elem out : {Elem::F16, Elem::BF16})
                              for (bool acc : {false, true})
                                for (bool v4 : {false, true})
                                  ks.push_back(generateNorm({kind, pass, wg, s, out, acc, v4}));
                        }
                  return ks;
                }});
}

} // namespace helios::codegen
