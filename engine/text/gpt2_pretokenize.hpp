#pragma once
// GPT-2's pre-tokenizer: the text is cut into pieces before BPE, as the original regular expression does
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// implemented as a scanner (std::regex has no Unicode classes). At each position the first alternative that
// matches wins: a contraction; else an optional space and a run of letters, numbers or other characters
// (the class of the first character decides which); else a whitespace run, less its last character when a
// non-space follows (so that the space joins the next word), or that one whitespace character alone.
#include <string_view>
#include <vector>

namespace helios::text {

std::vector<std::string_view> gpt2Pretokenize(std::string_view text);

} // namespace helios::text
