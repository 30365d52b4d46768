#include "engine/train/prepare.hpp"

#include "engine/io/atomic_file.hpp"
#include "engine/train/token_shard.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <glob.h>
#include <set>
#include <stdexcept>
#include <thread>

namespace helios::train {

namespace fs = std::filesystem;

std::vector<fs::path> listDocuments(const std::vector<std::string>& inputs) {
  std::set<fs::path> found;
  for (const auto& in : inputs) {
    std::error_code ec;
    bool matched = false;
    auto add = [&](const fs::path& p) {
      found.insert(p);
      matched = true;
    };
    if (fs::is_directory(in, ec)) {
      for (const auto& e :
           fs::recursive_directory_iterator(in, fs::directory_options::follow_directory_symlink))
        if (e.is_regular_file()) add(e.path());
    } else if (fs::is_regular_file(in, ec)) {
      add(in);
    } else {
      glob_t g{};
      if (::glob(in.c_str(), 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i)
          if (fs::is_regular_file(g.gl_pathv[i], ec)) add(g.gl_pathv[i]);
      ::globfree(&g);
    }
    if (!matched)
      throw std::invalid_argument(fmt::format("--data {}: no such file, no files in that directory, or no "
                                              "file matches that pattern",
                                              in));
  }
  return {found.begin(), found.end()};
}

namespace {

// Where to cut a block so that lines (and UTF-8 characters) stay whole: after its last newline that a
// visible ASCII character follows (no pre-tokenizer of GPT-2, Llama 3, Qwen2 or SmolLM2 joins across such a
// place, so the pieces are those of the whole document; a cut inside a run of newlines would split the
// piece that run makes), else after its last newline, else before its last character.
size_t cutPoint(std::string_view text) {
  for (size_t nl = text.rfind('\n'); nl != std::string_view::npos && nl > 0; nl = text.rfind('\n', nl - 1))
    if (nl + 1 < text.size() && text[nl + 1] > ' ' && text[nl + 1] < 0x7F) return nl + 1;
  const size_t nl = text.rfind('\n');
  if (nl != std::string_view::npos) return nl + 1;
  size_t cut = text.size();
  while (cut > 0 && (static_cast<uint8_t>(text[cut - 1]) & 0xC0) == 0x80)
    --cut;
  return cut > 0 ? cut - 1 : text.size();
}

class Preparer {
public:
  Preparer(const Tokenizer& tok, const PrepareOptions& o, const fs::path& out, uint64_t totalBytes,
           uint64_t documents)
      : tok_(tok), o_(o), threads_(o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency())),
        train_(out, "train", tok, o.shardTokens), val_(out, "val", tok, o.shardTokens) {
    progress_.bytesTotal = totalBytes;
    progress_.documentsTotal = documents;
  }

  void document(const fs::path& path, uint64_t index) {
    const uint64_t size = fs::file_size(path);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(fmt::format("{}: cannot open", path.string()));
    if (o_.valEvery >= 2) {
      stream(in, path, size, (index + 1) % o_.valEvery == 0 ? val_ : train_);
    } else {
      const uint64_t split = splitPoint(path, size);
      stream(in, path, split, train_);
      stream(in, path, size - split, val_);
    }
    ++progress_.documents;
    report();
  }

  PrepareResult finish(const fs::path& out) {
    encodeBatch();
    train_.finish();
    val_.finish();
    if (train_.tokens() == 0 || val_.tokens() == 0)
      throw std::invalid_argument(
          fmt::format("{} training and {} validation tokens: both splits need some (more text, or another "
                      "--val-fraction / --val-every)",
                      train_.tokens(), val_.tokens()));
    tok_.saveFiles(out);
    nlohmann::json index{{"format", "helios-token-shards"},
                         {"version", kShardVersion},
                         {"tokenizer", tok_.toJson()},
                         {"documents", progress_.documents},
                         {"bytes", progress_.bytesDone},
                         {"train", listing(train_)},
                         {"val", listing(val_)}};
    io::writeFileAtomically(out / "index.json", index.dump(2) + "\n");
    removeStaleShards(out, index);
    return {progress_.documents,
            progress_.bytesDone,
            train_.tokens(),
            val_.tokens(),
            static_cast<uint32_t>(train_.shards().size()),
            static_cast<uint32_t>(val_.shards().size())};
  }

private:
  // Shards an earlier prepare left in `out` beyond the ones just written would only confuse a reader.
  static void removeStaleShards(const fs::path& out, const nlohmann::json& index) {
    std::set<std::string> keep;
    for (const char* split : {"train", "val"})
      for (const auto& e : index.at(split))
        keep.insert(e.at("file").get<std::string>());
    for (const auto& e : fs::directory_iterator(out)) {
      const std::string name = e.path().filename().string();
      const bool shard = (name.starts_with("train-") || name.starts_with("val-")) && name.ends_with(".bin");
      if (shard && !keep.count(name)) fs::remove(e.path());
    }
  }

  static nlohmann::json listing(const ShardWriter& w) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& s : w.shards())
      list.push_back({{"file", s.file}, {"tokens", s.tokens}});
    return list;
  }

