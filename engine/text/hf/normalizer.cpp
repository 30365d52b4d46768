#include "engine/text/hf/normalizer.hpp"

#include <cstdlib>
#include <fmt/format.h>
#include <stdexcept>
#include <utf8proc.h>

namespace helios::text::hf {

std::string normalizeUnicode(std::string_view text, UnicodeForm form) {
  bool ascii = true;
  for (char c : text)
    ascii = ascii && static_cast<uint8_t>(c) < 0x80;
  if (ascii || text.empty()) return std::string(text);
  int options = UTF8PROC_STABLE;
  options |= form == UnicodeForm::Nfc || form == UnicodeForm::Nfkc ? UTF8PROC_COMPOSE : UTF8PROC_DECOMPOSE;
  if (form == UnicodeForm::Nfkc || form == UnicodeForm::Nfkd) options |= UTF8PROC_COMPAT;
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &out, static_cast<utf8proc_option_t>(options));
  if (n < 0) throw std::invalid_argument(fmt::format("Unicode normalization: {}", utf8proc_errmsg(n)));
  std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}

Regex patternFromJson(const nlohmann::json& j, const Field& at) {
  const bool literal = j.is_object() && j.size() == 1 && j.contains("String");
  if (!literal && !(j.is_object() && j.size() == 1 && j.contains("Regex")))
    at.fail("expected {\"String\": ...} or {\"Regex\": ...}");
  const char* key = literal ? "String" : "Regex";
  const std::string pattern = asString(j[key], at[key]);
  try {
    return literal ? Regex::literal(pattern) : Regex::oniguruma(pattern);
  } catch (const std::invalid_argument& e) {
    at[key].fail(e.what());
  }
}

std::string replaceAll(std::string_view text, const Regex& pattern, std::string_view content) {
  std::string out;
  size_t at = 0;
  for (const Span& m : pattern.find(text)) {
    out.append(text.substr(at, m.begin - at));
    out.append(content);
    at = m.end;
  }
  out.append(text.substr(at));
  return out;
}

Normalizer Normalizer::fromJson(const nlohmann::json& j, const Field& at) {
  Normalizer n;
  if (!j.is_null()) n.add(j, at);
  return n;
}

void Normalizer::add(const nlohmann::json& j, const Field& at) {
  const std::string type = asString(required(j, "type", at), at["type"]);
  if (type == "Sequence") {
    forEachIn(j, "normalizers", at, [this](const nlohmann::json& e, const Field& f) { add(e, f); });
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    const UnicodeForm form = type == "NFC"    ? UnicodeForm::Nfc
                             : type == "NFD"  ? UnicodeForm::Nfd
                             : type == "NFKC" ? UnicodeForm::Nfkc
                                              : UnicodeForm::Nfkd;
    steps_.push_back({Kind::Unicode, form, {}, std::nullopt});
  } else if (type == "Prepend") {
    steps_.push_back({Kind::Prepend, {}, asString(required(j, "prepend", at), at["prepend"]), std::nullopt});
  } else if (type == "Replace") {
    steps_.push_back({Kind::Replace,
                      {},
                      asString(required(j, "content", at), at["content"]),
                      patternFromJson(required(j, "pattern", at), at["pattern"])});
  } else {
    at["type"].fail(
        fmt::format("normalizer '{}' is not implemented in Helios (NFC, NFD, NFKC, NFKD, Prepend, "
                    "Replace and Sequence are)",
                    type));
  }
}

std::string Normalizer::apply(std::string_view text) const {
  std::string s(text);
  for (const Step& step : steps_) {
    switch (step.kind) {
    case Kind::Unicode:
      s = normalizeUnicode(s, step.form);
      break;
    case Kind::Prepend:
      if (!s.empty()) s = step.text + s;
      break;
    case Kind::Replace:
      s = replaceAll(s, *step.pattern, step.text);
      break;
    }
  }
  return s;
}

} // namespace helios::text::hf
