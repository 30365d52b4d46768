#include "engine/text/hf/config.hpp"

#include "engine/text/hf/json_field.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace helios::text::hf {

namespace {

// A special token as tokenizer_config.json writes it: "<s>", {"content": "<s>", ...} or null.
std::optional<std::string> tokenString(const nlohmann::json& object, const char* key, const Field& at) {
  const nlohmann::json& v = member(object, key, at);
  if (v.is_null()) return std::nullopt;
  if (v.is_object()) return asString(required(v, "content", at[key]), at[key]["content"]);
  return asString(v, at[key]);
}

std::optional<bool> optionalBool(const nlohmann::json& object, const char* key, const Field& at) {
  const nlohmann::json& v = member(object, key, at);
  return v.is_null() ? std::nullopt : std::optional<bool>(asBool(v, at[key]));
}

std::string chatTemplate(const nlohmann::json& v, const Field& at) {
  if (v.is_null()) return {};
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array() || v.empty()) at.fail("expected a template or a list of {\"name\", \"template\"}");
  for (size_t i = 0; i < v.size(); ++i)
    if (optString(v[i], "name", at[i]) == "default")
      return asString(required(v[i], "template", at[i]), at[i]["template"]);
  return asString(required(v[0], "template", at[0]), at[0]["template"]);
}

std::vector<AddedToken> addedTokensDecoder(const nlohmann::json& v, const Field& at) {
  std::vector<AddedToken> tokens;
  if (v.is_null()) return tokens;
  if (!v.is_object()) at.fail("expected an object of id -> token");
  for (const auto& [key, t] : v.items()) {
    const Field f = at[key];
    if (key.empty() || key.size() > 10 || key.find_first_not_of("0123456789") != std::string::npos)
      f.fail("the key is not a token id");
    AddedToken a = addedTokenFromJson(t, f);
    a.id = asId(nlohmann::json(std::stoll(key)), f);
    tokens.push_back(std::move(a));
  }
  std::sort(tokens.begin(), tokens.end(), [](const auto& x, const auto& y) { return x.id < y.id; });
  return tokens;
}

std::vector<int32_t> eosIds(const nlohmann::json& v, const Field& at) {
  if (v.is_null()) return {};
  if (!v.is_array()) return {asId(v, at)};
  std::vector<int32_t> ids;
  for (size_t i = 0; i < v.size(); ++i)
    ids.push_back(asId(v[i], at[i]));
  return ids;
}

void readSpecialTokens(const nlohmann::json& j, const Field& at, TokenizerConfig& c) {
  if (!c.bos) c.bos = tokenString(j, "bos_token", at);
  if (!c.eos) c.eos = tokenString(j, "eos_token", at);
  if (!c.unk) c.unk = tokenString(j, "unk_token", at);
  if (!c.pad) c.pad = tokenString(j, "pad_token", at);
}

} // namespace

const TokenizerFile* findFile(const std::vector<TokenizerFile>& files, std::string_view name) {
  for (const auto& f : files)
    if (f.name == name) return &f;
  return nullptr;
}

SpecialIds resolveSpecialIds(const TokenizerConfig& c,
                             const std::function<std::optional<int32_t>(std::string_view)>& idOf) {
  auto lookup = [&](const std::optional<std::string>& token, const char* field) -> std::optional<int32_t> {
    if (!token) return std::nullopt;
    const auto id = idOf(*token);
    if (!id)
      throw std::invalid_argument(
          fmt::format("tokenizer_config.json: {} '{}' is not a token of the tokenizer", field, *token));
    return id;
  };
  SpecialIds ids;
  ids.bos = lookup(c.bos, "bos_token");
  if (const auto eos = lookup(c.eos, "eos_token")) ids.eos.push_back(*eos);
  for (int32_t id : c.generationEos)
    if (std::find(ids.eos.begin(), ids.eos.end(), id) == ids.eos.end()) ids.eos.push_back(id);
  ids.endOfText = !ids.eos.empty() ? std::optional<int32_t>(ids.eos.front()) : idOf("<|endoftext|>");
  return ids;
}

TokenizerConfig readTokenizerConfig(const std::vector<TokenizerFile>& files) {
  TokenizerConfig c;
  if (const auto* f = findFile(files, "tokenizer_config.json")) {
    const nlohmann::json j = parseJson(f->bytes, f->name);
    const Field at(f->name);
    if (!j.is_object()) at.fail("expected a JSON object");
    readSpecialTokens(j, at, c);
    c.addBos = optionalBool(j, "add_bos_token", at);
    c.addEos = optionalBool(j, "add_eos_token", at);
    c.chatTemplate = chatTemplate(member(j, "chat_template", at), at["chat_template"]);
    c.addedTokens = addedTokensDecoder(member(j, "added_tokens_decoder", at), at["added_tokens_decoder"]);
  }
  if (const auto* f = findFile(files, "special_tokens_map.json")) {
    const nlohmann::json j = parseJson(f->bytes, f->name);
    readSpecialTokens(j, Field(f->name), c);
  }
  if (const auto* f = findFile(files, "chat_template.jinja")) c.chatTemplate = f->bytes;
  if (const auto* f = findFile(files, "generation_config.json")) {
    const nlohmann::json j = parseJson(f->bytes, f->name);
    const Field at(f->name);
    c.generationEos = eosIds(member(j, "eos_token_id", at), at["eos_token_id"]);
  }
  return c;
}

} // namespace helios::text::hf
