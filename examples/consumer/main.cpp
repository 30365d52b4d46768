// Uses an installed Helios through its public API only: a matmul checked against a float64 reference, the
// same product recorded into a graph and replayed on new inputs, and a few training steps on a small text.
// Exits non-zero on a wrong result. Usage: helios-consumer WORKDIR
#include <helios/helios.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

namespace {

std::vector<float> randomValues(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v)
    x = u(rng);
  return v;
}

// The largest |c - a b| over the product, with a b in float64, relative to the largest |a b|.
double matmulError(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& c,
                   size_t M, size_t N, size_t K) {
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < M; ++i)
    for (size_t j = 0; j < N; ++j) {
      double ref = 0;
      for (size_t k = 0; k < K; ++k)
        ref += double(a[i * K + k]) * double(b[k * N + j]);
      worst = std::max(worst, std::abs(double(c[i * N + j]) - ref));
      scale = std::max(scale, std::abs(ref));
    }
  return worst / scale;
}

bool check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
  return ok;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s WORKDIR\n", argv[0]);
    return 2;
  }
  helios::Device device = helios::Device::open();
  std::printf("device: %s (%s), coop self-test: %s\n", device.info().name.c_str(), device.info().type.c_str(),
              device.coopSelfTest().describe().c_str());
  std::mt19937 rng(std::random_device{}());
  bool ok = true;

  // One product at odd sizes, run at once.
  const size_t M = 67, N = 45, K = 83;
  auto a = randomValues(M * K, rng), b = randomValues(K * N, rng);
  helios::Tensor ta = helios::Tensor::fromHost(device, {M, K}, a),
                 tb = helios::Tensor::fromHost(device, {K, N}, b);
  ok &= check(matmulError(a, b, helios::matmul(ta, tb).toHost(), M, N, K) < 1e-5, "matmul vs float64");

  // The same product recorded once into a graph, replayed on new inputs (the output is poisoned first).
  helios::Tensor tc = helios::Tensor::fromHost(device, {M, N}, std::vector<float>(M * N, NAN));
  helios::Graph graph(device);
  for (int run = 0; run < 2; ++run) {
    a = randomValues(M * K, rng);
    ta.write(a);
    graph.record("product", [&] { helios::matmul(ta, tb, tc); });
    const helios::GraphStats stats = graph.run();
    ok &= check(matmulError(a, b, tc.toHost(), M, N, K) < 1e-5, run ? "graph replay" : "graph recording");
    if (run == 1) ok &= check(stats.replayedSegments == 1, "the second run replays the recording");
  }

  // A few training steps of a one-layer GPT on a small repetitive text.
  const std::string text = std::string(argv[1]) + "/text.txt";
  std::ofstream(text) << [] {
    std::string s;
    for (int i = 0; i < 200; ++i)
      s += "the quick brown fox jumps over the lazy dog. ";
    return s;
  }();
  helios::TrainConfig config;
  config.overrides = R"({"data": ")" + text + R"(", "steps": 12, "batch": 4, "seq_len": 32, "warmup": 2,
      "lr": 0.003, "eval_every": 0, "time_every": 0, "gpt": {"layers": 1, "dim": 32, "heads": 2, "context": 32}})";
  const helios::TrainResult result = helios::train(device, config);
  const float first = result.steps.front().loss, last = result.steps.back().loss;
  std::printf("trained %s: loss %.3f -> %.3f over %zu steps\n", result.model.c_str(), first, last,
              result.steps.size());
  ok &= check(result.steps.size() == 12 && std::isfinite(last) && last < first - 0.5f,
              "training lowers the loss");
  return ok ? 0 : 1;
}
