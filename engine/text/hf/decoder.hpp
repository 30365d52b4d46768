#pragma once
// tokenizer.json's "decoder": tokens back to text. Implemented: ByteLevel, Metaspace, Replace, ByteFallback,
// Fuse, Strip, BPEDecoder and Sequence of these (any other type is refused by name); no decoder joins the
// tokens with spaces, as the library does. Where the library would turn bytes that are not UTF-8 into
// U+FFFD (ByteLevel, ByteFallback), Helios returns the bytes, so the tokens of a text decode to its bytes
// whether decoded whole or one by one.
#include "engine/text/hf/json_field.hpp"
#include "engine/text/hf/regex.hpp"

#include <optional>
#include <string>
#include <vector>

namespace helios::text::hf {

// A whole sequence, or one token for streaming output (no Strip, Metaspace keeps the leading space, and
// BPEDecoder's suffix stands for a space).
enum class DecodeMode { Sequence, Token };

class Decoder {
public:
  Decoder() = default; // none
  static Decoder fromJson(const nlohmann::json& j, const Field& at);

  std::string decode(std::vector<std::string> tokens, DecodeMode mode) const;

private:
  enum class Kind { ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, BpeSuffix };
  struct Step {
    Kind kind;
    std::string text;  // Metaspace: replacement; Replace: content; Strip: the character; BPEDecoder: suffix
    bool flag = false; // Metaspace: strips the first token's replacement (prepend_scheme other than never)
    size_t start = 0, stop = 0;   // Strip
    std::optional<Regex> pattern; // Replace
  };
  void add(const nlohmann::json& j, const Field& at);
  static std::vector<std::string> run(const Step& s, std::vector<std::string> tokens, DecodeMode mode);
  std::vector<Step> steps_;
  bool none_ = true;
};

} // namespace helios::text::hf
