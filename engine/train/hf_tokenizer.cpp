#include "engine/train/hf_tokenizer.hpp"

#include "engine/train/durable_file.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace helios::train {

namespace {

const char* kEndOfText = "<|endoftext|>";

std::string fileNamed(const text::Tokenizer& tok, const std::string& name) {
  for (auto& f : tok.files())
    if (f.name == name) return std::move(f.bytes);
  throw std::invalid_argument(fmt::format("{} tokenizer: no file {} to export", tok.kind(), name));
}

// GPT2Tokenizer reads merges.txt from its second line on, whatever the first holds, and expects a final
// newline (it drops the last split); tokenizers' BPE skips a leading "#version" line.
std::string mergesTxt(std::string bpe) {
  if (!bpe.starts_with("#version")) bpe = "#version: 0.2\n" + bpe;
  if (!bpe.ends_with('\n')) bpe += '\n';
  return bpe;
}

std::string dumped(const nlohmann::json& j) {
  return j.dump(2) + "\n";
}

HfTokenizerFiles gpt2Files(const text::Tokenizer& tok, uint32_t maxLength) {
  HfTokenizerFiles out;
  out.files.push_back({"vocab.json", fileNamed(tok, "encoder.json")});
  out.files.push_back({"merges.txt", mergesTxt(fileNamed(tok, "vocab.bpe"))});
  nlohmann::json config{{"tokenizer_class", "GPT2Tokenizer"},
                        {"model_max_length", maxLength},
                        {"add_prefix_space", false},
                        {"clean_up_tokenization_spaces", false}};
  if (tok.endOfText()) {
    const nlohmann::json special{
        {"bos_token", kEndOfText}, {"eos_token", kEndOfText}, {"unk_token", kEndOfText}};
    config.update(special);
    out.files.push_back({"special_tokens_map.json", dumped(special)});
  }
  out.files.push_back({"tokenizer_config.json", dumped(config)});
  out.note =
      tok.endOfText()
          ? "tokenizer: GPT-2 BPE as vocab.json, merges.txt, tokenizer_config.json (GPT2Tokenizer), "
            "special_tokens_map.json (<|endoftext|>)"
          : "tokenizer: GPT-2 BPE as vocab.json, merges.txt, tokenizer_config.json (GPT2Tokenizer); its "
            "vocabulary has no <|endoftext|>, so no special tokens are named";
  return out;
}

// A Hugging Face directory's files as they were loaded (tokenizer.json or tokenizer.model, with their
// configuration files).
HfTokenizerFiles carriedFiles(const text::Tokenizer& tok) {
  HfTokenizerFiles out{tok.files(), "tokenizer: "};
  for (size_t i = 0; i < out.files.size(); ++i)
    out.note += (i ? ", " : "") + out.files[i].name;
  out.note += " as loaded (AutoTokenizer reads them)";
  return out;
}

// The model file only: transformers' SentencePiece classes encode differently from the library Helios uses
// (LlamaTokenizer gave other ids on 6 of 6 strings, bench/results/2026-11-26-h200-data-flow.json), so no
// tokenizer_config.json claims one of them. A model that came with its configuration files leaves with them.
HfTokenizerFiles sentencePieceFiles(const text::Tokenizer& tok, uint32_t) {
  if (tok.files().size() > 1) return carriedFiles(tok);
  HfTokenizerFiles out;
  out.files.push_back({"tokenizer.model", fileNamed(tok, "tokenizer.model")});
  out.note =
      "tokenizer: SentencePiece as tokenizer.model (encode with the sentencepiece library; no transformers "
      "tokenizer class encodes it as Helios does, so no tokenizer_config.json is written)";
  return out;
}

} // namespace

HfTokenizerFiles hfTokenizerFiles(const text::Tokenizer& tok, uint32_t modelMaxLength) {
  const std::string kind = tok.kind();
  if (kind == "gpt2") return gpt2Files(tok, modelMaxLength);
  if (kind == "sentencepiece") return sentencePieceFiles(tok, modelMaxLength);
  if (kind == "hf") return carriedFiles(tok);
  return {{},
          fmt::format("tokenizer: none written ({}-level tokens have no transformers tokenizer; ids are the "
                      "{} values)",
                      kind, kind == "byte" ? "bytes'" : "characters' vocabulary")};
}

std::string writeHfTokenizer(const text::Tokenizer& tok, uint32_t modelMaxLength,
                             const std::filesystem::path& dir) {
  const HfTokenizerFiles out = hfTokenizerFiles(tok, modelMaxLength);
  for (const auto& f : out.files)
    writeFileDurably(dir / f.name, f.bytes);
  return out.note;
}

} // namespace helios::train
