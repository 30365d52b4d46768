// helios-run as a user runs it: .npy files in, .npy out, checked against the float64 references; bad input is
// refused with one clear message, a non-zero exit, and no output file.
#include "engine/core/half.hpp"
#include "engine/io/npy.hpp"
#include "support/process.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "support/process.hpp"

using namespace helios;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

fs::path dir() {
  static fs::path d = [] {
    auto p = fs::temp_directory_path() / ("helios-run-test-" + std::to_string(test::testSeed()));
    fs::create_directories(p);
    return p;
  }();
  return d;
}

std::string path(const std::string& name) {
  return (dir() / name).string();
}

using Result = test::CommandResult;

Result run(const std::string& args) {
  const char* exe = std::getenv("HELIOS_RUN_EXE"); // where a staged copy runs (device machines)
  return test::runCommand(std::string(exe ? exe : HELIOS_RUN_EXE) + " " + args);
}

std::vector<float> save(const std::string& name, std::vector<uint64_t> shape,
                        io::NpyDType dtype = io::NpyDType::F32) {
  uint64_t n = 1;
  for (auto d : shape)
    n *= d;
  auto values = test::randomFloats(n);
  auto array = io::NpyArray::fromFloat(values, shape, dtype);
  io::writeNpy(path(name), array);
  return array.toFloat(); // what the tool will read (f16-rounded for f16)
}

} // namespace

TEST_CASE("matmul with bias, alpha/beta and transposes matches the float64 reference") {
  auto [M, N, K] = GENERATE(std::tuple<uint32_t, uint32_t, uint32_t>{7, 33, 127},
                            std::tuple<uint32_t, uint32_t, uint32_t>{1, 5, 1},
                            std::tuple<uint32_t, uint32_t, uint32_t>{64, 64, 64});
  auto a = save("a.npy", {uint64_t(K), uint64_t(M)}); // stored K x M: --transpose-a
  auto b = save("b.npy", {uint64_t(N), uint64_t(K)}); // stored N x K: --transpose-b
  auto c = save("c.npy", {uint64_t(M), uint64_t(N)});
  auto bias = save("bias.npy", {uint64_t(N)});
  auto r = run("matmul --a " + path("a.npy") + " --b " + path("b.npy") + " --c " + path("c.npy") +
               " --alpha 0.5 --beta -2 --bias " + path("bias.npy") + " --transpose-a --transpose-b --out " +
               path("out.npy"));
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  auto out = io::readNpy(path("out.npy"));
  CHECK(out.shape == std::vector<uint64_t>{M, N});
  ref::Vec expected(c.begin(), c.end());
  ref::gemm(
      {.M = M, .N = N, .K = K, .transA = true, .transB = true, .alpha = 0.5, .beta = -2.0, .bias = true}, a,
      b, bias, expected);
  CHECK(ref::relError(out.toFloat(), expected) < 1e-5);
}

TEST_CASE("batched f16 matmul writes f32 by default and f16 when asked") {
  auto a = save("a16.npy", {3, 9, 17}, io::NpyDType::F16);
  auto b = save("b16.npy", {3, 17, 5}, io::NpyDType::F16);
  auto r = run("matmul --a " + path("a16.npy") + " --b " + path("b16.npy") + " --out " + path("o16.npy"));
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  auto out = io::readNpy(path("o16.npy"));
  CHECK(out.dtype == io::NpyDType::F32);
  CHECK(out.shape == std::vector<uint64_t>{3, 9, 5});
  ref::Vec expected(3 * 9 * 5, 0.0);
  ref::gemm({.M = 9, .N = 5, .K = 17, .batch = 3}, a, b, {}, expected);
  CHECK(ref::relError(out.toFloat(), expected) < 2e-3);
  r = run("matmul --a " + path("a16.npy") + " --b " + path("b16.npy") + " --out-dtype f16 --out " +
          path("h.npy"));
  REQUIRE(r.exitCode == 0);
  auto half = io::readNpy(path("h.npy"));
  CHECK(half.dtype == io::NpyDType::F16);
  CHECK(ref::relError(half.toFloat(), expected) < 2e-3);
}

