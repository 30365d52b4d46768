#include "data_commands.hpp"

#include "engine/io/atomic_file.hpp"
#include "engine/text/sentencepiece.hpp"
#include "engine/train/prepare.hpp"
#include "progress.hpp"
#include "tools/cli_checks.hpp"

#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <unistd.h>

namespace helios::train_cli {

namespace fs = std::filesystem;

namespace {

// One progress line on stderr: redrawn in place on a terminal, else printed at every 10% of the work.
class ProgressLine {
public:
  ProgressLine() : tty_(isatty(2) != 0), start_(std::chrono::steady_clock::now()) {}
  void update(double fraction, const std::string& text) {
    const int tenth = static_cast<int>(fraction * 10);
    last_ = fmt::format("{:5.1f}% {}", 100 * fraction, text);
    printed_ = false;
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s", last_.c_str());
      printed_ = true;
    } else if (tenth > lastTenth_) {
      std::fprintf(stderr, "%s\n", last_.c_str());
      lastTenth_ = tenth;
      printed_ = true;
    }
    std::fflush(stderr);
  }
  // Ends the in-place line, or prints the final state where it was not printed.
  void finish() {
    if (tty_)
      std::fputs("\n", stderr);
    else if (!printed_ && !last_.empty())
      std::fprintf(stderr, "%s\n", last_.c_str());
  }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

private:
  bool tty_;
  int lastTenth_ = -1;
  std::string last_;
  bool printed_ = false;
  std::chrono::steady_clock::time_point start_;
};

} // namespace

void addDataCommands(CLI::App& app, DataCommands& d) {
  d.tokenizer = app.add_subcommand("tokenizer", "Train a SentencePiece tokenizer on text files");
  d.tokenizer->add_option("--data", d.tokData, "Text files, directories (every file below) or globs")
      ->required();
  d.tokenizer->add_option("--vocab", d.vocab, "Vocabulary size")
      ->check(cli::PositiveCount)
      ->capture_default_str();
  d.tokenizer->add_option("--type", d.type, "bpe or unigram")
      ->check(CLI::IsMember({"bpe", "unigram"}))
      ->capture_default_str();
  d.tokenizer->add_option("--out", d.tokOut, "The .model file to write")->required();
  d.tokenizer->add_option("--max-sentences", d.maxSentences, "Lines sampled for training")
      ->check(cli::PositiveCount)
      ->capture_default_str();
  d.tokenizer->add_flag("--quiet", d.quiet, "Without SentencePiece's own log lines");

  d.prepare = app.add_subcommand("prepare", "Tokenize text files into token shards for --data-dir");
  d.prepare
      ->add_option("--data", d.prepData,
                   "Text files, directories (every file below) or globs; one file is "
                   "one document")
      ->required();
  d.prepare
      ->add_option("--tokenizer", d.prepTokenizer,
                   "byte, a SentencePiece .model, a Hugging Face directory (tokenizer.json, or "
                   "tokenizer.model with its tokenizer_config.json) or GPT-2's encoder.json + vocab.bpe")
      ->capture_default_str();
  d.prepare->add_option("--out", d.prepOut, "The shard directory to write")->required();
  d.prepare->add_option("--val-fraction", d.valFraction, "The last fraction of each document held out")
      ->check(cli::Finite)
      ->capture_default_str();
  d.prepare->add_option("--val-every", d.valEvery, "Hold out every Nth document whole instead (N >= 2)")
      ->check(cli::Count);
  d.prepare->add_option("--shard-tokens", d.shardTokens, "Tokens per shard file")
      ->check(cli::PositiveCount)
      ->capture_default_str();
}

int runTokenizerCommand(const DataCommands& d) {
  text::SentencePieceTraining o;
  o.files = train::listDocuments(d.tokData);
  o.vocab = d.vocab;
  o.type = d.type;
  o.maxSentences = d.maxSentences;
  o.quiet = d.quiet;
  io::requireWritableDirectory(fs::absolute(d.tokOut).parent_path());
  ProgressLine line;
  o.onRead = [&](uint64_t lines, uint64_t bytes, uint64_t total) {
    line.update(total ? double(bytes) / double(total) : 1.0,
                fmt::format("reading {} lines, {} of {}", lines, formatBytes(bytes), formatBytes(total)));
  };
  std::fprintf(stderr, "helios-train tokenizer: SentencePiece %s, vocab %u, from %zu files\n", d.type.c_str(),
               d.vocab, o.files.size());
  const std::string model = text::trainSentencePiece(o);
  line.finish();
  io::writeFileAtomically(d.tokOut, model);
  const text::SentencePieceTokenizer check(model); // what was written loads
  std::printf("wrote %s: %s, vocab %u, end-of-text id %d, in %s\n", d.tokOut.c_str(), d.type.c_str(),
              check.vocab(), check.endOfText().value_or(-1), formatDuration(line.seconds()).c_str());
  return 0;
}

int runPrepareCommand(const DataCommands& d) {
  const train::Tokenizer tok = train::Tokenizer::open(d.prepTokenizer);
  const auto documents = train::listDocuments(d.prepData);
  train::PrepareOptions o;
  o.valFraction = d.valFraction;
  o.valEvery = d.valEvery;
  o.shardTokens = d.shardTokens;
  ProgressLine line;
  o.onProgress = [&](const train::PrepareProgress& p) {
    const double s = std::max(line.seconds(), 1e-3);
    line.update(p.bytesTotal ? double(p.bytesDone) / double(p.bytesTotal) : 1.0,
                fmt::format("{}/{} documents, {} of {}, {} tokens ({} tok/s)", p.documents, p.documentsTotal,
                            formatBytes(p.bytesDone), formatBytes(p.bytesTotal), p.tokens,
                            formatRate(double(p.tokens) / s)));
  };
  std::fprintf(stderr, "helios-train prepare: %zu documents, %s tokenizer (vocab %u%s)\n", documents.size(),
               tok.kindName(), tok.vocab(),
               tok.endOfText() ? fmt::format(", end-of-text {}", *tok.endOfText()).c_str()
                               : ", no end-of-text token: documents follow each other");
  const train::PrepareResult r = train::prepareShards(tok, documents, o, d.prepOut);
  line.finish();
  std::printf("wrote %s: %llu documents, %llu train tokens in %u shards, %llu val tokens in %u shards "
              "(%u bytes per token), in %s\n",
              d.prepOut.c_str(), static_cast<unsigned long long>(r.documents),
              static_cast<unsigned long long>(r.trainTokens), r.trainShards,
              static_cast<unsigned long long>(r.valTokens), r.valShards, tok.vocab() <= 65536 ? 2u : 4u,
              formatDuration(line.seconds()).c_str());
  return 0;
}

} // namespace helios::train_cli