  // The byte where a document's validation tail starts: after the first newline past (1 - valFraction) of it.
  uint64_t splitPoint(const fs::path& path, uint64_t size) const {
    const uint64_t at = static_cast<uint64_t>(static_cast<double>(size) * (1.0 - o_.valFraction));
    std::ifstream in(path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(at));
    std::string tail(static_cast<size_t>(std::min<uint64_t>(size - at, 1u << 16)), '\0');
    in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
    const size_t nl = tail.find('\n');
    if (nl != std::string::npos) return at + nl + 1;
    size_t k = 0; // else at a character boundary
    while (k < tail.size() && (static_cast<uint8_t>(tail[k]) & 0xC0) == 0x80)
      ++k;
    return at + k;
  }

  // `bytes` bytes from `in` into `out`, then the end-of-text token, as blocks queued for encoding.
  void stream(std::ifstream& in, const fs::path& path, uint64_t bytes, ShardWriter& out) {
    if (bytes == 0) return;
    std::string carry;
    while (bytes > 0) {
      std::string text = nextBlock(in, path, bytes, carry);
      queue({std::move(text), &out, bytes == 0 && tok_.endOfText().has_value()});
    }
  }

  // The next block of at most blockBytes (plus the carried end of the previous one), cut after its last
  // newline unless it ends the part.
  std::string nextBlock(std::ifstream& in, const fs::path& path, uint64_t& bytes, std::string& carry) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(bytes, o_.blockBytes));
    std::string block(n, '\0');
    in.read(block.data(), static_cast<std::streamsize>(n));
    if (static_cast<size_t>(in.gcount()) != n)
      throw std::runtime_error(
          fmt::format("{}: read failed (the file changed while reading?)", path.string()));
    bytes -= n;
    progress_.bytesDone += n;
    std::string text = carry + block;
    carry.clear();
    if (bytes > 0) {
      const size_t cut = cutPoint(text);
      carry = text.substr(cut);
      text.resize(cut);
    }
    return text;
  }

  struct Block {
    std::string text;
    ShardWriter* out = nullptr;
    bool endOfText = false; // the last block of a document's part
  };

  // Blocks are encoded a batch at a time (across documents), one thread each, and appended in order: the
  // shards do not depend on the thread count.
  void queue(Block b) {
    batch_.push_back(std::move(b));
    if (batch_.size() >= threads_) encodeBatch();
  }

  void encodeBatch() {
    std::vector<std::vector<int32_t>> ids(batch_.size());
    std::vector<std::exception_ptr> errors(batch_.size());
    std::vector<std::thread> workers;
    for (size_t i = 0; i < batch_.size(); ++i)
      workers.emplace_back([&, i] {
        try {
          ids[i] = tok_.encode(batch_[i].text);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      });
    for (auto& w : workers)
      w.join();
    for (size_t i = 0; i < batch_.size(); ++i) {
      if (errors[i]) std::rethrow_exception(errors[i]);
      if (batch_[i].endOfText) ids[i].push_back(*tok_.endOfText());
      batch_[i].out->append(ids[i]);
      progress_.tokens += ids[i].size();
    }
    batch_.clear();
    report();
  }

  void report() const {
    if (o_.onProgress) o_.onProgress(progress_);
  }

  const Tokenizer& tok_;
  const PrepareOptions& o_;
  uint32_t threads_;
  ShardWriter train_, val_;
  std::vector<Block> batch_;
  PrepareProgress progress_;
};

} // namespace

PrepareResult prepareShards(const Tokenizer& tok, const std::vector<fs::path>& documents,
                            const PrepareOptions& o, const fs::path& out) {
  if (documents.empty()) throw std::invalid_argument("no input documents");
  if (o.valEvery == 1)
    throw std::invalid_argument("--val-every 1 would leave nothing to train on (2 or more)");
  if (o.valEvery == 0 && !(o.valFraction > 0 && o.valFraction < 1))
    throw std::invalid_argument(fmt::format("--val-fraction {} is not in (0, 1)", o.valFraction));
  if (o.blockBytes < 16) throw std::invalid_argument("block size under 16 bytes");
  uint64_t total = 0;
  for (const auto& d : documents)
    total += fs::file_size(d);
  io::requireWritableDirectory(out);
  fs::remove(out / "index.json"); // until the new shards are complete, this is no shard set
  Preparer p(tok, o, out, total, documents.size());
  for (size_t i = 0; i < documents.size(); ++i)
    p.document(documents[i], i);
  return p.finish(out);
}

} // namespace helios::train
