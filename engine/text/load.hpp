#pragma once
// Building a tokenizer from what a user names or what was saved:
//   openTokenizer("byte")                   byte-level
//   openTokenizer("path/to/m.model")        a SentencePiece model (the file alone)
//   openTokenizer("path/to/dir")            dir/tokenizer.json (a Hugging Face tokenizer, with the files of
//                                           directory.hpp beside it); else GPT-2 BPE: dir/encoder.json +
//                                           dir/vocab.bpe, or a Hugging Face GPT-2 export's dir/vocab.json +
//                                           dir/merges.txt; else dir/tokenizer.model with the directory's
//                                           tokenizer_config.json etc.
//   openTokenizer("path/to/tokenizer.json") its directory, as above
//   openTokenizer("path/to/encoder.json")   GPT-2 BPE with vocab.bpe beside it
// and loadTokenizer(describe(), dir) from a description plus the files() it names, saved in `dir`.
#include "engine/text/tokenizer.hpp"

#include <filesystem>
#include <memory>

namespace helios::text {

// Throws std::invalid_argument saying what `spec` is and what was expected.
std::unique_ptr<Tokenizer> openTokenizer(const std::string& spec);
// Throws std::invalid_argument for an unknown kind, a missing file, or files whose hash differs from the
// description's.
std::unique_ptr<Tokenizer> loadTokenizer(const nlohmann::json& description, const std::filesystem::path& dir);

// Reads a whole file; throws std::invalid_argument naming it.
std::string readWholeFile(const std::filesystem::path& path);

} // namespace helios::text
