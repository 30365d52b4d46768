#include "engine/train/model_config.hpp"

#include "engine/model/lora_sites.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace helios::train {

nlohmann::json modelConfigJson(const TrainConfig& c, const Tokenizer& tok) {
  if (c.model == "bigram") return {{"kind", "bigram"}, {"vocab", tok.vocab()}};
  model::GptConfig g = c.gpt;
  if (g.vocab == 0) g.vocab = tok.vocab();
  if (g.vocab < tok.vocab())
    throw std::invalid_argument(fmt::format("the model vocabulary {} is smaller than the {} tokenizer's {}",
                                            g.vocab, tok.kindName(), tok.vocab()));
  if (g.context == 0) g.context = c.seqLen;
  nlohmann::json j = toJson(g);
  j["kind"] = "gpt";
  return j;
}

ParameterFootprint parameterFootprintOf(const nlohmann::json& arch) {
  if (arch.value("kind", "") == "bigram") {
    const uint64_t v = arch.at("vocab").get<uint64_t>();
    return {v * v, 0};
  }
  nlohmann::json rest = arch;
  rest.erase("kind");
  rest.erase("lora_base"); // where the base comes from, not its shape
  model::GptConfig g;
  fromJson(rest, g);
  if (!g.lora.enabled()) return {g.parameterCount(), 0};
  uint64_t adapters = 0; // per block: each site's stacked A [parts * r, in] and B [rows, r]
  for (const model::LoraSite& site : model::loraSites(g))
    adapters += (uint64_t(site.parts.size()) * site.in + site.bRows()) * g.lora.rank;
  return {adapters * g.layers, g.parameterCount() * codegen::elemBytes(g.lora.base)};
}

} // namespace helios::train
