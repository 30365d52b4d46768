// The chunked LM head + cross-entropy (autograd::headCrossEntropy) against float64: per-row loss, dx and dW,
// with rows that do not divide into the chunks, an ignored target, f32 and f16 operands; and the chunk size.
#include "autograd_test_util.hpp"
#include "engine/autograd/ops.hpp"
#include "engine/core/half.hpp"
#include "engine/ops/elementwise.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <cmath>
#include <random>

using namespace helios;
using namespace helios::autograd_test;
using autograd::DType;
using autograd::Tape;
using autograd::Tensor;

namespace {

// Values exactly representable in the operand type (f16-rounded when f16), as doubles and as device bytes.
struct Operand {
  std::vector<double> values;
  vk::Buffer buffer;
};
Operand makeOperand(size_t n, float lo, float hi, DType type, const char* what) {
  Operand o;
  const auto r = test::randomFloats(n, lo, hi);
  if (type == DType::F16) {
    std::vector<uint16_t> h(n);
    for (size_t i = 0; i < n; ++i)
      o.values.push_back(halfToFloat(h[i] = floatToHalf(r[i])));
    o.buffer = ctx().buffer(n * 2, what);
    ctx().uploadVector(o.buffer, h);
  } else {
    o.values.assign(r.begin(), r.end());
    o.buffer = upload(r, what);
  }
  return o;
}

} // namespace

TEST_CASE("chunked head loss: loss, dx and dW against float64 over uneven chunks", "[model][head-loss]") {
  const DType type = GENERATE(DType::F32, DType::F16);
  const auto& f = ctx().device().features();
  if (type == DType::F16 && !(f.shaderFloat16 && f.storageBuffer16BitAccess)) SKIP("no 16-bit storage");
  const uint32_t rows = 200, V = 131, C = 24, chunk = GENERATE(64u, 0u); // 64: chunks of 64, 64, 64, 8
  const Operand x = makeOperand(size_t(rows) * C, -2, 2, type, "x"),
                w = makeOperand(size_t(V) * C, -1, 1, type, "w");
  std::uniform_int_distribution<int32_t> pick(0, int32_t(V) - 1);
  std::vector<int32_t> targets(rows);
  for (auto& t : targets)
    t = pick(test::rng());
  targets[77] = -1; // ignored: no loss, no gradient
  vk::Buffer tb = ctx().buffer(rows * 4, "targets");
  ctx().uploadVector(tb, targets);
  vk::Buffer gx = upload(std::vector<float>(x.values.size(), 0.0f), "gx"),
             gw = upload(std::vector<float>(w.values.size(), 0.0f), "gw");
  ops::ImmediateExecutor exec(ctx());
  graph::StepArena arena(ctx());
  autograd::Workspace ws(arena);
  Tape tape(exec, ws);
  Tensor xt = Tensor::parameter(x.buffer.range(), gx.range(), {rows, C});
  Tensor wt = Tensor::parameter(w.buffer.range(), gw.range(), {V, C});
  xt.dtype = wt.dtype = type;
  const float scale = 1.0f / rows;
  autograd::HeadLossSpec spec;
  spec.chunkRows = chunk;
  const Tensor loss = autograd::headCrossEntropy(tape, xt, wt, tb.range(), scale, spec);
  tape.backward();
  vk::Buffer lossHost = upload(std::vector<float>(rows, -7.0f), "loss");
  ops::copy(exec, loss.data, lossHost.range(), rows);
  exec.flush();

  ref::Vec lossRef(rows, 0.0), dx(x.values.size(), 0.0), dw(w.values.size(), 0.0);
  for (uint32_t r = 0; r < rows; ++r) {
    if (targets[r] < 0) continue;
    std::vector<double> z(V, 0.0);
    double mx = -1e300, sum = 0;
    for (uint32_t c = 0; c < V; ++c) {
      for (uint32_t k = 0; k < C; ++k)
        z[c] += x.values[size_t(r) * C + k] * w.values[size_t(c) * C + k];
      mx = std::max(mx, z[c]);
    }
    for (double v : z)
      sum += std::exp(v - mx);
    lossRef[r] = mx + std::log(sum) - z[size_t(targets[r])];
    for (uint32_t c = 0; c < V; ++c) {
      const double d = (std::exp(z[c] - mx) / sum - (int32_t(c) == targets[r])) * scale;
      for (uint32_t k = 0; k < C; ++k) {
        dx[size_t(r) * C + k] += d * w.values[size_t(c) * C + k];
        dw[size_t(c) * C + k] += d * x.values[size_t(r) * C + k];
      }
    }
  }
  const auto lossGot = download(lossHost, rows);
  CHECK(lossGot[77] == 0.0f);
  const bool half = type == DType::F16; // f16 logits and gradients: rounded to 11 bits
  CHECK(ref::maxAbsError(lossGot, lossRef) < (half ? 2e-2 : 1e-4));
  CHECK(ref::relError(download(gx, dx.size()), dx) < (half ? 5e-3 : 1e-5));
  CHECK(ref::relError(download(gw, dw.size()), dw) < (half ? 5e-3 : 1e-5));
}

TEST_CASE("chunked head loss: chunks of a multiple of 128 rows within the byte budget",
          "[model][head-loss]") {
  // GPT-2 small at B16 x T1024: 256 MiB of f16 logits hold 2668 rows of 50304, so 7 chunks of 2432 rows
  // (the last 1792).
  CHECK(autograd::headChunkRows(16384, 50304, 256ull << 20) == 2432);
  CHECK(autograd::headChunkRows(16384, 65, 256ull << 20) == 16384); // a small vocabulary: one chunk
  CHECK(autograd::headChunkRows(1000, 50304, 1) == 128);            // never fewer than 128 rows
  CHECK(autograd::headChunkRows(100, 50304, 1) == 100);             // nor more than there are
}
