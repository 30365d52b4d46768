// A block's LoRA terms from its adapters' tensors, laid out by lora_sites.
#include "engine/model/blocks.hpp"
#include "engine/model/lora_sites.hpp"

#include <stdexcept>

namespace helios::model::detail {

namespace {

autograd::LoraTerm& termOf(BlockWeights& w, const std::string& base) {
  const std::pair<const char*, autograd::LoraTerm BlockWeights::*> slots[] = {
      {"attn.qkv", &BlockWeights::qkvLora},    {"attn.q", &BlockWeights::qLora},
      {"attn.k", &BlockWeights::kLora},        {"attn.v", &BlockWeights::vLora},
      {"attn.proj", &BlockWeights::projLora},  {"mlp.fc", &BlockWeights::fcLora},
      {"mlp.gate", &BlockWeights::gateLora},   {"mlp.up", &BlockWeights::upLora},
      {"mlp.proj", &BlockWeights::mlpProjLora}};
  for (const auto& [name, member] : slots)
    if (base == name) return w.*member;
  throw std::logic_error("attachLora: no adapter slot for " + base);
}

} // namespace

void attachLora(BlockWeights& w, const GptConfig& c, uint32_t layer,
                const std::function<Tensor(const std::string&)>& tensor, vk::BufferRange counter) {
  const std::vector<LoraSite> sites = loraSites(c);
  for (size_t i = 0; i < sites.size(); ++i) {
    const LoraSite& site = sites[i];
    autograd::LoraTerm& t = termOf(w, site.base);
    t.a = tensor(loraParamName(layer, site, 'A'));
    t.b = tensor(loraParamName(layer, site, 'B'));
    t.parts.clear();
    for (const LoraPart& p : site.parts)
      t.parts.push_back({p.row, p.rows, p.bRow});
    t.rank = c.lora.rank;
    t.scale = c.lora.scale();
    t.dropout = counter.buffer == VK_NULL_HANDLE ? 0.0f : c.lora.dropout;
    t.counter = counter;
    t.stream = layer * 16 + uint32_t(i);
  }
}

} // namespace helios::model::detail
