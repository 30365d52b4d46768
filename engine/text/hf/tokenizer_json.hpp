#pragma once
// tokenizer.json (the tokenizers library's one-file format) parsed into the stages encode and decode run:
// added tokens, normalizer, pre-tokenizer, BPE model, decoder, and what the post-processor would add. A model
// type other than BPE (WordPiece, Unigram, WordLevel) is refused by name; a file that does not parse is
// refused naming where; a malformed field names the field.
#include "engine/text/hf/added_vocabulary.hpp"
#include "engine/text/hf/bpe_model.hpp"
#include "engine/text/hf/decoder.hpp"
#include "engine/text/hf/normalizer.hpp"
#include "engine/text/hf/pre_tokenizer.hpp"
#include "engine/text/tokenizer.hpp"

#include <string_view>
#include <vector>

namespace helios::text::hf {

struct Pipeline {
  Normalizer normalizer;
  PreTokenizer preTokenizer;
  BpeModel model;
  AddedVocabulary added;
  Decoder decoder;
  SequenceSpecials specials;
  // Added tokens whose id in the file differs from the one the library assigns (and Helios uses): warnings.
  std::vector<std::string> idWarnings;
};

Pipeline parseTokenizerJson(std::string_view bytes);

// The added tokens with the ids the tokenizers library gives them on load: the id of the same string in the
// model's vocabulary, else the next id from the vocabulary's size on, in the file's order (the "id" written
// in the file is only compared). Empty and repeated entries are left out, as there.
std::vector<AddedToken> assignAddedIds(const nlohmann::json& list, const BpeModel& model, const Field& at,
                                       std::vector<std::string>& warnings);

} // namespace helios::text::hf
