#pragma once
// Where a GPT's LoRA adapters sit (a pure layout, the same in every block): each adapted base linear layer is
// a *site* with one or more *parts*, the projections of PEFT's layout inside it. Helios packs q, k and v into
// one weight (attn.qkv), so q_proj, k_proj and v_proj are row ranges of one site there; every other
// projection is a site of one part covering all its rows. A site's adapters are two trainable parameters:
//   blocks.N.<site>.lora_A.weight  [parts * r, in]   the parts' A matrices stacked (part p: rows [p r, p r +
//   r)) blocks.N.<site>.lora_B.weight  [sum of rows, r]  the parts' B matrices stacked (part p: rows from
//   bRow)
// so the site's forward is one GEMM for all its parts' A products (engine/autograd/ops_lora.cpp).
#include "engine/model/gpt.hpp"

#include <string>
#include <vector>

namespace helios::model {

struct LoraPart {
  LoraTarget target = LoraTarget::Q;
  uint32_t row = 0, rows = 0; // the base weight's output rows [row, row + rows)
  uint32_t bRow = 0;          // its rows in the site's stacked B
};

struct LoraSite {
  std::string base;            // the base linear's parameter prefix in a block: "attn.qkv", "mlp.proj", ...
  uint32_t in = 0, out = 0;    // the base weight's shape [out, in]
  std::vector<LoraPart> parts; // in row order
  uint32_t bRows() const;
  // One part over every output row: the stacked B is the site's whole B (no block layout needed).
  bool whole() const { return parts.size() == 1 && parts[0].rows == out; }
};

// The projections `c`'s architecture has (a GELU MLP has no gate).
LoraTargets availableLoraTargets(const GptConfig& c);
// The sites of c.lora's targets in each block of `c`, in parameter order.
std::vector<LoraSite> loraSites(const GptConfig& c);
// The frozen base's storage without --base-dtype: the GEMM operands' 16-bit kind (f16 under Mixed, bf16 under
// BF16: the base is then its own operand), f32 under F32 (whose GEMMs would widen a 16-bit base every step).
BaseStorage defaultBaseStorage(Precision p);
// Why c.lora cannot be built on `c` ("" when it can, or when LoRA is off): its own errors (loraConfigError),
// bf16 parameters (full training's), a 16-bit base of the other kind than the GEMM operands', a target the
// architecture lacks, a rank above a targeted projection's width.
std::string loraIncompatibility(const GptConfig& c);
// "blocks.3.attn.qkv.lora_A.weight" ('A') or "...lora_B.weight" ('B').
std::string loraParamName(uint32_t layer, const LoraSite& site, char which);

} // namespace helios::model