TEST_CASE("softmax, layernorm and gelu along the last axis") {
  auto x = save("x.npy", {2, 7, 33});
  auto r = run("softmax --x " + path("x.npy") + " --out " + path("s.npy"));
  REQUIRE(r.exitCode == 0);
  CHECK(ref::relError(io::readNpy(path("s.npy")).toFloat(), ref::softmax(x, 14, 33)) < 1e-5);

  auto g = save("g.npy", {33}), bt = save("bt.npy", {33});
  r = run("layernorm --x " + path("x.npy") + " --gamma " + path("g.npy") + " --beta " + path("bt.npy") +
          " --eps 1e-5 --out " + path("ln.npy"));
  REQUIRE(r.exitCode == 0);
  CHECK(ref::relError(io::readNpy(path("ln.npy")).toFloat(), ref::layerNorm(x, g, bt, 14, 33, 1e-5).y) <
        1e-5);

  r = run("gelu --x " + path("x.npy") + " --out " + path("gelu.npy"));
  REQUIRE(r.exitCode == 0);
  ref::Vec expected(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    expected[i] = ref::gelu(x[i]);
  CHECK(ref::maxAbsError(io::readNpy(path("gelu.npy")).toFloat(), expected) < 1e-5);
}

TEST_CASE("attention: fused, causal, grouped-query heads, against float64") {
  // q (B=2, H=4, Tq=7, D=8); k, v (B=2, Hkv=2, Tk=9, D=8): query i sees keys j <= i + 2.
  const uint32_t B = 2, H = 4, Hkv = 2, Tq = 7, Tk = 9, D = 8;
  auto q = save("q.npy", {B, H, Tq, D}), k = save("k.npy", {B, Hkv, Tk, D}),
       v = save("v.npy", {B, Hkv, Tk, D});
  auto r = run("attention --q " + path("q.npy") + " --k " + path("k.npy") + " --v " + path("v.npy") +
               " --causal --out " + path("o.npy"));
  REQUIRE(r.exitCode == 0);
  const auto o = io::readNpy(path("o.npy"));
  CHECK(o.shape == std::vector<uint64_t>{B, H, Tq, D});
  ref::Vec expected(size_t(B) * H * Tq * D);
  const double scale = 1.0 / std::sqrt(double(D));
  for (uint32_t b = 0; b < B; ++b)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t i = 0; i < Tq; ++i) {
        const size_t qi = ((size_t(b) * H + h) * Tq + i) * D, kv = (size_t(b) * Hkv + h / (H / Hkv)) * Tk;
        std::vector<double> p(Tk);
        double mx = -1e300, sum = 0;
        for (uint32_t j = 0; j <= i + Tk - Tq; ++j) {
          double d = 0;
          for (uint32_t c = 0; c < D; ++c)
            d += double(q[qi + c]) * k[(kv + j) * D + c];
          mx = std::max(mx, p[j] = d * scale);
        }
        for (uint32_t j = 0; j <= i + Tk - Tq; ++j)
          sum += (p[j] = std::exp(p[j] - mx));
        for (uint32_t c = 0; c < D; ++c)
          for (uint32_t j = 0; j <= i + Tk - Tq; ++j)
            expected[qi + c] += p[j] / sum * v[(kv + j) * D + c];
      }
  CHECK(ref::relError(o.toFloat(), expected) < 1e-5);

  // k's heads must divide q's; shapes are named.
  save("k3.npy", {B, 3, Tk, D});
  r = run("attention --q " + path("q.npy") + " --k " + path("k3.npy") + " --v " + path("k3.npy") + " --out " +
          path("bad.npy"));
  CHECK(r.exitCode != 0);
  CHECK_THAT(r.output, ContainsSubstring("not a multiple of k's 3"));
  CHECK_FALSE(fs::exists(path("bad.npy")));
}

