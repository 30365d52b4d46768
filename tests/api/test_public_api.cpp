// The public API against float64 references, through libhelios.so alone (no engine header is included):
// matmul (odd and aligned sizes, transposed, batched, alpha/beta, f16), attention (causal, grouped-query),
// the graph's record and replay, device info, and the refusals that come before anything runs.
#include <helios/helios.hpp>

#include "support/random.hpp"
#include "support/reference.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <limits>

using Catch::Matchers::ContainsSubstring;
using helios::DType;
using helios::Tensor;

namespace {

const helios::Device& device() {
  static const helios::Device d = helios::Device::open();
  return d;
}

std::vector<double> attentionReference(const std::vector<float>& q, const std::vector<float>& k,
                                       const std::vector<float>& v, uint32_t B, uint32_t H, uint32_t KH,
                                       uint32_t Tq, uint32_t Tk, uint32_t D, bool causal, double scale) {
  std::vector<double> o(size_t(B) * H * Tq * D, 0.0);
  for (uint32_t b = 0; b < B; ++b)
    for (uint32_t h = 0; h < H; ++h) {
      const size_t qh = (size_t(b) * H + h) * Tq * D, kh = (size_t(b) * KH + h / (H / KH)) * Tk * D;
      for (uint32_t i = 0; i < Tq; ++i) {
        std::vector<double> s(Tk, -std::numeric_limits<double>::infinity());
        double m = s[0];
        for (uint32_t j = 0; j < Tk; ++j) {
          if (causal && j > i + Tk - Tq) continue;
          double dot = 0;
          for (uint32_t d = 0; d < D; ++d)
            dot += double(q[qh + size_t(i) * D + d]) * k[kh + size_t(j) * D + d];
          s[j] = scale * dot;
          m = std::max(m, s[j]);
        }
        double sum = 0;
        for (double& x : s)
          sum += (x = std::exp(x - m));
        for (uint32_t j = 0; j < Tk; ++j)
          for (uint32_t d = 0; d < D; ++d)
            o[qh + size_t(i) * D + d] += s[j] / sum * v[kh + size_t(j) * D + d];
      }
    }
  return o;
}

std::vector<float> roundedToHalf(const std::vector<float>& v) {
  // Through an f16 tensor and back: the values the GPU sees.
  Tensor t = Tensor::empty(device(), {v.size()}, DType::F16);
  t.write(v);
  return t.toHost();
}

} // namespace

TEST_CASE("api: matmul matches float64 at odd and aligned sizes, transposed and batched", "[api]") {
  struct Case {
    uint32_t M, N, K, batch;
    bool transA, transB, sharedB;
    float alpha, beta;
  };
  for (const Case& c :
       {Case{67, 45, 83, 1, false, false, false, 1, 0}, Case{64, 64, 64, 1, false, true, false, 1, 0},
        Case{33, 17, 9, 3, true, false, true, 1, 0}, Case{20, 31, 40, 2, false, false, false, 0.5f, 2}}) {
    CAPTURE(c.M, c.N, c.K, c.batch, c.transA, c.transB, c.sharedB, c.beta);
    const uint64_t batchB = c.sharedB ? 1 : c.batch;
    auto a = helios::test::randomFloats(size_t(c.batch) * c.M * c.K);
    auto b = helios::test::randomFloats(size_t(batchB) * c.K * c.N);
    auto out = helios::test::randomFloats(size_t(c.batch) * c.M * c.N);
    auto dims = [&](uint64_t n, uint64_t r, uint64_t cols) {
      return c.batch > 1 && n > 1 ? std::vector<uint64_t>{n, r, cols} : std::vector<uint64_t>{r, cols};
    };
    Tensor ta = Tensor::fromHost(device(), dims(c.batch, c.transA ? c.K : c.M, c.transA ? c.M : c.K), a);
    Tensor tb = Tensor::fromHost(device(), dims(batchB, c.transB ? c.N : c.K, c.transB ? c.K : c.N), b);
    Tensor tc =
        Tensor::fromHost(device(), dims(c.batch, c.M, c.N),
                         c.beta != 0 ? out : std::vector<float>(out.size(), helios::test::poisonF32()));
    helios::matmul(ta, tb, tc, {c.transA, c.transB, c.alpha, c.beta, DType::F32});

    helios::ref::Vec ref(out.begin(), out.end());
    for (uint32_t i = 0; i < c.batch; ++i) {
      const size_t sa = size_t(c.M) * c.K, sb = c.sharedB ? 0 : size_t(c.K) * c.N, sc = size_t(c.M) * c.N;
      std::vector<float> ai(a.begin() + i * sa, a.begin() + (i + 1) * sa);
      std::vector<float> bi(b.begin() + i * sb, b.begin() + i * sb + size_t(c.K) * c.N);
      helios::ref::Vec ci(ref.begin() + i * sc, ref.begin() + (i + 1) * sc);
      helios::ref::gemm({c.M, c.N, c.K, 1, c.transA, c.transB, c.alpha, c.beta}, ai, bi, {}, ci);
      std::copy(ci.begin(), ci.end(), ref.begin() + i * sc);
    }
    CHECK(helios::ref::relError(tc.toHost(), ref) < 1e-5);
  }
}

