#include "engine/train/model_config.hpp"

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

uint64_t parameterCountOf(const nlohmann::json& arch) {
  if (arch.value("kind", "") == "bigram") {
    const uint64_t v = arch.at("vocab").get<uint64_t>();
    return v * v;
  }
  nlohmann::json rest = arch;
  rest.erase("kind");
  model::GptConfig g;
  fromJson(rest, g);
  return g.parameterCount();
}

} // namespace helios::train