TEST_CASE("cross-entropy writes per-row losses and optionally the gradient") {
  auto logits = save("logits.npy", {5, 127});
  std::vector<int32_t> targets{0, 126, 64, -100, 3};
  io::NpyArray t{io::NpyDType::I32, {5}, std::vector<std::byte>(20)};
  std::memcpy(t.data.data(), targets.data(), 20);
  io::writeNpy(path("t.npy"), t);
  auto r = run("cross-entropy --logits " + path("logits.npy") + " --targets " + path("t.npy") + " --out " +
               path("loss.npy") + " --grad-out " + path("dl.npy"));
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  auto expected = ref::crossEntropy(logits, targets, 5, 127, 1.0 / 5);
  expected.loss[3] = 0.0; // ignored row
  for (size_t j = 0; j < 127; ++j)
    expected.dlogits[3 * 127 + j] = 0.0;
  CHECK(ref::maxAbsError(io::readNpy(path("loss.npy")).toFloat(), expected.loss) < 1e-5);
  CHECK(ref::maxAbsError(io::readNpy(path("dl.npy")).toFloat(), expected.dlogits) < 1e-6);
}

TEST_CASE("bad input is refused with a clear message and nothing is written") {
  save("a.npy", {4, 6});
  save("b.npy", {5, 3});
  fs::remove(path("never.npy"));
  auto r = run("matmul --a " + path("a.npy") + " --b " + path("b.npy") + " --out " + path("never.npy"));
  CHECK(r.exitCode == 1);
  CHECK_THAT(r.output, ContainsSubstring("helios-run: inner dimensions differ: op(A) is 4x6, op(B) is 5x3"));
  CHECK_FALSE(fs::exists(path("never.npy")));

  save("a16.npy", {4, 6}, io::NpyDType::F16);
  save("b32.npy", {6, 3});
  r = run("matmul --a " + path("a16.npy") + " --b " + path("b32.npy") + " --out " + path("never.npy"));
  CHECK(r.exitCode == 1);
  CHECK_THAT(r.output, ContainsSubstring("A is float16 but B is float32"));

  { // truncated: keep the header and half the data
    auto bytes = std::ifstream(path("a.npy"), std::ios::binary);
    std::string all{std::istreambuf_iterator<char>(bytes), {}};
    std::ofstream(path("trunc.npy"), std::ios::binary) << all.substr(0, all.size() - 40);
  }
  r = run("softmax --x " + path("trunc.npy") + " --out " + path("never.npy"));
  CHECK(r.exitCode == 1);
  CHECK_THAT(r.output, ContainsSubstring("truncated data"));

  r = run("layernorm --x " + path("a.npy") + " --gamma " + path("b32.npy") + " --out " + path("never.npy"));
  CHECK(r.exitCode == 1);
  CHECK_THAT(r.output, ContainsSubstring("gamma is (6, 3); expected (6,)"));
  CHECK_FALSE(fs::exists(path("never.npy")));
}

TEST_CASE("an --out symlink is written through: its target is replaced, the link kept") {
  auto x = save("x.npy", {3, 17});
  const fs::path d = dir() / "linked";
  fs::remove_all(d);
  fs::create_directories(d / "real");
  std::ofstream(d / "real" / "y.npy") << "stale";
  fs::create_symlink("real/y.npy", d / "y.npy");
  auto r = run("gelu --x " + path("x.npy") + " --out " + (d / "y.npy").string());
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  CHECK(fs::is_symlink(d / "y.npy"));
  CHECK(fs::read_symlink(d / "y.npy") == "real/y.npy");
  auto y = io::readNpy(d / "real" / "y.npy").toFloat();
  REQUIRE(y.size() == x.size());
  for (size_t i = 0; i < x.size(); ++i)
    CHECK(std::abs(y[i] - static_cast<float>(ref::gelu(x[i]))) <= 1e-5f + 1e-4f * std::abs(y[i]));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d / "real"))
    ++entries;
  CHECK(entries == 1); // no temporary left beside the target
}