TEST_CASE("api: f16 tensors round to nearest and multiply with f32 accumulation", "[api]") {
  const uint32_t M = 37, N = 29, K = 70;
  const auto a = roundedToHalf(helios::test::randomFloats(size_t(M) * K));
  const auto b = roundedToHalf(helios::test::randomFloats(size_t(K) * N));
  Tensor ta = Tensor::empty(device(), {M, K}, DType::F16), tb = Tensor::empty(device(), {K, N}, DType::F16);
  ta.write(a);
  tb.write(b);
  CHECK(ta.toHost() == a); // already representable: the round trip is exact
  helios::MatmulOptions o;
  o.outType = DType::F16;
  Tensor c = helios::matmul(ta, tb, o);
  REQUIRE(c.dtype() == DType::F16);
  CHECK(c.bytes() == uint64_t(M) * N * 2);
  helios::ref::Vec ref(size_t(M) * N);
  helios::ref::gemm({M, N, K}, a, b, {}, ref);
  CHECK(helios::ref::relError(c.toHost(), ref) < 2e-3); // the result rounded to f16
}

TEST_CASE("api: attention matches float64, causal and grouped-query", "[api]") {
  const uint32_t B = 2, H = 4, KH = 2, Tq = 13, Tk = 21, D = 16;
  const auto q = helios::test::randomFloats(size_t(B) * H * Tq * D);
  const auto k = helios::test::randomFloats(size_t(B) * KH * Tk * D);
  const auto v = helios::test::randomFloats(size_t(B) * KH * Tk * D);
  Tensor tq = Tensor::fromHost(device(), {B, H, Tq, D}, q),
         tk = Tensor::fromHost(device(), {B, KH, Tk, D}, k),
         tv = Tensor::fromHost(device(), {B, KH, Tk, D}, v);
  for (bool causal : {false, true}) {
    CAPTURE(causal);
    Tensor o =
        Tensor::fromHost(device(), {B, H, Tq, D}, std::vector<float>(q.size(), helios::test::poisonF32()));
    helios::attention(tq, tk, tv, o, {causal, 0.3f});
    CHECK(helios::ref::maxAbsError(o.toHost(),
                                   attentionReference(q, k, v, B, H, KH, Tq, Tk, D, causal, 0.3)) < 1e-5);
  }
  const Tensor o = helios::attention(tq, tk, tv); // scale 1/sqrt(D)
  CHECK(helios::ref::maxAbsError(o.toHost(), attentionReference(q, k, v, B, H, KH, Tq, Tk, D, false, 0.25)) <
        1e-5);
}

