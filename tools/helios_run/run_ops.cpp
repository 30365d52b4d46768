#include "run_ops.hpp"

#include "engine/core/half.hpp"
#include "engine/ops/attention.hpp"
#include "engine/ops/cross_entropy.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/matmul.hpp"
#include "engine/ops/norm.hpp"
#include "engine/ops/operand_shapes.hpp"
#include "engine/ops/softmax.hpp"

#include <cmath>
#include <fmt/format.h>

namespace helios::run {

namespace {

uint32_t checked32(uint64_t v, const std::string& what) {
  if (v == 0 || v > 0x7fffffffu)
    throw UsageError(fmt::format("{} = {} is out of range (1 .. 2^31-1)", what, v));
  return static_cast<uint32_t>(v);
}

// rows = product of all but the last dimension, cols = the last dimension.
std::pair<uint32_t, uint32_t> rowsCols(const io::NpyArray& a, const std::string& name) {
  if (a.shape.empty()) throw UsageError(name + " must have at least one dimension");
  uint64_t rows = 1;
  for (size_t i = 0; i + 1 < a.shape.size(); ++i)
    rows *= a.shape[i];
  return {checked32(rows, name + " rows"), checked32(a.shape.back(), name + " columns")};
}

io::NpyArray requireFloat(const std::string& path, const std::string& name, bool allowF16) {
  auto a = io::readNpy(path);
  if (a.dtype == io::NpyDType::I32 || (!allowF16 && a.dtype == io::NpyDType::F16))
    throw UsageError(fmt::format("{} ({}) is {}; expected float32{}", name, path, io::npyDTypeName(a.dtype),
                                 allowF16 ? " or float16" : ""));
  return a;
}

vk::Buffer uploadArray(vk::Context& ctx, const io::NpyArray& a, const char* what) {
  auto buf = ctx.buffer(std::max<size_t>(a.data.size(), 4), what);
  if (!a.data.empty()) ctx.upload(buf, a.data);
  return buf;
}

std::vector<float> downloadFloats(vk::Context& ctx, const vk::Buffer& buf, size_t n) {
  return ctx.downloadVector<float>(buf, n);
}

} // namespace

io::NpyArray runMatmul(vk::Context& ctx, const MatmulOptions& o) {
  auto a = requireFloat(o.a, "A", true), b = requireFloat(o.b, "B", true);
  if (a.dtype != b.dtype)
    throw UsageError(fmt::format("A is {} but B is {}; both must be float32 or both float16",
                                 npyDTypeName(a.dtype), npyDTypeName(b.dtype)));
  const bool f16In = a.dtype == io::NpyDType::F16;
  const bool f16Out = o.outDtype == "f16";
  if (f16Out && !f16In) throw UsageError("--out-dtype f16 needs float16 inputs");
  const io::NpyDType outType = f16Out ? io::NpyDType::F16 : io::NpyDType::F32;
  auto [args, outShape] = ops::matmulSizes(a.shape, b.shape, o.transposeA, o.transposeB);
  const uint64_t batch = args.batch, M = args.M, N = args.N;
  args.alpha = o.alpha;
  args.beta = o.beta;
  args.gelu = o.gelu;
  args.aType = f16In ? ops::MatmulDType::F16 : ops::MatmulDType::F32;
  args.outType = f16Out ? ops::MatmulDType::F16 : ops::MatmulDType::F32;
  args.kernel = o.kernel == "coop"    ? ops::MatmulKernel::Coop
                : o.kernel == "tiled" ? ops::MatmulKernel::Tiled
                                      : ops::MatmulKernel::Auto;

  io::NpyArray cIn;
  if (!o.c.empty()) {
    cIn = requireFloat(o.c, "C", true);
    if (cIn.shape != outShape || cIn.dtype != outType)
      throw UsageError(fmt::format("C is {} {}; the product is {} {}", npyDTypeName(cIn.dtype),
                                   cIn.shapeString(), npyDTypeName(outType),
                                   io::NpyArray{outType, outShape, {}}.shapeString()));
  } else if (o.beta != 0.0f) {
    throw UsageError("--beta needs --c");
  }
  io::NpyArray biasIn;
  if (!o.bias.empty()) {
    biasIn = requireFloat(o.bias, "bias", true);
    if (biasIn.shape != std::vector<uint64_t>{N} || biasIn.dtype != outType)
      throw UsageError(fmt::format("bias is {} {}; expected {} ({},)", npyDTypeName(biasIn.dtype),
                                   biasIn.shapeString(), npyDTypeName(outType), N));
  }

  auto bufA = uploadArray(ctx, a, "matmul A"), bufB = uploadArray(ctx, b, "matmul B");
  const size_t outBytes = batch * M * N * (f16Out ? 2 : 4);
  auto bufC = ctx.buffer(outBytes, "matmul C");
  if (!o.c.empty()) ctx.upload(bufC, cIn.data);
  vk::Buffer bufBias;
  if (!o.bias.empty()) {
    bufBias = uploadArray(ctx, biasIn, "matmul bias");
    args.bias = bufBias.range();
  }
  args.a = bufA.range();
  args.b = bufB.range();
  args.c = bufC.range();
  ops::ImmediateExecutor exec(ctx);
  ops::matmul(exec, args);
  exec.flush();
  io::NpyArray out{outType, outShape, std::vector<std::byte>(outBytes)};
  ctx.download(bufC, out.data);
  return out;
}

io::NpyArray runSoftmax(vk::Context& ctx, const RowOptions& o) {
  auto x = requireFloat(o.x, "x", false);
  auto [rows, cols] = rowsCols(x, "x");
  auto bx = uploadArray(ctx, x, "softmax x"), by = ctx.buffer(x.data.size(), "softmax y");
  ops::ImmediateExecutor exec(ctx);
  ops::SoftmaxOptions so;
  so.scale = o.scale;
  if (o.causal) {
    if (x.shape.size() < 2 || x.shape[x.shape.size() - 2] > cols)
      throw UsageError("--causal needs x of shape (..., queries, keys) with queries <= keys");
    so.causalQueries = static_cast<uint32_t>(x.shape[x.shape.size() - 2]);
  }
  ops::softmax(exec, bx.range(), by.range(), rows, cols, so);
  exec.flush();
  return io::NpyArray::fromFloat(downloadFloats(ctx, by, x.elements()), x.shape);
}

io::NpyArray runLayerNorm(vk::Context& ctx, const RowOptions& o) {
  auto x = requireFloat(o.x, "x", false);
  auto [rows, cols] = rowsCols(x, "x");
  auto param = [&](const std::string& path, const char* name, float fill) {
    if (path.empty()) return io::NpyArray::fromFloat(std::vector<float>(cols, fill), {cols});
    auto p = requireFloat(path, name, false);
    if (p.shape != std::vector<uint64_t>{cols})
      throw UsageError(fmt::format("{} is {}; expected ({},) to match the last dimension of x", name,
                                   p.shapeString(), cols));
    return p;
  };
  auto gamma = param(o.gamma, "gamma", 1.0f), beta = param(o.beta, "beta", 0.0f);
  auto bx = uploadArray(ctx, x, "layernorm x"), bg = uploadArray(ctx, gamma, "gamma"),
       bb = uploadArray(ctx, beta, "beta");
  auto by = ctx.buffer(x.data.size(), "layernorm y"), mean = ctx.buffer(rows * 4, "mean"),
       rstd = ctx.buffer(rows * 4, "rstd");
  ops::ImmediateExecutor exec(ctx);
  ops::layerNorm(exec, bx.range(), bg.range(), bb.range(), by.range(), mean.range(), rstd.range(), rows, cols,
                 o.eps);
  exec.flush();
  return io::NpyArray::fromFloat(downloadFloats(ctx, by, x.elements()), x.shape);
}

io::NpyArray runGelu(vk::Context& ctx, const RowOptions& o) {
  auto x = requireFloat(o.x, "x", false);
  const uint32_t n = checked32(x.elements(), "elements of x");
  auto bx = uploadArray(ctx, x, "gelu x"), by = ctx.buffer(x.data.size(), "gelu y");
  ops::ImmediateExecutor exec(ctx);
  ops::activation(exec, ops::Activation::Gelu, bx.range(), by.range(), n);
  exec.flush();
  return io::NpyArray::fromFloat(downloadFloats(ctx, by, n), x.shape);
}

io::NpyArray runAttention(vk::Context& ctx, const AttentionOptions& o) {
  auto q = requireFloat(o.q, "q", false), k = requireFloat(o.k, "k", false),
       v = requireFloat(o.v, "v", false);
  ops::AttentionShape s = ops::attentionSizes(q.shape, k.shape, v.shape, o.causal, o.scale);
  s.kernel = o.kernel == "coop"   ? ops::AttentionKernel::Coop
             : o.kernel == "auto" ? ops::AttentionKernel::Auto
                                  : ops::AttentionKernel::Fallback;
  auto bq = uploadArray(ctx, q, "attention q"), bk = uploadArray(ctx, k, "attention k"),
       bv = uploadArray(ctx, v, "attention v");
  auto bo = ctx.buffer(q.data.size(), "attention o"),
       lse = ctx.buffer(uint64_t{s.batch} * s.heads * s.Tq * 4, "attention lse");
  ops::ImmediateExecutor exec(ctx);
  try {
    ops::attentionForward(exec, bq.range(), bk.range(), bv.range(), bo.range(), lse.range(), s);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  exec.flush();
  return io::NpyArray::fromFloat(downloadFloats(ctx, bo, q.elements()), q.shape);
}

std::map<std::string, io::NpyArray> runCrossEntropy(vk::Context& ctx, const CrossEntropyOptions& o) {
  auto logits = requireFloat(o.logits, "logits", false);
  auto targets = io::readNpy(o.targets);
  if (targets.dtype != io::NpyDType::I32)
    throw UsageError(
        fmt::format("targets ({}) are {}; expected int32", o.targets, npyDTypeName(targets.dtype)));
  auto [rows, vocab] = rowsCols(logits, "logits");
  std::vector<uint64_t> lead(logits.shape.begin(), logits.shape.end() - 1);
  if (targets.shape != lead)
    throw UsageError(fmt::format("targets are {}; logits {} need targets of shape {}", targets.shapeString(),
                                 logits.shapeString(),
                                 io::NpyArray{io::NpyDType::I32, lead, {}}.shapeString()));
  auto bl = uploadArray(ctx, logits, "logits"), bt = uploadArray(ctx, targets, "targets");
  auto loss = ctx.buffer(rows * 4, "loss"), grad = ctx.buffer(logits.data.size(), "dlogits");
  ops::ImmediateExecutor exec(ctx);
  ops::crossEntropy(exec, bl.range(), bt.range(), loss.range(), grad.range(), rows, vocab,
                    o.gradScale != 0.0f ? o.gradScale : 1.0f / static_cast<float>(rows));
  exec.flush();
  std::map<std::string, io::NpyArray> out;
  out["loss"] = io::NpyArray::fromFloat(downloadFloats(ctx, loss, rows),
                                        lead.empty() ? std::vector<uint64_t>{1} : lead);
  if (o.wantGrad)
    out["grad"] = io::NpyArray::fromFloat(downloadFloats(ctx, grad, logits.elements()), logits.shape);
  return out;
}

} // namespace helios::run