TEST_CASE("an --out directory, device or FIFO is refused before the work and left untouched") {
  save("x.npy", {2, 5});
  const fs::path d = dir() / "special";
  fs::remove_all(d);
  fs::create_directories(d / "outdir");
  REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);
  fs::create_symlink("/dev/null", d / "null-link");
  const bool ownDevice = ::mknod((d / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0;
  struct Case {
    fs::path out;
    const char* says;
  };
  std::vector<Case> cases = {
      {d / "outdir", "is a directory"}, {d / "fifo", "is a FIFO"}, {d / "null-link", "is a device"}};
  if (ownDevice) cases.push_back({d / "null", "is a device"});
  for (const auto& c : cases) {
    auto r = run("gelu --x " + path("x.npy") + " --out " + c.out.string());
    INFO(r.output);
    CHECK(r.exitCode == 1);
    CHECK_THAT(r.output, ContainsSubstring(c.out.string() + ": " + c.says));
  }
  CHECK(fs::is_empty(d / "outdir"));
  CHECK(fs::is_fifo(d / "fifo"));
  CHECK(fs::is_symlink(d / "null-link"));
  CHECK(fs::is_character_file("/dev/null"));
  if (ownDevice) CHECK(fs::is_character_file(d / "null"));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d))
    ++entries;
  CHECK(entries == (ownDevice ? 4u : 3u)); // no npy.partial or other debris
}

TEST_CASE("non-finite scales and a non-positive epsilon are refused") {
  save("x.npy", {2, 5});
  for (const std::string args :
       {"softmax --scale nan", "layernorm --eps 0", "layernorm --eps inf", "softmax --scale inf"}) {
    auto r = run(args + " --x " + path("x.npy") + " --out " + path("never.npy"));
    INFO(args << "\n" << r.output);
    CHECK(r.exitCode != 0);
    CHECK_THAT(r.output, ContainsSubstring("--scale") || ContainsSubstring("--eps"));
  }
  CHECK_FALSE(fs::exists(path("never.npy")));
}

TEST_CASE("a FIFO or device given as an input is refused at once, never opened") {
  save("x.npy", {2, 5});
  const fs::path d = dir() / "inputs";
  fs::remove_all(d);
  fs::create_directories(d);
  REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);
  struct Case {
    std::string args;
    std::string says;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"matmul --a " + (d / "fifo").string() + " --b " + path("x.npy"),
            (d / "fifo").string() + ": the .npy input is not a regular "
                                    "file (it is a FIFO (named pipe))"},
           {"softmax --x /dev/zero",
            "/dev/zero: the .npy input is not a regular file (it is a character device)"},

           {"layernorm --x " + path("x.npy") + " --gamma " + (d / "fifo").string(), "it is a FIFO"}}) {
    // On a build that opens the FIFO this would block: `timeout` turns that into a failure, not a hang.
    auto r = test::runCommand(
        "timeout 60 " +
        std::string(std::getenv("HELIOS_RUN_EXE") ? std::getenv("HELIOS_RUN_EXE") : HELIOS_RUN_EXE) + " " +
        c.args + " --out " + path("never.npy"));
    INFO(c.args << "\n" << r.output);
    CHECK(r.exitCode == 1);
    CHECK_THAT(r.output, ContainsSubstring(c.says));
  }
  CHECK_FALSE(fs::exists(path("never.npy")));
}

TEST_CASE("an empty path or value is refused by name") {
  save("x.npy", {2, 5});
  struct Case {
    std::string args, says;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"gelu --x '' --out " + path("never.npy"), "--x: File does not exist"}, // CLI11's own check first
           {"gelu --x " + path("x.npy") + " --out ''", "--out: must not be empty"},
           {"gelu --x " + path("x.npy") + " --out " + path("never.npy") + " --device ''",
            "--device: must not be empty"}}) {
    auto r = run(c.args);
    INFO(c.args << "\n" << r.output);
    CHECK(r.exitCode != 0);
    CHECK_THAT(r.output, ContainsSubstring(c.says));
  }
  CHECK_FALSE(fs::exists(path("never.npy")));
}
