// Every GEMM choice the engine makes for the benchmarks' and the training steps' GEMMs, on every captured
// device, against a golden text file (test_gemm_choices.golden.txt beside this file): kernel family, every
// kernel parameter (the cache key), grid, split-K passes, padding, transposed-A and fallback with its reason,
// one line per (device, shape, layout, dtype, epilogue). A change to the GEMM's choices shows up as a diff of
// that file; one that is meant is committed with the file rewritten:
//   HELIOS_REGENERATE_GOLDEN=1 build/tests/ops/test_gemm_choices
// (the test then writes the file and fails, so a regeneration never passes unnoticed).
#include <catch2/catch_test_macros.hpp>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "engine/ops/gemm_plan.hpp"
#include "engine/tuning/defaults.hpp"
#include "gemm_fixture_devices.hpp"

using namespace helios;
using namespace helios::ops;
using codegen::Elem;

namespace {

// A device's profile as the live device builds it, from a capture and the Tuning record's defaults (with
// gemm.coopEmulate for the lowered ones).
struct ChoiceDevice {
  std::unique_ptr<tuning::Tuning> tuning;
  DeviceProfile profile;
};

ChoiceDevice choiceDevice(const std::string& name, const probe::DeviceCaps& caps,
                          const std::optional<tuning::MatShape>& emulate = {}) {
  tuning::DeviceFacts facts;
  facts.computeUnits = computeUnitsOr(caps.shader_cores, kDefaultComputeUnits);
  ChoiceDevice d{std::make_unique<tuning::Tuning>(tuning::defaultTuning(facts)), {}};
  d.tuning->gemm.coopEmulate.value = emulate;
  d.profile = profileFromCaps(name, caps, *d.tuning);
  return d;
}

std::vector<ChoiceDevice> devices() {
  std::vector<ChoiceDevice> out;
  for (const std::string& file : testing::fixtureFiles())
    out.push_back(choiceDevice(file.substr(0, file.size() - 5), testing::fixtureCaps(file)));
  out.push_back(choiceDevice("lavapipe", testing::lavapipeCaps()));
  out.push_back(
      choiceDevice("lavapipe-lowered-16x16x16", testing::lavapipeCaps(), tuning::MatShape{16, 16, 16}));
  out.push_back(
      choiceDevice("lavapipe-lowered-16x8x16", testing::lavapipeCaps(), tuning::MatShape{16, 8, 16}));
  return out;
}

enum class Epilogue { None, Bias, BiasGelu };

struct Case {
  uint32_t M, N, K, batch = 1;
  bool transA = false, transB = false;
  Epilogue epilogue = Epilogue::None;
  float beta = 0.0f;
  bool sharedB = false; // batched with strideB 0
};

// helios-bench gemm's shapes (bench/device, bench/h100 scripts and the tool's default) that no training step
// below has, in its three layouts, with odd shapes next to the aligned ones.
void benchCases(std::vector<Case>& out) {
  const uint32_t shapes[][3] = {{4096, 4096, 4096}, {1024, 1024, 1024}, {8192, 8192, 8192},
                                {1000, 1000, 1000}, {511, 513, 257},    {127, 129, 65},
                                {1, 768, 768},      {2432, 50304, 768}, {2432, 768, 50304},
                                {4096, 50304, 768}, {1152, 896, 8192},  {8192, 1152, 896}};
  for (const auto& s : shapes)
    for (const auto& [tA, tB] : {std::pair{false, false}, {false, true}, {true, false}})
      out.push_back({s[0], s[1], s[2], 1, tA, tB});
}

// A decoder's training step with `T` tokens: each linear (in -> out) forward (NT, with its epilogue), its
// input gradient (NN) and its weight gradient (TN); the LM head's weight gradient accumulates (tied to the
// embedding); attention's batched products where the model has few heads' worth of sequence.
struct Model {
  uint32_t C, heads, kvHeads, headDim, hidden, vocab, T;
  bool swiglu;
  Epilogue qkvBias, otherBias;
};

void linearCases(std::vector<Case>& out, uint32_t in, uint32_t outDim, uint32_t T, Epilogue epilogue) {
  out.push_back({T, outDim, in, 1, false, true, epilogue});
  out.push_back({T, in, outDim, 1, false, false});
  out.push_back({outDim, in, T, 1, true, false});
}

void trainingCases(std::vector<Case>& out) {
  const Model models[] = {
      {768, 12, 12, 64, 3072, 50304, 16384, false, Epilogue::Bias, Epilogue::Bias}, // GPT-2 small
      {384, 6, 6, 64, 1536, 65, 16384, false, Epilogue::Bias, Epilogue::Bias},      // the char preset
      {896, 14, 2, 64, 4864, 151936, 8192, true, Epilogue::Bias, Epilogue::None},   // Qwen2.5-0.5B
      {576, 9, 3, 64, 1536, 49152, 8192, true, Epilogue::None, Epilogue::None},     // SmolLM2-135M
      {2048, 32, 32, 64, 8192, 49152, 8192, true, Epilogue::None, Epilogue::None},  // SmolLM2-1.7B
      {2048, 32, 8, 64, 8192, 128256, 8192, true, Epilogue::None, Epilogue::None},  // Llama-3.2-1B
  };
  for (const Model& m : models) {
    const uint32_t q = m.heads * m.headDim;
    linearCases(out, m.C, q + 2 * m.kvHeads * m.headDim, m.T, m.qkvBias);
    linearCases(out, q, m.C, m.T, m.otherBias);
    linearCases(out, m.C, m.hidden, m.T, m.swiglu ? m.otherBias : Epilogue::BiasGelu);
    linearCases(out, m.hidden, m.C, m.T, m.otherBias);
    linearCases(out, m.C, m.vocab, m.T, Epilogue::None);
    out.push_back({m.vocab, m.C, m.T, 1, true, false, Epilogue::None, 1.0f});
  }
  // Attention-shaped batches (scores and values of 1024-token sequences) and a batch sharing one B.
  out.push_back({1024, 1024, 64, 192, false, true});
  out.push_back({1024, 64, 1024, 192, false, false});
  out.push_back({2048, 768, 768, 4, false, false, Epilogue::None, 0.0f, true});
  out.push_back({1000, 768, 768, 3, false, true, Epilogue::Bias, 0.0f, true});
}

struct DType {
  const char* name;
  Elem a, roundTo, out;
};
constexpr DType kDTypes[] = {{"f32", Elem::F32, Elem::F32, Elem::F32},
                             {"f16", Elem::F16, Elem::F32, Elem::F32},
                             {"bf16", Elem::BF16, Elem::F32, Elem::F32},
                             {"f32>f16", Elem::F32, Elem::F16, Elem::F32},
                             {"f16:f16", Elem::F16, Elem::F32, Elem::F16}};

vk::BufferRange fakeRange(uintptr_t handle) {
  return {reinterpret_cast<VkBuffer>(handle), 0, uint64_t{1} << 40};
}

MatmulArgs argsOf(const Case& c, const DType& t) {
  MatmulArgs a;
  a.a = fakeRange(1), a.b = fakeRange(2), a.c = fakeRange(3);
  if (c.epilogue != Epilogue::None) a.bias = fakeRange(4);
  a.gelu = c.epilogue == Epilogue::BiasGelu;
  a.M = c.M, a.N = c.N, a.K = c.K, a.batch = c.batch;
  a.transA = c.transA, a.transB = c.transB;
  a.beta = c.beta;
  a.aType = t.a, a.roundTo = t.roundTo, a.outType = t.out;
  if (c.sharedB) a.strideB = 0;
  return a;
}

std::string groups(uint32_t x, uint32_t y, uint32_t z) {
  return fmt::format("{}x{}x{}", x, y, z);
}

// FNV-1a of a kernel's cache key (which covers every parameter): the line names the kernel and this hash
// stands for the rest, so a change to any parameter changes the line.
std::string keyHash(const std::string& key) {
  uint32_t h = 2166136261u;
  for (const char c : key)
    h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return fmt::format("#{:08x}", h);
}

// The plan matmul() carries out for `args` on `d` (gemm_plan.hpp), one line.
std::string choice(const MatmulArgs& args, const ChoiceDevice& d) {
  const GemmPlan plan = planGemm(args, d.profile);
  const std::string grid = groups(plan.grid.x, plan.grid.y, plan.grid.z);
  if (plan.family == GemmFamily::Coop) {
    const CoopPlan& c = *plan.coop;
    return fmt::format("coop {}{} splitK={} padded={}x{}x{} grid={} {} {}", coopDecisionName(c.decision),
                       c.inner == c.decision ? "" : std::string("/") + coopDecisionName(c.inner), c.splitK,
                       c.Mp, c.Np, c.Kp, grid, plan.coopParams.name(), keyHash(plan.coopParams.cacheKey()));
  }
  const std::string fallback = plan.coop ? " (fallback: " + plan.coop->missKey + ")" : "";
  return fmt::format("tiled grid={} {} {}{}", grid, plan.tiled.name(), keyHash(plan.tiled.cacheKey()),
                     fallback);
}

const char* epilogueName(Epilogue e) {
  return e == Epilogue::None ? "-" : e == Epilogue::Bias ? "bias" : "bias+gelu";
}

std::string caseName(const Case& c, const DType& t) {
  return fmt::format("{}x{}x{}x{} {}{} {} {} beta={}{}", c.M, c.N, c.K, c.batch, c.transA ? 't' : 'n',
                     c.transB ? 't' : 'n', t.name, epilogueName(c.epilogue), c.beta,
                     c.sharedB ? " sharedB" : "");
}

std::string allChoices() {
  std::vector<Case> cases;
  benchCases(cases);
  trainingCases(cases);
  std::ostringstream out;
  for (const ChoiceDevice& d : devices()) {
    out << "# " << d.profile.name << '\n';
    for (const Case& c : cases)
      for (const DType& t : kDTypes)
        out << caseName(c, t) << " : " << choice(argsOf(c, t), d) << '\n';
  }
  return out.str();
}

const std::string kGolden = std::string(HELIOS_GOLDEN_DIR) + "/test_gemm_choices.golden.txt";

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

TEST_CASE("gemm choices: every benchmark and training GEMM on every device matches the golden file",
          "[gemm_choices]") {
  const std::string now = allChoices();
  if (const char* regen = std::getenv("HELIOS_REGENERATE_GOLDEN"); regen && std::string(regen) == "1") {
    std::ofstream(kGolden) << now;
    FAIL("rewrote " + kGolden + " (HELIOS_REGENERATE_GOLDEN=1); run again without it");
  }
  const std::string golden = readFile(kGolden);
  REQUIRE_FALSE(golden.empty());
  if (now == golden) return;
  // The first differing line, with its golden twin.
  std::istringstream a(now), b(golden);
  std::string la, lb;
  uint32_t line = 1;
  while (std::getline(a, la) && std::getline(b, lb) && la == lb)
    ++line;
  FAIL("line " << line << " differs\n  now:    " << la << "\n  golden: " << lb);
}
