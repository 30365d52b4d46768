#include "engine/text/sentencepiece.hpp"

#include "engine/core/fnv1a.hpp"

#include <fmt/format.h>
#include <fstream>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <stdexcept>
#include <thread>

namespace helios::text {

namespace fs = std::filesystem;

SentencePieceTokenizer::SentencePieceTokenizer(std::string model)
    : model_(std::move(model)), sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  const auto status = sp_->LoadFromSerializedProto(model_);
  if (!status.ok())
    throw std::invalid_argument(fmt::format("not a SentencePiece model: {}", status.ToString()));
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

uint32_t SentencePieceTokenizer::vocab() const {
  return static_cast<uint32_t>(sp_->GetPieceSize());
}

std::vector<int32_t> SentencePieceTokenizer::encode(std::string_view text) const {
  std::vector<int> ids;
  const auto status = sp_->Encode(text, &ids);
  if (!status.ok()) throw std::invalid_argument(fmt::format("SentencePiece encode: {}", status.ToString()));
  return {ids.begin(), ids.end()};
}

// Pieces spell a space as U+2581 and a fallback byte as <0xAB>; control pieces (<s>, </s>) print nothing.
std::string SentencePieceTokenizer::decodeToken(int32_t id) const {
  if (id < 0 || static_cast<uint32_t>(id) >= vocab()) return "?";
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

std::string SentencePieceTokenizer::decode(std::span<const int32_t> ids) const {
  std::vector<int> in;
  for (int32_t id : ids)
    in.push_back(id >= 0 && static_cast<uint32_t>(id) < vocab() ? id : sp_->unk_id());
  std::string out;
  const auto status = sp_->Decode(in, &out);
  if (!status.ok()) throw std::invalid_argument(fmt::format("SentencePiece decode: {}", status.ToString()));
  return out;
}

std::optional<int32_t> SentencePieceTokenizer::endOfText() const {
  return sp_->eos_id() >= 0 ? std::optional<int32_t>(sp_->eos_id()) : std::nullopt;
}

nlohmann::json SentencePieceTokenizer::describe() const {
  return {{"kind", "sentencepiece"},
          {"vocab", vocab()},
          {"files", {"tokenizer.model"}},
          {"fnv1a64", fmt::format("{:016x}", fnv1a64(model_))}};
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
