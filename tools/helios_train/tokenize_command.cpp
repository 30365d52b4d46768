#include "tokenize_command.hpp"

#include "engine/text/load.hpp"

#include <cstdint>
#include <cstdio>
#include <fmt/format.h>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace helios::train_cli {

namespace {

std::string readInput(const TokenizeFlags& f) {
  if (!f.text.empty()) return f.text;
  if (!f.file.empty()) return text::readWholeFile(f.file);
  return {std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
}

std::vector<int32_t> parseIds(const std::string& s) {
  std::vector<int32_t> ids;
  std::istringstream in(s);
  std::string word;
  while (in >> word) {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(word, &used);
    } catch (const std::exception&) {
    }
    if (used != word.size() || v < 0 || v > INT32_MAX)
      throw std::invalid_argument(fmt::format("'{}' is not a token id", word));
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

std::string joined(const std::vector<int32_t>& ids) {
  return fmt::format("{}", fmt::join(ids, " "));
}

// One JSON value per line in, one per line out: strings to id lists, or id lists to strings (--decode).
void runJsonLines(const text::Tokenizer& tok, const std::string& input, bool decode) {
  std::istringstream in(input);
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    try {
      const nlohmann::json v = nlohmann::json::parse(line);
      if (decode) {
        const std::string text = tok.decode(v.get<std::vector<int32_t>>());
        std::printf(
            "%s\n",
            nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      } else {
        std::printf("%s\n", nlohmann::json(tok.encode(v.get<std::string>())).dump().c_str());
      }
    } catch (const std::exception& e) {
      throw std::invalid_argument(fmt::format("line {}: {}", n, e.what()));
    }
  }
}

nlohmann::json info(const text::Tokenizer& tok) {
  const text::SequenceSpecials specials = tok.sequenceSpecials();
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : tok.files())
    files.push_back(f.name);
  return {{"kind", tok.kind()},
          {"vocab", tok.vocab()},
          {"bos", tok.bos() ? nlohmann::json(*tok.bos()) : nlohmann::json()},
          {"eos", tok.eosIds()},
          {"end_of_text", tok.endOfText() ? nlohmann::json(*tok.endOfText()) : nlohmann::json()},
          {"adds_before", specials.prefix},
          {"adds_after", specials.suffix},
          {"chat_template", !tok.chatTemplate().empty()},
          {"files", files}};
}

} // namespace

CLI::App* addTokenizeCommand(CLI::App& app, TokenizeFlags& f) {
  auto* cmd = app.add_subcommand(
      "tokenize",
      "Encode text into token ids (or --decode ids) with any Helios tokenizer; the text alone: no "
      "BOS/EOS is added (--info shows what transformers would add)");
  cmd->add_option(
         "--tokenizer", f.tokenizer,
         "byte, a SentencePiece .model, a Hugging Face directory (tokenizer.json, or tokenizer.model "
         "with its tokenizer_config.json), a tokenizer.json, or a GPT-2 directory")
      ->required();
  auto* text = cmd->add_option("--text", f.text, "The text (else --file, else stdin)");
  cmd->add_option("--file", f.file, "A file read whole as the text")->excludes(text);
  cmd->add_flag("--jsonl", f.jsonl,
                "Each input line is a JSON string; each output line the JSON list of its ids (with --decode: "
                "lists in, strings out)");
  cmd->add_flag("--decode", f.decode, "The input is token ids (space-separated); print their text");
  cmd->add_flag("--info", f.info, "Print the tokenizer's kind, vocabulary, special ids and files as JSON");
  return cmd;
}

int runTokenize(const TokenizeFlags& f) {
  const auto tok = text::openTokenizer(f.tokenizer);
  if (f.info) {
    std::printf("%s\n", info(*tok).dump(2).c_str());
    return 0;
  }
  const std::string input = readInput(f);
  if (f.jsonl) {
    runJsonLines(*tok, input, f.decode);
  } else if (f.decode) {
    const std::string out = tok->decode(parseIds(input));
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::printf("\n");
  } else {
    std::printf("%s\n", joined(tok->encode(input)).c_str());
  }
  return 0;
}

} // namespace helios::train_cli
