#include "engine/text/hf/post_processor.hpp"

#include <fmt/format.h>

namespace helios::text::hf {

namespace {

// TemplateProcessing's "single": special tokens before the sequence piece go before the text's ids.
void templateSpecials(const nlohmann::json& j, const Field& at, SequenceSpecials& out) {
  const nlohmann::json& single = required(j, "single", at);
  const nlohmann::json& specials = member(j, "special_tokens", at);
  if (!single.is_array()) at["single"].fail("expected a list");
  bool afterSequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const Field f = at["single"][i];
    if (single[i].contains("Sequence")) {
      afterSequence = true;
      continue;
    }
    const std::string name = asString(
        required(required(single[i], "SpecialToken", f), "id", f["SpecialToken"]), f["SpecialToken"]["id"]);
    const Field sf = at["special_tokens"][name];
    const nlohmann::json& ids = required(required(specials, name.c_str(), at["special_tokens"]), "ids", sf);
    if (!ids.is_array()) sf["ids"].fail("expected a list of ids");
    for (size_t k = 0; k < ids.size(); ++k)
      (afterSequence ? out.suffix : out.prefix).push_back(asId(ids[k], sf["ids"][k]));
  }
}

int32_t pairId(const nlohmann::json& j, const char* key, const Field& at) {
  const nlohmann::json& pair = required(j, key, at);
  if (!pair.is_array() || pair.size() != 2) at[key].fail("expected [token, id]");
  return asId(pair[1], at[key][1]);
}

void add(const nlohmann::json& j, const Field& at, SequenceSpecials& out) {
  const std::string type = asString(required(j, "type", at), at["type"]);
  if (type == "Sequence") {
    forEachIn(j, "processors", at, [&](const nlohmann::json& e, const Field& f) { add(e, f, out); });
  } else if (type == "TemplateProcessing") {
    templateSpecials(j, at, out);
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    out.prefix.push_back(pairId(j, "cls", at));
    out.suffix.push_back(pairId(j, "sep", at));
  } else if (type != "ByteLevel") {
    at["type"].fail(fmt::format("post-processor '{}' is not implemented in Helios (TemplateProcessing, "
                                "RobertaProcessing, BertProcessing, ByteLevel and Sequence are)",
                                type));
  }
}

} // namespace

SequenceSpecials postProcessorSpecials(const nlohmann::json& j, const Field& at) {
  SequenceSpecials out;
  if (!j.is_null()) add(j, at, out);
  return out;
}

} // namespace helios::text::hf
