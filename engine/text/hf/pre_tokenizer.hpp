#pragma once
// tokenizer.json's "pre_tokenizer": cuts normalized text into the pieces the model encodes one by one.
// Implemented: Split (a string or Oniguruma pattern, the five delimiter behaviours, invert), ByteLevel
// (add_prefix_space, use_regex with GPT-2's expression; each byte becomes the character that spells it),
// Digits, Metaspace and Sequence of these; any other type is refused by name. trim_offsets only moves
// offsets, which Helios does not report.
#include "engine/text/hf/json_field.hpp"
#include "engine/text/hf/regex.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace helios::text::hf {

struct Piece {
  std::string text;
  bool atStart = false; // it starts where the encoded text starts (Metaspace's prepend_scheme "first")
};

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// A span of a piece and whether it is a delimiter; a list of them covers the piece in order.
struct Marked {
  Span span;
  bool match = false;
};

// The spans a piece is cut into (tokenizers' NormalizedString::split): empty spans are left out.
std::vector<Span> cutSpans(std::vector<Marked> marked, SplitBehavior behavior);

class PreTokenizer {
public:
  PreTokenizer() = default; // none: each piece whole
  static PreTokenizer fromJson(const nlohmann::json& j, const Field& at);

  // Calls `each` with every piece `piece` is cut into, in order (pieces are never empty).
  void apply(Piece piece, const std::function<void(Piece)>& each) const;

private:
  enum class Kind { Split, ByteLevel, Digits, Metaspace };
  enum class Prepend { Always, First, Never };
  struct Step {
    Kind kind;
    std::optional<Regex> pattern;                     // Split
    SplitBehavior behavior = SplitBehavior::Isolated; // Split
    bool invert = false;                              // Split
    bool flag = false;       // ByteLevel: add_prefix_space; Digits: individual_digits; Metaspace: split
    bool useRegex = false;   // ByteLevel
    std::string replacement; // Metaspace
    Prepend prepend = Prepend::Always; // Metaspace
  };
  void add(const nlohmann::json& j, const Field& at);
  static void run(const Step& step, const Piece& piece, const std::function<void(Piece)>& emit);
  void runFrom(size_t k, Piece piece, const std::function<void(Piece)>& each) const;
  std::vector<Step> steps_;
};

} // namespace helios::text::hf
