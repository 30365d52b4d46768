#include "engine/text/load.hpp"

#include "engine/text/directory.hpp"
#include "engine/text/gpt2_bpe.hpp"
#include "engine/text/hf_tokenizer.hpp"
#include "engine/text/sentencepiece.hpp"
#include "engine/text/simple.hpp"

#include <cstdio>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace helios::text {

namespace fs = std::filesystem;

std::string readWholeFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  if (!in || !fs::is_regular_file(path, ec))
    throw std::invalid_argument(fmt::format("{}: cannot read the tokenizer file", path.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

std::unique_ptr<Tokenizer> gpt2From(const fs::path& dir) {
  return std::make_unique<Gpt2Tokenizer>(readWholeFile(dir / "encoder.json"),
                                         readWholeFile(dir / "vocab.bpe"));
}

std::vector<uint8_t> charsOf(const nlohmann::json& d) {
  std::vector<uint8_t> chars;
  for (const auto& c : d.at("chars")) {
    const int v = c.get<int>();
    if (v < 0 || v > 255)
      throw std::invalid_argument(fmt::format("char-level tokenizer: {} is not a byte", v));
    chars.push_back(static_cast<uint8_t>(v));
  }
  return chars;
}

// Added tokens whose id in tokenizer.json differs from the library's (and Helios') are said once on stderr.
std::unique_ptr<Tokenizer> hfFrom(std::vector<TokenizerFile> files) {
  auto t = std::make_unique<HfTokenizer>(std::move(files));
  for (const auto& w : t->warnings())
    std::fprintf(stderr, "helios: tokenizer.json: %s\n", w.c_str());
  return t;
}

// A directory's tokenizer.model with its configuration files (not tokenizer.json, which takes precedence).
std::unique_ptr<Tokenizer> sentencePieceFrom(std::vector<TokenizerFile> files) {
  std::string model;
  std::vector<TokenizerFile> config;
  for (auto& f : files)
    if (f.name == "tokenizer.model")
      model = std::move(f.bytes);
    else
      config.push_back(std::move(f));
  return std::make_unique<SentencePieceTokenizer>(std::move(model), std::move(config));
}

// The files a description lists (tokenizer.model where it lists none), read from `dir`.
std::vector<TokenizerFile> listedFiles(const nlohmann::json& d, const fs::path& dir) {
  std::vector<TokenizerFile> files;
  const nlohmann::json names = d.contains("files") ? d["files"] : nlohmann::json::array({"tokenizer.model"});
  for (const auto& name : names) {
    const std::string n = name.get<std::string>();
    if (n.find('/') != std::string::npos || n == ".." || n.empty())
      throw std::invalid_argument(fmt::format("tokenizer description: '{}' is not a file name", n));
    files.push_back({n, readWholeFile(dir / n)});
  }
  return files;
}

} // namespace

std::unique_ptr<Tokenizer> openTokenizer(const std::string& spec) {
  if (spec == "byte") return std::make_unique<ByteTokenizer>();
  const fs::path p(spec);
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    if (fs::exists(p / "tokenizer.json")) return hfFrom(readTokenizerFiles(p));
    if (fs::exists(p / "encoder.json")) return gpt2From(p);
    if (fs::exists(p / "vocab.json") && fs::exists(p / "merges.txt")) // a Hugging Face GPT-2 directory
      return std::make_unique<Gpt2Tokenizer>(readWholeFile(p / "vocab.json"),
                                             readWholeFile(p / "merges.txt"));
    if (fs::exists(p / "tokenizer.model")) return sentencePieceFrom(readTokenizerFiles(p));
    throw std::invalid_argument(
        fmt::format("{}: the directory has neither encoder.json + vocab.bpe (GPT-2 BPE), vocab.json + "
                    "merges.txt (its Hugging Face names), tokenizer.json (Hugging Face) nor tokenizer.model",
                    spec));
  }
  if (p.filename() == "encoder.json") return gpt2From(p.parent_path());
  if (p.filename() == "tokenizer.json" && fs::is_regular_file(p, ec))
    return hfFrom(readTokenizerFiles(p.parent_path().empty() ? fs::path(".") : p.parent_path()));
  if (fs::is_regular_file(p, ec)) return std::make_unique<SentencePieceTokenizer>(readWholeFile(p));
  throw std::invalid_argument(
      fmt::format("tokenizer '{}': not 'byte', a SentencePiece .model file, a "
                  "tokenizer.json, or a directory with tokenizer.json, tokenizer.model "
                  "or GPT-2's encoder.json and vocab.bpe",
                  spec));
}

std::unique_ptr<Tokenizer> loadTokenizer(const nlohmann::json& d, const fs::path& dir) {
  const std::string kind = d.value("kind", "");
  std::unique_ptr<Tokenizer> t;
  if (kind == "byte")
    t = std::make_unique<ByteTokenizer>();
  else if (kind == "char")
    t = std::make_unique<CharTokenizer>(charsOf(d));
  else if (kind == "sentencepiece")
    t = sentencePieceFrom(listedFiles(d, dir));
  else if (kind == "gpt2")
    t = gpt2From(dir);
  else if (kind == "hf")
    t = hfFrom(listedFiles(d, dir));
  else
    throw std::invalid_argument(fmt::format("unknown tokenizer kind '{}'", kind));
  if (t->describe() != d)
    throw std::invalid_argument(
        fmt::format("{}: the tokenizer files there ({}) are not the ones recorded ({})", dir.string(),
                    t->describe().dump(), d.dump()));
  return t;
}

} // namespace helios::text
