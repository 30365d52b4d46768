#include "bench_compile.hpp"

#include "engine/graph/arena.hpp"
#include "engine/model/gpt.hpp"
#include "engine/ops/attention.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "engine/ops/optim_step.hpp"
#include "engine/ops/recording_executor.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace helios::bench {

namespace {

// GPT-2 small as trained by the benchmarks: 12 layers, 768 wide, 12 heads, T 1024, vocab 50304, B 16.
model::GptConfig gpt2Small(model::Precision precision) {
  model::GptConfig c;
  c.vocab = 50304;
  c.context = 1024;
  c.layers = 12;
  c.dim = 768;
  c.heads = 12;
  c.precision = precision;
  return c;
}

// One training step: forward, loss and backward of the model, then the optimizer's dispatches per group.
void recordGptStep(vk::Context& ctx, ops::Executor& exec, uint32_t batch, model::Precision precision) {
  const model::GptConfig cfg = gpt2Small(precision);
  model::Gpt gpt(ctx, cfg, 1);
  graph::StepArena arena(ctx);
  const uint64_t tokens = uint64_t(batch) * cfg.context;
  auto tok = ctx.buffer(tokens * 4, "tokens"), tgt = ctx.buffer(tokens * 4, "targets"),
       loss = ctx.buffer(4, "loss");
  gpt.forwardBackward(exec, arena, tok.range(), tgt.range(), batch, cfg.context, loss.range(), 1.0f);
  uint32_t slots = 0;
  for (const auto& g : gpt.parameterGroups())
    slots += ops::gradSumsqSlots(g.elements);
  auto partials = ctx.buffer(4ull * slots, "partials"), control = ctx.buffer(16, "control"),
       records = ctx.buffer(4ull * codegen::kOptimRecordFloats, "records");
  uint32_t slot = 0;
  for (const auto& g : gpt.parameterGroups()) {
    ops::gradSumsq(exec, g.grad, g.elements, partials.range(), slot);
    slot += ops::gradSumsqSlots(g.elements);
  }
  ops::OptimControlArgs c;
  c.partials = partials.range();
  c.losses = loss.range();
  c.state = control.range();
  c.control = control.range();
  c.records = records.range();
  c.count = slot;
  c.lossCount = 1;
  ops::optimControl(exec, c);
  for (const auto& g : gpt.parameterGroups())
    ops::adamwCtrl(exec, g.data, g.m, g.v, g.grad, control.range(), g.elements,
                   ops::AdamWCtrlHyper{1e-4f, 0.9f, 0.95f, 1e-8f, g.decay ? 0.1f : 0.0f}, g.dtype);
}

struct AttentionCase {
  uint32_t B, H, S, D;
};

AttentionCase parseAttention(const std::string& s) {
  AttentionCase x{};
  if (std::sscanf(s.c_str(), "%ux%ux%ux%u", &x.B, &x.H, &x.S, &x.D) != 4 || !x.B || !x.H || !x.S || !x.D)
    throw std::invalid_argument("attention shape '" + s + "' is not BxHxSxD");
  return x;
}

// Forward and backward (dQ, dK/dV) of one shape, causal and dense: the f32 fallback everywhere, and the coop
// passes (f32 and f16 q, k, v; bf16 q, k, v where the device has bf16 coop matrices) where the device runs
// them.
void recordAttention(vk::Context& ctx, ops::Executor& exec, const AttentionCase& s) {
  const uint64_t n = uint64_t(s.B) * s.H * s.S * s.D, rows = uint64_t(s.B) * s.H * s.S;
  auto q = ctx.buffer(n * 4, "q"), k = ctx.buffer(n * 4, "k"), v = ctx.buffer(n * 4, "v"),
       o = ctx.buffer(n * 4, "o"), dO = ctx.buffer(n * 4, "dO"), dq = ctx.buffer(n * 4, "dQ"),
       dk = ctx.buffer(n * 4, "dK"), dv = ctx.buffer(n * 4, "dV"), lse = ctx.buffer(rows * 4, "lse"),
       delta = ctx.buffer(rows * 4, "delta");
  const bool coop = ops::attentionCoopAvailable(ctx.device(), s.D);
  const bool bf16 = ops::attentionCoopAvailable(ctx.device(), s.D, codegen::Elem::BF16);
  for (bool causal : {true, false})
    for (int variant = 0; variant < (bf16 ? 4 : coop ? 3 : 1); ++variant) {
      ops::AttentionShape shape{s.B, s.H, s.H, s.S, s.S, s.D, causal, float(1.0 / std::sqrt(double(s.D)))};
      shape.kernel = variant == 0 ? ops::AttentionKernel::Fallback : ops::AttentionKernel::Coop;
      shape.halfQkv = variant >= 2;
      shape.half = variant == 3 ? codegen::Elem::BF16 : codegen::Elem::F16;
      ops::attentionForward(exec, q.range(), k.range(), v.range(), o.range(), lse.range(), shape);
      ops::attentionBackward(exec, q.range(), k.range(), v.range(), o.range(), lse.range(), dO.range(),
                             dq.range(), dk.range(), dv.range(), delta.range(), shape);
    }
}

// The driver's statistics under common names (ANV and RADV spell them differently); absent ones stay null.
struct StatName {
  const char* field;
  std::vector<std::string> names;
};
const std::vector<StatName>& statNames() {
  static const std::vector<StatName> names{
      {"instructions", {"Instruction Count", "Instructions"}},
      {"registers", {"VGPRs", "Max live registers", "GRF registers"}},
      {"spills", {"Spill Count", "Spilled VGPRs"}},
      {"fills", {"Fill Count"}},
      {"sgpr_spills", {"Spilled SGPRs"}},
      {"scratch", {"Scratch Memory Size", "Scratch size"}},
      {"shared", {"Workgroup Memory Size", "LDS size"}},
      {"dispatch_width", {"Max dispatch width"}},
      {"subgroups_per_simd", {"Subgroups per SIMD"}},
  };
  return names;
}

nlohmann::json summarize(const std::vector<vk::ExecutableStat>& stats) {
  nlohmann::json s = nlohmann::json::object();
  for (const auto& n : statNames()) {
    s[n.field] = nullptr;
    for (const auto& st : stats)
      if (std::find(n.names.begin(), n.names.end(), st.name) != n.names.end()) {
        s[n.field] = std::strtoll(st.value.c_str(), nullptr, 10);
        break;
      }
  }
  if (!stats.empty()) s["executable"] = stats.front().executable;
  return s;
}

int64_t count(const nlohmann::json& s, const char* field) {
  return s[field].is_number() ? s[field].get<int64_t>() : 0;
}

// GEMMs and attention are the kernels whose spills cost (the gate's scope).
bool gated(const std::string& name) {
  return name.rfind("gemm", 0) == 0 || name.rfind("matmul", 0) == 0 || name.rfind("attention", 0) == 0;
}

} // namespace

