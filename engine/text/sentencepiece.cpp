#include "engine/text/sentencepiece.hpp"

#include "engine/core/fnv1a.hpp"
#include "engine/text/directory.hpp"
#include "engine/text/hf/config.hpp"

#include <fmt/format.h>
#include <fstream>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <stdexcept>
#include <thread>

namespace helios::text {

namespace fs = std::filesystem;

struct SentencePieceTokenizer::Config {
  hf::TokenizerConfig config;
  hf::AddedVocabulary added;
  hf::SpecialIds special;
};

SentencePieceTokenizer::SentencePieceTokenizer(std::string model, std::vector<TokenizerFile> config)
    : model_(std::move(model)), configFiles_(std::move(config)),
      sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  const auto status = sp_->LoadFromSerializedProto(model_);
  if (!status.ok())
    throw std::invalid_argument(fmt::format("not a SentencePiece model: {}", status.ToString()));
  if (configFiles_.empty()) return;
  auto c = std::make_unique<Config>();
  c->config = hf::readTokenizerConfig(configFiles_);
  c->added = hf::AddedVocabulary(c->config.addedTokens, [](std::string_view s) { return std::string(s); });
  config_ = std::move(c);
  config_->special =
      hf::resolveSpecialIds(config_->config, [this](std::string_view s) { return tokenId(s); });
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

uint32_t SentencePieceTokenizer::vocab() const {
  auto size = static_cast<uint32_t>(sp_->GetPieceSize());
  if (config_)
    for (const auto& t : config_->added.tokens())
      size = std::max(size, static_cast<uint32_t>(t.id) + 1);
  return size;
}

std::vector<int32_t> SentencePieceTokenizer::encodePlain(std::string_view text) const {
  std::vector<int> ids;
  const auto status = sp_->Encode(text, &ids);
  if (!status.ok()) throw std::invalid_argument(fmt::format("SentencePiece encode: {}", status.ToString()));
  return {ids.begin(), ids.end()};
}

std::vector<int32_t> SentencePieceTokenizer::encode(std::string_view text) const {
  if (!config_ || config_->added.tokens().empty()) return encodePlain(text);
  std::vector<int32_t> ids;
  config_->added.walk(
      text, [](std::string_view s) { return std::string(s); }, [&ids](int32_t id) { ids.push_back(id); },
      [&](std::string_view stretch, bool) {
        const auto part = encodePlain(stretch);
        ids.insert(ids.end(), part.begin(), part.end());
      });
  return ids;
}

// Pieces spell a space as U+2581 and a fallback byte as <0xAB>; control pieces (<s>, </s>) print nothing,
// unless the configuration lists them as added tokens, which print their strings.
std::string SentencePieceTokenizer::decodeToken(int32_t id) const {
  if (config_)
    if (const auto* t = config_->added.byId(id)) return t->content;
  if (id < 0 || id >= sp_->GetPieceSize()) return "?";
  if (sp_->IsControl(id)) return "";
  const std::string& piece = sp_->IdToPiece(id);
  if (sp_->IsByte(id)) return std::string(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
  std::string out;
  for (size_t i = 0; i < piece.size(); ++i) {
    if (piece.compare(i, 3, "\xE2\x96\x81") == 0) {
      out += ' ';
      i += 2;
    } else {
      out += piece[i];
    }
  }
  return out;
}

// Runs of model ids go through SentencePiece's decoder; added tokens are their strings.
std::string SentencePieceTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  std::vector<int> run;
  auto flush = [&] {
    std::string text;
    const auto status = sp_->Decode(run, &text);
    if (!status.ok()) throw std::invalid_argument(fmt::format("SentencePiece decode: {}", status.ToString()));
    out += text;
    run.clear();
  };
  for (int32_t id : ids) {
    if (config_ && config_->added.byId(id)) {
      flush();
      out += config_->added.byId(id)->content;
    } else {
      run.push_back(id >= 0 && id < sp_->GetPieceSize() ? id : sp_->unk_id());
    }
  }
  flush();
  return out;
}

std::optional<int32_t> SentencePieceTokenizer::endOfText() const {
  if (config_) return config_->special.endOfText;
  return sp_->eos_id() >= 0 ? std::optional<int32_t>(sp_->eos_id()) : std::nullopt;
}

std::optional<int32_t> SentencePieceTokenizer::tokenId(std::string_view piece) const {
  if (config_)
    if (const auto id = config_->added.id(piece)) return id;
  const int id = sp_->PieceToId(piece);
  return id >= 0 && sp_->IdToPiece(id) == piece ? std::optional<int32_t>(id) : std::nullopt;
}

std::optional<int32_t> SentencePieceTokenizer::bos() const {
  if (config_) return config_->special.bos;
  return sp_->bos_id() >= 0 ? std::optional<int32_t>(sp_->bos_id()) : std::nullopt;
}

std::vector<int32_t> SentencePieceTokenizer::eosIds() const {
  if (config_ && !config_->special.eos.empty()) return config_->special.eos;
  return Tokenizer::eosIds();
}

std::string SentencePieceTokenizer::chatTemplate() const {
  return config_ ? config_->config.chatTemplate : std::string();
}

SequenceSpecials SentencePieceTokenizer::sequenceSpecials() const {
  SequenceSpecials s;
  if (!config_) return s;
  if (config_->config.addBos.value_or(false) && config_->special.bos)
    s.prefix.push_back(*config_->special.bos);
  if (config_->config.addEos.value_or(false) && config_->special.endOfText)
    s.suffix.push_back(*config_->special.endOfText);
  return s;
}

std::vector<TokenizerFile> SentencePieceTokenizer::files() const {
  std::vector<TokenizerFile> all{{"tokenizer.model", model_}};
  all.insert(all.end(), configFiles_.begin(), configFiles_.end());
  return all;
}

// A bare .model keeps its original description (hash of the model alone), so older checkpoints still match.
nlohmann::json SentencePieceTokenizer::describe() const {
  if (configFiles_.empty())
    return {{"kind", "sentencepiece"},
            {"vocab", vocab()},
            {"files", {"tokenizer.model"}},
            {"fnv1a64", fmt::format("{:016x}", fnv1a64(model_))}};
  nlohmann::json names = nlohmann::json::array();
  for (const auto& f : files())
    names.push_back(f.name);
  return {{"kind", "sentencepiece"}, {"vocab", vocab()}, {"files", names}, {"fnv1a64", filesHash(files())}};
}

namespace {

// The training text, line by line over all files, reporting as it goes.
class LineReader final : public sentencepiece::SentenceIterator {
public:
  explicit LineReader(const SentencePieceTraining& o) : o_(o) {
    for (const auto& f : o_.files)
      total_ += fs::file_size(f);
    Next();
  }
  bool done() const override { return done_; }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return status_; }
  void Next() override {
    while (!done_) {
      if (in_.is_open() && std::getline(in_, line_)) {
        bytes_ += line_.size() + 1;
        if (o_.onRead && ++lines_ % 10000 == 0) o_.onRead(lines_, bytes_, total_);
        if (!line_.empty()) return;
        continue;
      }
      if (in_.is_open() && in_.bad()) {
        status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kDataLoss,
                                              o_.files[file_ - 1].string() + ": read failed");
        done_ = true;
        return;
      }
      in_.close();
      if (file_ == o_.files.size()) {
        done_ = true;
        if (o_.onRead) o_.onRead(lines_, bytes_, total_);
        return;
      }
      in_.open(o_.files[file_++], std::ios::binary);
      if (!in_) {
        status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kNotFound,
                                              o_.files[file_ - 1].string() + ": cannot open");
        done_ = true;
      }
    }
  }

