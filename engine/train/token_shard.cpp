#include "engine/train/token_shard.hpp"

#include "engine/core/fnv1a.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/input_file.hpp"
#include "engine/text/load.hpp"
#include "engine/train/crc32c.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace helios::train {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'H', 'E', 'L', 'I', 'O', 'S', 'T', 'K'};

template <class T> void put(std::string& s, size_t at, T v) {
  std::memcpy(s.data() + at, &v, sizeof v); // the host is little-endian (x86-64, AArch64)
}
template <class T> T get(std::string_view s, size_t at) {
  T v;
  std::memcpy(&v, s.data() + at, sizeof v);
  return v;
}

} // namespace

std::string encodeShardHeader(const ShardHeader& h) {
  std::string s(kShardHeaderBytes, '\0');
  std::memcpy(s.data(), kMagic, 8);
  put(s, 8, h.version);
  put(s, 12, h.tokenBytes);
  put(s, 16, h.count);
  put(s, 24, h.vocab);
  put(s, 28, h.endOfText);
  put(s, 32, h.tokenizerHash);
  return s;
}

ShardHeader decodeShardHeader(std::string_view b, const std::string& file) {
  if (b.size() < kShardHeaderBytes)
    throw ShardError(fmt::format("{}: truncated token shard ({} bytes; the header alone is {})", file,
                                 b.size(), kShardHeaderBytes));
  if (std::memcmp(b.data(), kMagic, 8) != 0)
    throw ShardError(fmt::format("{}: not a Helios token shard (no HELIOSTK magic)", file));
  ShardHeader h;
  h.version = get<uint32_t>(b, 8);
  h.tokenBytes = get<uint32_t>(b, 12);
  h.count = get<uint64_t>(b, 16);
  h.vocab = get<uint32_t>(b, 24);
  h.endOfText = get<uint32_t>(b, 28);
  h.tokenizerHash = get<uint64_t>(b, 32);
  if (h.version != kShardVersion)
    throw ShardError(
        fmt::format("{}: token shard version {} (this build reads {})", file, h.version, kShardVersion));
  if (h.tokenBytes != 2 && h.tokenBytes != 4)
    throw ShardError(fmt::format("{}: {} bytes per token (2 or 4)", file, h.tokenBytes));
  if (h.vocab == 0 || (h.tokenBytes == 2 && h.vocab > 65536))
    throw ShardError(fmt::format("{}: vocabulary {} with {}-byte tokens", file, h.vocab, h.tokenBytes));
  if (h.endOfText != kNoEndOfText && h.endOfText >= h.vocab)
    throw ShardError(
        fmt::format("{}: end-of-text id {} outside the vocabulary {}", file, h.endOfText, h.vocab));
  return h;
}

uint32_t tokenBytesFor(uint32_t vocab) {
  return vocab <= 65536 ? 2 : 4;
}

uint64_t tokenizerHash(const Tokenizer& t) {
  return fnv1a64(t.toJson().dump());
}

ShardWriter::ShardWriter(fs::path dir, std::string prefix, const Tokenizer& tok, uint64_t shardTokens)
    : dir_(std::move(dir)), prefix_(std::move(prefix)), shardTokens_(shardTokens) {
  if (shardTokens == 0) throw std::invalid_argument("shard size 0 tokens");
  header_.vocab = tok.vocab();
  header_.tokenBytes = tokenBytesFor(tok.vocab());
  header_.endOfText = tok.endOfText() ? static_cast<uint32_t>(*tok.endOfText()) : kNoEndOfText;
  header_.tokenizerHash = tokenizerHash(tok);
}

void ShardWriter::append(const std::vector<int32_t>& tokens) {
  for (int32_t t : tokens) {
    if (t < 0 || static_cast<uint32_t>(t) >= header_.vocab)
      throw std::logic_error(fmt::format("token {} outside the vocabulary {}", t, header_.vocab));
    if (header_.tokenBytes == 2) {
      const uint16_t v = static_cast<uint16_t>(t);
      payload_.append(reinterpret_cast<const char*>(&v), 2);
    } else {
      const uint32_t v = static_cast<uint32_t>(t);
      payload_.append(reinterpret_cast<const char*>(&v), 4);
    }
    if (++pending_ == shardTokens_) flush();
  }
}

void ShardWriter::finish() {
  if (pending_ > 0 || shards_.empty()) flush();
}

void ShardWriter::flush() {
  ShardHeader h = header_;
  h.count = pending_;
  const std::string name = fmt::format("{}-{:06d}.bin", prefix_, shards_.size());
  const std::string bytes = encodeShardHeader(h) + payload_;
  io::writeFileAtomically(dir_ / name, bytes);
  shards_.push_back({name, pending_, crc32c(std::as_bytes(std::span<const char>(bytes)))});
  total_ += pending_;
  pending_ = 0;
  payload_.clear();
}

