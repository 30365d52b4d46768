#include "engine/text/hf/regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <fmt/format.h>
#include <stdexcept>

namespace helios::text::hf {

namespace {

constexpr std::string_view kWord = "\\p{L}\\p{M}\\p{N}\\p{Pc}";
constexpr std::string_view kHex = "0-9a-fA-F";

[[noreturn]] void unsupported(std::string_view pattern, std::string_view what) {
  throw std::invalid_argument(
      fmt::format("regular expression '{}': {} has no PCRE2 equivalent in Helios", pattern, what));
}

// The translation of the escape `\c` (c is the character after the backslash), or "" to keep it as it is.
std::string translateEscape(std::string_view pattern, char c, bool inClass) {
  const std::string word(kWord), hex(kHex);
  switch (c) {
  case 's':
    return "\\p{White_Space}";
  case 'S':
    return "\\P{White_Space}";
  case 'w':
    return inClass ? word : "[" + word + "]";
  case 'h':
    return inClass ? hex : "[" + hex + "]";
  case 'v':
    return "\\x{0B}";
  case 'W':
  case 'H':
    if (inClass) unsupported(pattern, fmt::format("\\{} inside a character class", c));
    return c == 'W' ? "[^" + word + "]" : "[^" + hex + "]";
  case 'b':
  case 'B': {
    if (inClass) return ""; // a backspace in a class, as in PCRE2
    const std::string w = "[" + word + "]";
    return c == 'b' ? fmt::format("(?:(?<={0})(?!{0})|(?<!{0})(?={0}))", w)
                    : fmt::format("(?:(?<={0})(?={0})|(?<!{0})(?!{0}))", w);
  }
  default:
    return "";
  }
}

bool isHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// An inline option group "(?imx-imx" or "(?imx-imx:" starting at pattern[i] == '(' : Ruby's m is PCRE2's s.
size_t copyOptionGroup(std::string_view p, size_t i, std::string& out) {
  size_t j = i + 2;
  while (j < p.size() && (p[j] == 'i' || p[j] == 'm' || p[j] == 'x' || p[j] == '-'))
    ++j;
  if (j == i + 2 || j >= p.size() || (p[j] != ')' && p[j] != ':')) return i; // not an option group
  out += "(?";
  for (size_t k = i + 2; k < j; ++k)
    out += p[k] == 'm' ? 's' : p[k];
  return j; // the ')' or ':' is copied by the caller
}

} // namespace

std::string onigToPcre2(std::string_view p) {
  std::string out;
  bool inClass = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[++i];
      if (e == 'u' && i + 4 < p.size() && isHex(p[i + 1]) && isHex(p[i + 2]) && isHex(p[i + 3]) &&
          isHex(p[i + 4])) {
        out += fmt::format("\\x{{{}}}", p.substr(i + 1, 4));
        i += 4;
        continue;
      }
      const std::string t = translateEscape(p, e, inClass);
      out += t.empty() ? std::string{'\\', e} : t;
      continue;
    }
    if (inClass) {
      if (c == '[' && !(i + 1 < p.size() && p[i + 1] == ':')) unsupported(p, "a nested character class");
      if (c == '&' && i + 1 < p.size() && p[i + 1] == '&') unsupported(p, "class intersection (&&)");
      if (c == '[') { // a POSIX class such as [:alpha:], copied whole
        const size_t end = p.find(":]", i + 2);
        if (end == std::string_view::npos) unsupported(p, "an unterminated POSIX class");
        out += p.substr(i, end + 2 - i);
        i = end + 1;
        continue;
      }
      if (c == ']') inClass = false;
      out += c;
      continue;
    }
    if (c == '[') {
      inClass = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (c == '(' && i + 1 < p.size() && p[i + 1] == '?') {
      const size_t j = copyOptionGroup(p, i, out);
      if (j != i) {
        i = j - 1;
        continue;
      }
    }
    out += c;
  }
  return out;
}

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

Regex::Regex(std::string source, std::string_view compiled, bool literal) : source_(std::move(source)) {
  auto code = std::make_shared<Code>();
  pcre2_compile_context* ctx = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(ctx, PCRE2_NEWLINE_LF);
  int error = 0;
  PCRE2_SIZE offset = 0;
  const uint32_t options = literal ? PCRE2_UTF | PCRE2_LITERAL : PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE;
  code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(compiled.data()), compiled.size(), options, &error,
                             &offset, ctx);
  pcre2_compile_context_free(ctx);
  if (!code->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw std::invalid_argument(fmt::format("regular expression '{}': {} (at offset {} of '{}')", source_,
                                            reinterpret_cast<const char*>(message), offset, compiled));
  }
  code->jit = pcre2_jit_compile(code->code, PCRE2_JIT_COMPLETE) == 0;
  code_ = std::move(code);
}

Regex Regex::oniguruma(std::string_view pattern) {
  return Regex(std::string(pattern), onigToPcre2(pattern), false);
}

Regex Regex::literal(std::string_view text) {
  if (text.empty()) throw std::invalid_argument("an empty string is not a pattern");
  return Regex(std::string(text), text, true);
}

namespace {

struct MatchData {
  pcre2_match_data* data;
  explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(data); }
};

size_t utf8Length(uint8_t lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

} // namespace

std::vector<Span> Regex::find(std::string_view text) const {
  std::vector<Span> spans;
  forEach(text, [&spans](Span m) { spans.push_back(m); });
  return spans;
}

void Regex::forEach(std::string_view text, const std::function<void(Span)>& each) const {
  MatchData md(code_->code);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t lastEnd = 0;
  bool matched = false;
  size_t lastMatchEnd = 0;
  while (lastEnd <= text.size()) {
    int rc = pcre2_match(code_->code, subject, text.size(), lastEnd, PCRE2_NO_UTF_CHECK, md.data, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) // a long run outgrew JIT's stack: the interpreter uses the heap
      rc = pcre2_match(code_->code, subject, text.size(), lastEnd, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md.data,
                       nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      throw std::runtime_error(fmt::format("regular expression '{}': matching failed ({})", source_,
                                           reinterpret_cast<const char*>(message)));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(md.data);
    const Span m{ovector[0], ovector[1]};
    if (m.begin == m.end && matched && lastMatchEnd == m.end) {
      lastEnd += lastEnd < text.size() ? utf8Length(static_cast<uint8_t>(text[lastEnd])) : 1;
      continue;
    }
    lastEnd = m.end;
    lastMatchEnd = m.end;
    matched = true;
    each(m);
  }
}

} // namespace helios::text::hf
