#pragma once
// LoRA (low-rank adapters, as PEFT trains them): which linear layers of every block carry an adapter, its
// rank and scale, its dropout, and how the frozen base weights are stored. A value type without GPU state;
// GptConfig::lora holds one (rank 0: full training, nothing of this applies).
//   y = x W^T (+ b) + (alpha / r) * dropout(x) A^T B^T,   A [r, in], B [out, r]
#include "codegen/elem.hpp"

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace helios::model {

// The projections an adapter can sit on, as PEFT names them for Llama-style models (q_proj ... down_proj).
// A GELU MLP (GPT-2) has no gate; its fc is `up` and its output projection `down`.
enum class LoraTarget : uint8_t { Q, K, V, O, Gate, Up, Down };
inline constexpr LoraTarget kLoraTargets[] = {LoraTarget::Q,   LoraTarget::K,    LoraTarget::V,
                                              LoraTarget::O,   LoraTarget::Gate, LoraTarget::Up,
                                              LoraTarget::Down};

const char* loraTargetName(LoraTarget t); // "q", "k", "v", "o", "gate", "up", "down"
const char* peftModuleName(LoraTarget t); // "q_proj", ..., "down_proj"
// Either spelling ("q" or "q_proj"); nullopt for anything else.
std::optional<LoraTarget> parseLoraTarget(const std::string& name);

// A set of targets (a bit per LoraTarget).
struct LoraTargets {
  uint8_t bits = 0;
  bool has(LoraTarget t) const { return bits & (1u << unsigned(t)); }
  void add(LoraTarget t) { bits = uint8_t(bits | (1u << unsigned(t))); }
  bool empty() const { return bits == 0; }
  bool operator==(const LoraTargets&) const = default;
  static constexpr LoraTargets all() { return {uint8_t((1u << std::size(kLoraTargets)) - 1)}; }
};
// "q,k,v,o,gate,up,down" (short names, kLoraTargets order).
std::string formatLoraTargets(LoraTargets t);
// A comma-separated list in either spelling; throws std::invalid_argument naming an unknown or repeated
// entry.
LoraTargets parseLoraTargets(const std::string& list);

// How the frozen base's GEMM weights and embeddings are stored (norms, biases and learned positions stay
// f32): one of the element types (codegen::elemName spells it). A 16-bit base is its own GEMM operand where
// the precision's 16-bit kind is the same (f16 under Mixed, bf16 under BF16: no per-step copy), and is
// widened to an f32 copy per step under F32; defaultBaseStorage (lora_sites.hpp) picks it by precision.
using BaseStorage = codegen::Elem;

struct LoraConfig {
  uint32_t rank = 0; // r; 0: no adapters (full training)
  float alpha = 0;   // the scale is alpha / rank
  float dropout = 0; // on the adapter's input only, in [0, 1)
  LoraTargets targets = LoraTargets::all();
  BaseStorage base = BaseStorage::F16;
  bool enabled() const { return rank > 0; }
  float scale() const { return alpha / float(rank); }
  bool operator==(const LoraConfig&) const = default;
};

// Why `c` is not a valid adapter configuration by itself ("" when it is): alpha <= 0, dropout outside [0, 1),
// no targets. The checks against a model's shapes are loraIncompatibility (lora_sites.hpp).
std::string loraConfigError(const LoraConfig& c);

} // namespace helios::model