TEST_CASE("api: a graph records once and replays on new inputs", "[api][graph]") {
  const uint32_t M = 19, N = 23, K = 31;
  auto b = helios::test::randomFloats(size_t(K) * N);
  Tensor ta = Tensor::empty(device(), {M, K}), tb = Tensor::fromHost(device(), {K, N}, b);
  Tensor tc = Tensor::empty(device(), {M, N});
  helios::Graph graph(device());
  for (int run = 0; run < 3; ++run) {
    CAPTURE(run);
    auto a = helios::test::randomFloats(size_t(M) * K);
    ta.write(a);
    tc.write(std::vector<float>(size_t(M) * N, helios::test::poisonF32()));
    int calls = 0;
    graph.record("product", [&] {
      ++calls;
      helios::matmul(ta, tb, tc);
    });
    const helios::GraphStats stats = graph.run();
    CHECK(calls == (run == 0 ? 1 : 0));
    CHECK(stats.replayedSegments == (run == 0 ? 0u : 1u));
    CHECK(stats.dispatches >= 1);
    helios::ref::Vec ref(size_t(M) * N);
    helios::ref::gemm({M, N, K}, a, b, {}, ref);
    CHECK(helios::ref::relError(tc.toHost(), ref) < 1e-5);
  }
  CHECK_THROWS_WITH(graph.record("allocating", [&] { helios::matmul(ta, tb); }),
                    ContainsSubstring("pass the output tensor"));
  graph.run();
  CHECK_NOTHROW(helios::matmul(ta, tb)); // outside a recording the allocating form works again
}

TEST_CASE("api: bad shapes, types and sizes are refused by name", "[api]") {
  Tensor a = Tensor::empty(device(), {4, 5}), b = Tensor::empty(device(), {6, 3});
  CHECK_THROWS_WITH(helios::matmul(a, b), ContainsSubstring("inner dimensions differ"));
  Tensor h = Tensor::empty(device(), {5, 3}, DType::F16);
  CHECK_THROWS_WITH(helios::matmul(a, h), ContainsSubstring("both be f32 or both f16"));
  helios::MatmulOptions f16out;
  f16out.outType = DType::F16;
  CHECK_THROWS_WITH(helios::matmul(a, Tensor::empty(device(), {5, 3}), f16out),
                    ContainsSubstring("f16 inputs"));
  Tensor wrongOut = Tensor::empty(device(), {4, 4});
  CHECK_THROWS_WITH(helios::matmul(a, Tensor::empty(device(), {5, 3}), wrongOut),
                    ContainsSubstring("out is"));
  CHECK_THROWS_WITH(helios::attention(a, a, a), ContainsSubstring("[batch, heads, tokens, headDim]"));
  CHECK_THROWS_WITH(Tensor::empty(device(), {3, 0}), ContainsSubstring("a dimension is 0"));
  CHECK_THROWS_WITH(a.write(std::vector<float>(7)), ContainsSubstring("7 values given"));
  std::vector<float> host(20);
  CHECK_THROWS_WITH(a.read(host.data(), 40), ContainsSubstring("40 bytes given, the tensor holds 80"));
  helios::TrainConfig bad;
  bad.overrides = "[1, 2]";
  CHECK_THROWS_WITH(helios::train(device(), bad), ContainsSubstring("JSON object"));
  bad.overrides = R"({"no_such_key": 1})";
  CHECK_THROWS_AS(helios::train(device(), bad), std::invalid_argument);
}

TEST_CASE("api: device info agrees with the device list", "[api]") {
  const helios::DeviceInfo& info = device().info();
  const auto all = helios::devices();
  REQUIRE(info.index < all.size());
  CHECK(all[info.index].name == info.name);
  CHECK(all[info.index].coopShape == info.coopShape);
  CHECK(!info.type.empty());
  CHECK(info.subgroupSize > 0);
  const helios::CoopSelfTest t = device().coopSelfTest();
  if (info.coopShape.empty()) CHECK(t.status == helios::CoopSelfTest::Status::NotRun);
  CHECK(!t.describe().empty());
}