private:
  const SentencePieceTraining& o_;
  std::ifstream in_;
  size_t file_ = 0;
  std::string line_;
  uint64_t lines_ = 0, bytes_ = 0, total_ = 0;
  bool done_ = false;
  sentencepiece::util::Status status_;
};

} // namespace

std::string trainSentencePiece(const SentencePieceTraining& o) {
  if (o.type != "bpe" && o.type != "unigram")
    throw std::invalid_argument(fmt::format("SentencePiece model type '{}' (bpe or unigram)", o.type));
  if (o.files.empty()) throw std::invalid_argument("SentencePiece training: no input files");
  const uint32_t threads = o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  const std::unordered_map<std::string, std::string> args{
      {"model_type", o.type},
      {"vocab_size", std::to_string(o.vocab)},
      {"input_sentence_size", std::to_string(o.maxSentences)},
      {"shuffle_input_sentence", "true"},
      {"max_sentence_length", "65536"}, // paragraphs of prose on one line (the default, 4192, drops them)
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"allow_whitespace_only_pieces", "true"},
      {"split_digits", "true"},
      {"byte_fallback", "true"},
      {"character_coverage", "0.9995"},
      {"num_threads", std::to_string(threads)},
      {"minloglevel", o.quiet ? "2" : "0"}};
  LineReader reader(o);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &reader, &model);
  if (!status.ok()) throw std::runtime_error(fmt::format("SentencePiece training: {}", status.ToString()));
  return model;
}

} // namespace helios::text