nlohmann::json benchCompile(vk::Context& ctx, const CommonOptions& common, const CompileOptions& options) {
  nlohmann::json result = header(ctx, common, "compile");
  ops::RecordingExecutor exec(ctx);
  std::vector<std::pair<std::string, size_t>> sections; // workload, first use index
  for (const auto& w : options.workloads) {
    sections.emplace_back(w, exec.uses().size());
    if (w == "gpt2-small") recordGptStep(ctx, exec, 16, model::Precision::Mixed);
    // bf16's kernels where the device runs bf16 cooperative matrices (none of Mesa 25.0.7's emulated
    // Intel and AMD devices lists a bf16 configuration).
    if (ops::coopDeviceInfo(ctx.device()).bf16)
      recordGptStep(ctx, exec, 16, model::Precision::BF16);
    else if (w == "attention")
      for (const auto& shape : options.attentionShapes)
        recordAttention(ctx, exec, parseAttention(shape));
    else
      throw std::invalid_argument("unknown workload '" + w + "' (gpt2-small, attention)");
  }
  result["workloads"] = options.workloads;
  result["attention_shapes"] = options.attentionShapes;
  nlohmann::json kernels = nlohmann::json::array(), spilling = nlohmann::json::array();
  // simd: ANV's dispatch width; waves: RADV's subgroups per SIMD.
  fmt::print("{:<72} {:>6} {:>5} {:>6} {:>6} {:>7} {:>4} {:>5}\n", "kernel", "instr", "regs", "spills",
             "fills", "scratch", "simd", "waves");
  for (size_t i = 0; i < exec.uses().size(); ++i) {
    const auto& use = exec.uses()[i];
    std::string workload;
    for (const auto& [w, first] : sections)
      if (i >= first) workload = w;
    const auto raw = ctx.pipelines().executableStats(*use.pipeline);
    nlohmann::json s = summarize(raw);
    nlohmann::json row = {
        {"kernel", use.pipeline->name}, {"workload", workload}, {"dispatches", use.dispatches}, {"stats", s}};
    nlohmann::json all = nlohmann::json::object();
    for (const auto& st : raw)
      all[st.name] = st.value;
    row["driver_stats"] = all;
    const auto num = [&](const char* f) {
      return s[f].is_number() ? std::to_string(s[f].get<int64_t>()) : "-";
    };
    fmt::print("{:<72} {:>6} {:>5} {:>6} {:>6} {:>7} {:>4} {:>5}\n", use.pipeline->name.substr(0, 72),
               num("instructions"), num("registers"), num("spills"), num("fills"), num("scratch"),
               num("dispatch_width"), num("subgroups_per_simd"));
    if (gated(use.pipeline->name) && count(s, "spills") + count(s, "fills") + count(s, "sgpr_spills") > 0)
      spilling.push_back(use.pipeline->name);
    kernels.push_back(row);
  }
  result["kernels"] = kernels;
  result["spilling"] = spilling;
  fmt::print("{} pipelines created; {} GEMM/attention kernels spill\n", kernels.size(), spilling.size());
  for (const auto& name : spilling)
    fmt::print("  spills: {}\n", name.get<std::string>());
  return result;
}

} // namespace helios::bench
