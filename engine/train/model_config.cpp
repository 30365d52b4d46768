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

} // namespace helios::train
