#include "engine/text/hf/tokenizer_json.hpp"

#include "engine/text/hf/post_processor.hpp"

#include <fmt/format.h>
#include <unordered_map>

namespace helios::text::hf {

namespace {

bool sameFlags(const AddedToken& a, const AddedToken& b) {
  return a.special == b.special && a.singleWord == b.singleWord && a.lstrip == b.lstrip &&
         a.rstrip == b.rstrip && a.normalized == b.normalized;
}

BpeModel modelFromJson(const nlohmann::json& j, const Field& at) {
  if (!j.is_object()) at.fail("expected an object");
  const std::string type = j.contains("type") ? asString(j["type"], at["type"]) : "BPE";
  if (type == "WordPiece" || type == "Unigram" || type == "WordLevel")
    at["type"].fail(fmt::format("{} models are not implemented in Helios (BPE is)", type));
  if (type != "BPE") at["type"].fail(fmt::format("unknown model type '{}' (Helios implements BPE)", type));
  return BpeModel::fromJson(j, at);
}

} // namespace

std::vector<AddedToken> assignAddedIds(const nlohmann::json& list, const BpeModel& model, const Field& at,
                                       std::vector<std::string>& warnings) {
  std::vector<AddedToken> tokens;
  if (list.is_null()) return tokens;
  if (!list.is_array()) at.fail("expected a list");
  std::unordered_map<std::string, size_t> seen;
  auto nextId = static_cast<int32_t>(model.size());
  for (size_t i = 0; i < list.size(); ++i) {
    AddedToken a = addedTokenFromJson(list[i], at[i]);
    const nlohmann::json& fileId = member(list[i], "id", at[i]);
    if (a.content.empty()) continue;
    if (const auto it = seen.find(a.content); it != seen.end()) {
      if (!sameFlags(tokens[it->second], a)) a.id = tokens[it->second].id, tokens[it->second] = a;
      continue;
    }
    const auto inModel = model.id(a.content);
    a.id = inModel ? *inModel : nextId++;
    if (!fileId.is_null() && asId(fileId, at[i]["id"]) != a.id)
      warnings.push_back(
          fmt::format("added token '{}' has id {} in the file; the tokenizers library gives it {}, "
                      "and so does Helios",
                      a.content, fileId.dump(), a.id));
    seen.emplace(a.content, tokens.size());
    tokens.push_back(std::move(a));
  }
  return tokens;
}

Pipeline parseTokenizerJson(std::string_view bytes) {
  const nlohmann::json j = parseJson(bytes, "tokenizer.json");
  const Field at("tokenizer.json");
  if (!j.is_object()) at.fail("expected a JSON object");
  if (const auto version = optString(j, "version", at); version && *version != "1.0")
    at["version"].fail(fmt::format("unknown version '{}' (1.0 is known)", *version));
  Pipeline p{.normalizer = Normalizer::fromJson(member(j, "normalizer", at), at["normalizer"]),
             .preTokenizer = PreTokenizer::fromJson(member(j, "pre_tokenizer", at), at["pre_tokenizer"]),
             .model = modelFromJson(required(j, "model", at), at["model"]),
             .added = {},
             .decoder = Decoder::fromJson(member(j, "decoder", at), at["decoder"]),
             .specials = postProcessorSpecials(member(j, "post_processor", at), at["post_processor"]),
             .idWarnings = {}};
  auto tokens = assignAddedIds(member(j, "added_tokens", at), p.model, at["added_tokens"], p.idWarnings);
  const Normalizer& n = p.normalizer;
  p.added = AddedVocabulary(std::move(tokens), [&n](std::string_view s) { return n.apply(s); });
  return p;
}

} // namespace helios::text::hf
