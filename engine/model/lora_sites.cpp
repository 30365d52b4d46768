#include "engine/model/lora_sites.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace helios::model {

namespace {

// A site whose parts are the targeted ones among `candidates` (target, first row, rows).
void addSite(std::vector<LoraSite>& sites, const LoraTargets& targets, std::string base, uint32_t in,
             uint32_t out, std::initializer_list<std::tuple<LoraTarget, uint32_t, uint32_t>> candidates) {
  LoraSite s{std::move(base), in, out, {}};
  uint32_t bRow = 0;
  for (const auto& [target, row, rows] : candidates)
    if (targets.has(target)) {
      s.parts.push_back({target, row, rows, bRow});
      bRow += rows;
    }
  if (!s.parts.empty()) sites.push_back(std::move(s));
}

} // namespace

uint32_t LoraSite::bRows() const {
  uint32_t n = 0;
  for (const LoraPart& p : parts)
    n += p.rows;
  return n;
}

LoraTargets availableLoraTargets(const GptConfig& c) {
  LoraTargets s = LoraTargets::all();
  if (c.mlp != MlpKind::SwiGLU) s.bits = uint8_t(s.bits & ~(1u << unsigned(LoraTarget::Gate)));
  return s;
}

std::vector<LoraSite> loraSites(const GptConfig& c) {
  std::vector<LoraSite> sites;
  if (!c.lora.enabled()) return sites;
  const LoraTargets& t = c.lora.targets;
  const uint32_t C = c.dim, D = c.headSize(), H = c.heads, G = c.kvHeadCount(), hid = c.mlpWidth();
  using enum LoraTarget;
  if (c.packedQkv) {
    addSite(sites, t, "attn.qkv", C, (H + 2 * G) * D,
            {{Q, 0, H * D}, {K, H * D, G * D}, {V, (H + G) * D, G * D}});
  } else {
    addSite(sites, t, "attn.q", C, H * D, {{Q, 0, H * D}});
    addSite(sites, t, "attn.k", C, G * D, {{K, 0, G * D}});
    addSite(sites, t, "attn.v", C, G * D, {{V, 0, G * D}});
  }
  addSite(sites, t, "attn.proj", H * D, C, {{O, 0, C}});
  if (c.mlp == MlpKind::SwiGLU) {
    addSite(sites, t, "mlp.gate", C, hid, {{Gate, 0, hid}});
    addSite(sites, t, "mlp.up", C, hid, {{Up, 0, hid}});
  } else {
    addSite(sites, t, "mlp.fc", C, hid, {{Up, 0, hid}});
  }
  addSite(sites, t, "mlp.proj", hid, C, {{Down, 0, C}});
  return sites;
}

BaseStorage defaultBaseStorage(Precision p) {
  return halfOf(p); // F32 under F32
}

std::string loraIncompatibility(const GptConfig& c) {
  if (!c.lora.enabled()) return "";
  if (std::string e = loraConfigError(c.lora); !e.empty()) return e;
  if (c.paramDtype != codegen::Elem::F32)
    return "LoRA trains f32 adapters on a frozen base: the parameter dtype is for full training (the base's "
           "storage is the LoRA base dtype)";
  // A 16-bit base is the GEMMs' operand as it is, or widened to f32: never cast from one 16-bit kind to the
  // other (a copy of the whole base every step, and f16's range is narrower than bf16's).
  const codegen::Elem half = halfOf(c.precision), base = c.lora.base;
  if (codegen::isHalf(half) && codegen::isHalf(base) && half != base)
    return fmt::format("a LoRA base stored in {} under {} GEMM operands: store it in {} (the operands' kind) "
                       "or f32",
                       codegen::elemName(base), codegen::elemName(half), codegen::elemName(half));
  const LoraTargets have = availableLoraTargets(c);
  for (LoraTarget t : kLoraTargets)
    if (c.lora.targets.has(t) && !have.has(t))
      return fmt::format("LoRA target '{}' ({}): this model's {} MLP has no such projection (it has {})",
                         loraTargetName(t), peftModuleName(t), c.mlp == MlpKind::Gelu ? "GELU" : "SwiGLU",
                         formatLoraTargets(have));
  for (const LoraSite& s : loraSites(c))
    for (const LoraPart& p : s.parts)
      if (c.lora.rank > std::min(s.in, p.rows))
        return fmt::format("LoRA rank {} is above the width of {} ([{}, {}]): at most {}", c.lora.rank,
                           peftModuleName(p.target), p.rows, s.in, std::min(s.in, p.rows));
  return "";
}

std::string loraParamName(uint32_t layer, const LoraSite& site, char which) {
  return fmt::format("blocks.{}.{}.lora_{}.weight", layer, site.base, which);
}

} // namespace helios::model
