#pragma once
// tokenizer.json's "normalizer": what runs on the text between added tokens before pre-tokenization.
// Implemented: NFC, NFD, NFKC, NFKD (utf8proc), Prepend, Replace (a string or an Oniguruma pattern) and
// Sequence of these; any other type is refused by name.
#include "engine/text/hf/json_field.hpp"
#include "engine/text/hf/regex.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace helios::text::hf {

enum class UnicodeForm { Nfc, Nfd, Nfkc, Nfkd };

// `text` (valid UTF-8) in the normal form; ASCII-only text is returned as it is.
std::string normalizeUnicode(std::string_view text, UnicodeForm form);

class Normalizer {
public:
  Normalizer() = default; // none: the text as it is
  // From the JSON value (null: none).
  static Normalizer fromJson(const nlohmann::json& j, const Field& at);

  std::string apply(std::string_view text) const;
  bool none() const { return steps_.empty(); }

private:
  enum class Kind { Unicode, Prepend, Replace };
  struct Step {
    Kind kind;
    UnicodeForm form = UnicodeForm::Nfc;
    std::string text; // Prepend's prefix, Replace's content
    std::optional<Regex> pattern;
  };
  void add(const nlohmann::json& j, const Field& at);
  std::vector<Step> steps_;
};

// tokenizer.json's {"String": s} or {"Regex": r} (Split, Replace).
Regex patternFromJson(const nlohmann::json& j, const Field& at);
// The text with every match of `pattern` replaced by `content`.
std::string replaceAll(std::string_view text, const Regex& pattern, std::string_view content);

} // namespace helios::text::hf
