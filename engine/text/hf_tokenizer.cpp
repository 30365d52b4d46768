#include "engine/text/hf_tokenizer.hpp"

#include "engine/text/directory.hpp"
#include "engine/text/hf/config.hpp"
#include "engine/text/hf/tokenizer_json.hpp"
#include "engine/text/unicode.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace helios::text {

struct HfTokenizer::Impl {
  hf::Pipeline pipeline;
  hf::TokenizerConfig config;
  hf::SpecialIds special;
  uint32_t vocab = 0;
};

void requireUtf8(std::string_view text) {
  if (const auto at = invalidUtf8At(text))
    throw std::invalid_argument(fmt::format("the text is not UTF-8 at byte {} (0x{:02x}); Hugging Face "
                                            "tokenizers encode Unicode text only",
                                            *at, static_cast<uint8_t>(text[*at])));
}

HfTokenizer::HfTokenizer(std::vector<TokenizerFile> files) : files_(std::move(files)) {
  const TokenizerFile* json = hf::findFile(files_, "tokenizer.json");
  if (!json) throw std::invalid_argument("a Hugging Face tokenizer needs tokenizer.json");
  impl_ = std::make_unique<Impl>(
      Impl{hf::parseTokenizerJson(json->bytes), hf::readTokenizerConfig(files_), {}, 0});
  impl_->special = hf::resolveSpecialIds(impl_->config, [this](std::string_view s) { return tokenId(s); });
  int32_t maxId = impl_->pipeline.model.maxId();
  for (const auto& t : impl_->pipeline.added.tokens())
    maxId = std::max(maxId, t.id);
  impl_->vocab = static_cast<uint32_t>(maxId + 1);
}

HfTokenizer::~HfTokenizer() = default;

uint32_t HfTokenizer::vocab() const {
  return impl_->vocab;
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text) const {
  requireUtf8(text);
  const hf::Pipeline& p = impl_->pipeline;
  std::vector<int32_t> ids;
  p.added.walk(
      text, [&p](std::string_view s) { return p.normalizer.apply(s); },
      [&ids](int32_t id) { ids.push_back(id); },
      [&](std::string_view stretch, bool atStart) {
        p.preTokenizer.apply({std::string(stretch), atStart},
                             [&](hf::Piece piece) { p.model.tokenize(piece.text, ids); });
      });
  return ids;
}

// The strings the decoder reads: an added token's spelling, a vocabulary entry, or "?" for an id with none.
std::vector<std::string> HfTokenizer::tokenStrings(std::span<const int32_t> ids) const {
  const hf::Pipeline& p = impl_->pipeline;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (p.added.byId(id))
      tokens.push_back(p.added.spelling(id));
    else if (const std::string* t = p.model.token(id))
      tokens.push_back(*t);
    else
      tokens.emplace_back("?");
  }
  return tokens;
}

std::string HfTokenizer::decodeToken(int32_t id) const {
  const int32_t one[] = {id};
  if (!impl_->pipeline.added.byId(id) && !impl_->pipeline.model.token(id)) return "?";
  return impl_->pipeline.decoder.decode(tokenStrings(one), hf::DecodeMode::Token);
}

std::string HfTokenizer::decode(std::span<const int32_t> ids) const {
  return impl_->pipeline.decoder.decode(tokenStrings(ids), hf::DecodeMode::Sequence);
}

std::optional<int32_t> HfTokenizer::endOfText() const {
  return impl_->special.endOfText;
}

std::optional<int32_t> HfTokenizer::tokenId(std::string_view piece) const {
  if (const auto id = impl_->pipeline.added.id(piece)) return id;
  return impl_->pipeline.model.id(piece);
}

std::optional<int32_t> HfTokenizer::bos() const {
  return impl_->special.bos;
}

std::vector<int32_t> HfTokenizer::eosIds() const {
  if (!impl_->special.eos.empty()) return impl_->special.eos;
  return Tokenizer::eosIds();
}

std::string HfTokenizer::chatTemplate() const {
  return impl_->config.chatTemplate;
}

SequenceSpecials HfTokenizer::sequenceSpecials() const {
  return impl_->pipeline.specials;
}

const std::vector<std::string>& HfTokenizer::warnings() const {
  return impl_->pipeline.idWarnings;
}

nlohmann::json HfTokenizer::describe() const {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& f : files_)
    names.push_back(f.name);
  return {{"kind", "hf"}, {"vocab", vocab()}, {"files", names}, {"fnv1a64", filesHash(files_)}};
}

} // namespace helios::text
