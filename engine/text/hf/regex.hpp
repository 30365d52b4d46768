#pragma once
// The regular expressions of tokenizer.json (Split and Replace patterns, ByteLevel's GPT-2 expression),
// evaluated with PCRE2 in UTF + UCP mode. The files are written for Oniguruma (the `tokenizers` library's
// engine, Ruby syntax), so a pattern is first translated where the two differ (onigToPcre2); matches are
// then enumerated as the onig crate's find_iter does (an empty match right where the previous match ended
// is skipped by one character).
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace helios::text::hf {

struct Span {
  size_t begin = 0, end = 0;
};

class Regex {
public:
  // An Oniguruma pattern (tokenizer.json's {"Regex": ...}); throws std::invalid_argument with PCRE2's
  // message and offset, or naming the construct that has no PCRE2 equivalent.
  static Regex oniguruma(std::string_view pattern);
  // A literal string (tokenizer.json's {"String": ...}); must not be empty.
  static Regex literal(std::string_view text);

  // Every match in `text`, which must be valid UTF-8 (the callers check the input once), to `each` in order.
  void forEach(std::string_view text, const std::function<void(Span)>& each) const;
  std::vector<Span> find(std::string_view text) const;
  const std::string& pattern() const { return source_; }

private:
  struct Code;
  Regex(std::string source, std::string_view compiled, bool literal);
  std::string source_;
  std::shared_ptr<const Code> code_;
};

// Oniguruma (Ruby syntax, Unicode) -> PCRE2 with UTF, UCP and MULTILINE: \s, \S become White_Space (PCRE2
// also counts U+180E), \w, \W, \b, \B use Letter|Mark|Number|Connector_Punctuation (PCRE2: L, N and '_'),
// \h, \H are hex digits (PCRE2: horizontal space), \v is U+000B, \uHHHH is \x{HHHH}, and the inline option
// m (Ruby's dot-all) becomes s. Class intersection (&&) and nested classes are refused.
std::string onigToPcre2(std::string_view pattern);

} // namespace helios::text::hf