MappedShard::MappedShard(const fs::path& path) : name_(path.string()) {
  io::requireRegularFile(path, "token shard");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw ShardError(fmt::format("{}: cannot open the token shard ({})", name_, std::strerror(errno)));
  struct stat st {};
  std::string head(kShardHeaderBytes, '\0');
  const ssize_t got = ::fstat(fd, &st) == 0 ? ::pread(fd, head.data(), head.size(), 0) : -1;
  if (got < 0) {
    const int err = errno;
    ::close(fd);
    throw ShardError(fmt::format("{}: cannot read the token shard ({})", name_, std::strerror(err)));
  }
  head.resize(static_cast<size_t>(got));
  try {
    header_ = decodeShardHeader(head, name_);
  } catch (...) {
    ::close(fd);
    throw;
  }
  const uint64_t want = kShardHeaderBytes + header_.count * header_.tokenBytes;
  if (static_cast<uint64_t>(st.st_size) != want) {
    ::close(fd);
    throw ShardError(fmt::format("{}: the header says {} tokens ({} bytes with the header) but the file has "
                                 "{} bytes ({})",
                                 name_, header_.count, want, st.st_size,
                                 static_cast<uint64_t>(st.st_size) < want ? "truncated" : "trailing bytes"));
  }
  mapBytes_ = static_cast<size_t>(want);
  map_ = ::mmap(nullptr, mapBytes_, PROT_READ, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw ShardError(fmt::format("{}: mmap failed ({})", name_, std::strerror(err)));
  }
  ::madvise(map_, mapBytes_, MADV_RANDOM); // batches read short windows at random offsets
}

MappedShard::~MappedShard() {
  if (map_) ::munmap(map_, mapBytes_);
}

void MappedShard::verify(uint32_t expected, const std::string& index) const {
  const uint32_t got = crc32c(std::span<const std::byte>(static_cast<const std::byte*>(map_), mapBytes_));
  if (got != expected)
    throw ShardError(fmt::format("{}: its bytes differ from what prepare wrote (CRC-32C {:08x} in {}, {:08x} "
                                 "read): the shard was replaced or altered; run helios-train prepare again",
                                 name_, expected, index, got));
}

uint64_t ShardSet::trainTokens() const {
  uint64_t n = 0;
  for (const auto& s : train)
    n += s->size();
  return n;
}

uint64_t ShardSet::valTokens() const {
  uint64_t n = 0;
  for (const auto& s : val)
    n += s->size();
  return n;
}

namespace {

// The CRC-32C an index entry records for its shard ("crc32c": 8 hex digits).
uint32_t indexedCrc(const nlohmann::json& entry, const fs::path& index) {
  const std::string file = entry.at("file").get<std::string>();
  if (!entry.contains("crc32c"))
    throw ShardError(fmt::format("{}: {} has no crc32c (prepared by a Helios before shards were checksummed, "
                                 "so a changed shard would go unnoticed): run helios-train prepare again",
                                 index.string(), file));
  const std::string hex = entry.at("crc32c").get<std::string>();
  uint32_t crc = 0;
  const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), crc, 16);
  if (hex.size() != 8 || ec != std::errc() || end != hex.data() + hex.size())
    throw ShardError(fmt::format("{}: {} has crc32c '{}', not 8 hex digits", index.string(), file, hex));
  return crc;
}

void openSplit(ShardSet& set, const nlohmann::json& list, std::vector<std::unique_ptr<MappedShard>>& out) {
  const uint64_t hash = tokenizerHash(set.tokenizer);
  const fs::path index = set.dir / "index.json";
  for (const auto& e : list) {
    auto shard = std::make_unique<MappedShard>(set.dir / e.at("file").get<std::string>());
    const ShardHeader& h = shard->header();
    if (h.count != e.at("tokens").get<uint64_t>())
      throw ShardError(fmt::format("{}: {} tokens, index.json says {}", shard->name(), h.count,
                                   e.at("tokens").get<uint64_t>()));
    const uint32_t eot = set.tokenizer.endOfText() ? uint32_t(*set.tokenizer.endOfText()) : kNoEndOfText;
    if (h.tokenizerHash != hash || h.vocab != set.tokenizer.vocab() || h.endOfText != eot)
      throw ShardError(fmt::format("{}: written with a different tokenizer than the one in {}", shard->name(),
                                   set.dir.string()));
    shard->verify(indexedCrc(e, index), index.string()); // a replaced shard, or one token changed
    out.push_back(std::move(shard));
  }
}

} // namespace

std::shared_ptr<ShardSet> openShardSet(const fs::path& dir) {
  auto set = std::make_shared<ShardSet>();
  set->dir = dir;
  const fs::path indexPath = dir / "index.json";
  std::string text;
  io::requireRegularFile(indexPath, "shard index");
  try {
    text = text::readWholeFile(indexPath);
  } catch (const std::invalid_argument&) {
    throw ShardError(fmt::format("{}: missing: not a token shard directory (helios-train prepare writes one)",
                                 indexPath.string()));
  }
  set->indexHash = fnv1a64(text);
  const nlohmann::json index = nlohmann::json::parse(text, nullptr, false);
  if (index.is_discarded() || index.value("format", "") != "helios-token-shards")
    throw ShardError(fmt::format("{}: not a token shard index", indexPath.string()));
  try {
    set->tokenizer = Tokenizer::fromJson(index.at("tokenizer"), dir);
    openSplit(*set, index.at("train"), set->train);
    openSplit(*set, index.at("val"), set->val);
  } catch (const nlohmann::json::exception& e) {
    throw ShardError(fmt::format("{}: incomplete index ({})", indexPath.string(), e.what()));
  } catch (const std::invalid_argument& e) {
    throw ShardError(fmt::format("{}: {}", indexPath.string(), e.what()));
  }
  return set;
}

} // namespace helios::train
