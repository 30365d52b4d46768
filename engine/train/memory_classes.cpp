#include "engine/train/memory_classes.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>

namespace helios::train {

std::vector<MemoryClass> modelStateClasses(Model& model) {
  uint64_t values = 0, params = 0; // values in their storage type (f32 or bf16); gradients and moments f32
  for (const model::ParameterGroup& g : model.parameterGroups()) {
    values += uint64_t(codegen::elemBytes(g.dtype)) * g.elements;
    params += 4ull * g.elements;
  }
  const bool lora = model.gpt() && !model.gpt()->frozen().empty();
  std::vector<MemoryClass> out;
  if (lora) {
    uint64_t half = 0, full = 0;
    codegen::Elem halfType = codegen::Elem::F16;
    for (const model::FrozenTensor& f : model.gpt()->frozen()) {
      (codegen::isHalf(f.storage) ? half : full) += f.bytes();
      if (codegen::isHalf(f.storage)) halfType = f.storage; // one 16-bit kind per base
    }
    if (half)
      out.push_back(
          {fmt::format("frozen base, {} (matrices, embeddings)", codegen::elemName(halfType)), half});
    out.push_back({lora && half ? "frozen base, f32 (norms, biases, positions)" : "frozen base, f32", full});
  }
  const char* what = lora ? "adapters" : "parameters";
  out.push_back({std::string(what) + (values == params ? " (f32)" : " (f32 and bf16)"), values});
  out.push_back({std::string(what) + "' gradients", params});
  out.push_back({std::string(what) + "' AdamW moments (m, v)", 2 * params});
  return out;
}

std::vector<MemoryClass> peakClasses(const graph::StepPlan& plan) {
  const auto classOf = [](const std::string& name) -> std::string {
    if (name == "checkpoint output") return "checkpointed block outputs (kept for the backward)";
    if (name.starts_with("head ")) return "LM head: logits chunks and dx";
    if (name.find("gradient") != std::string::npos) return "activation gradients";
    if (name.starts_with("lora ")) return "adapter products (u, dU, B blocks, dropout)";
    return "activations and temporaries (the block computed or recomputed)";
  };
  std::map<std::string, uint64_t> sums;
  for (const auto& [name, bytes] : plan.liveAtPeak())
    sums[classOf(name)] += bytes;
  std::vector<MemoryClass> out;
  for (const auto& [name, bytes] : sums)
    out.push_back({name, bytes});
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  return out;
}

} // namespace helios::train
