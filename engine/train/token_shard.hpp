#pragma once
// Token shards: tokenized text on disk, read through read-only memory maps so that a corpus larger than
// memory trains. One shard file is a 64-byte header and its tokens (little-endian uint16 when the vocabulary
// fits, else uint32), as llm.c and nanoGPT store theirs:
//   0  char[8] "HELIOSTK"      16 u64 token count           28 u32 end-of-text id (0xFFFFFFFF: none)
//   8  u32 version (1)          24 u32 tokenizer vocabulary  32 u64 FNV-1a of the tokenizer's description
//   12 u32 bytes per token      40..63 zero
// A shard directory (`helios-train prepare`) holds train-NNNNNN.bin and val-NNNNNN.bin, index.json (the
// tokenizer's description, the shards, their token counts and CRC-32Cs) and the tokenizer's files. Opening
// the set checks every shard's CRC-32C against index.json (a fresh run and a resume alike), so a shard
// replaced or altered under an unchanged index is refused before training; an index without the checksums
// (an earlier prepare) is refused too.
#include "engine/train/stored_tokenizer.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace helios::train {

inline constexpr uint32_t kShardVersion = 1;
inline constexpr size_t kShardHeaderBytes = 64;
inline constexpr uint32_t kNoEndOfText = 0xFFFFFFFFu;

class ShardError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ShardHeader {
  uint32_t version = kShardVersion;
  uint32_t tokenBytes = 2;
  uint64_t count = 0;
  uint32_t vocab = 0;
  uint32_t endOfText = kNoEndOfText;
  uint64_t tokenizerHash = 0;
};

// The header's bytes, and its parse: throws ShardError naming `file` and what is wrong.
std::string encodeShardHeader(const ShardHeader& h);
ShardHeader decodeShardHeader(std::string_view bytes, const std::string& file);
uint32_t tokenBytesFor(uint32_t vocab); // 2 up to 65536 tokens, else 4
uint64_t tokenizerHash(const Tokenizer& t);

// Writes shards of at most `shardTokens` tokens named <prefix>-NNNNNN.bin into a directory, each with
// io::writeFileAtomically (so a shard on disk is whole).
class ShardWriter {
public:
  ShardWriter(std::filesystem::path dir, std::string prefix, const Tokenizer& tokenizer,
              uint64_t shardTokens);
  void append(const std::vector<int32_t>& tokens);
  void finish(); // writes the last, partial shard
  struct Written {
    std::string file;
    uint64_t tokens = 0;
    uint32_t crc32c = 0; // of the whole file, header included
  };
  const std::vector<Written>& shards() const { return shards_; }
  uint64_t tokens() const { return total_; }

private:
  void flush();
  std::filesystem::path dir_;
  std::string prefix_;
  ShardHeader header_;
  uint64_t shardTokens_;
  std::string payload_; // the current shard's tokens, encoded
  uint64_t pending_ = 0, total_ = 0;
  std::vector<Written> shards_;
};

// One shard, mapped read-only. Throws ShardError for a truncated or oversized file, a bad magic, version or
// token width.
class MappedShard {
public:
  explicit MappedShard(const std::filesystem::path& path);
  ~MappedShard();
  MappedShard(const MappedShard&) = delete;
  MappedShard& operator=(const MappedShard&) = delete;

  const ShardHeader& header() const { return header_; }
  const std::string& name() const { return name_; }
  uint64_t size() const { return header_.count; }
  const void* tokens() const { return static_cast<const char*>(map_) + kShardHeaderBytes; }
  // Throws ShardError naming the shard and `index` when the file's CRC-32C (header included) is not
  // `expected`: one read of the mapping.
  void verify(uint32_t expected, const std::string& index) const;

private:
  std::string name_;
  ShardHeader header_;
  void* map_ = nullptr;
  size_t mapBytes_ = 0;
};

// A shard directory opened for training: its tokenizer (from the files saved there) and its shards,
// each checked against index.json and the tokenizer.
struct ShardSet {
  std::filesystem::path dir;
  Tokenizer tokenizer = Tokenizer::byteLevel();
  std::vector<std::unique_ptr<MappedShard>> train, val;
  uint64_t indexHash = 0; // FNV-1a of index.json: what a resume compares
  uint64_t trainTokens() const;
  uint64_t valTokens() const;
};
std::shared_ptr<ShardSet> openShardSet(const std::filesystem::path& dir);

} // namespace helios::train
