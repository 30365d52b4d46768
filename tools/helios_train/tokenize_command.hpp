#pragma once
// helios-train tokenize: any Helios tokenizer on text, for people and for checks against other libraries.
//   helios-train tokenize --tokenizer DIR --text "Hello"       ids, space-separated, on one line
//   helios-train tokenize --tokenizer DIR --file notes.txt     the file as one text
//   helios-train tokenize --tokenizer DIR --jsonl < in.jsonl   each line a JSON string -> a JSON id list
//   helios-train tokenize --tokenizer DIR --decode --text "9906 1917"
//   helios-train tokenize --tokenizer DIR --info               the tokenizer's kind, vocabulary, special ids
// Without --text or --file the input is stdin.
#include <CLI/CLI.hpp>

#include <string>

namespace helios::train_cli {

struct TokenizeFlags {
  std::string tokenizer, text, file;
  bool jsonl = false, decode = false, info = false;
};

CLI::App* addTokenizeCommand(CLI::App& app, TokenizeFlags& flags);
int runTokenize(const TokenizeFlags& flags);

} // namespace helios::train_cli
