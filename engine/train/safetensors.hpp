#pragma once
// safetensors files: u64 little-endian header length N, N bytes of JSON (space-padded to a multiple of 8),
// then the tensors' bytes back to back. Helios writes helios.crc32c into __metadata__: a JSON object of each
// tensor's CRC-32C (of its stored bytes) and one of the other metadata entries. Tensors are held as f32 on
// the host and stored as F32, F16 or BF16 (the latter two for exports; checkpoints are F32 only).
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace helios::train {

class CheckpointError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class StoredType : uint8_t { F32, F16, BF16 };
const char* toString(StoredType t);                   // "F32", "F16", "BF16" (safetensors' dtype names)
StoredType parseStoredType(const std::string& dtype); // "f32" | "f16" | "bf16" (any case); throws otherwise

struct SafeTensor {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<float> data;             // f32 values (a narrower stored type is widened exactly on read)
  StoredType stored = StoredType::F32; // how writeSafetensors stores it (rounding to nearest even)
};

struct SafeTensorsFile {
  std::map<std::string, std::string> metadata;
  std::vector<SafeTensor> tensors; // in file order
  bool checksummed = false;        // read: helios.crc32c was present and matched (the entry is removed)
  const SafeTensor* find(const std::string& name) const;
};

std::string shapeString(const std::vector<uint64_t>& shape); // "[2, 3]"

// Which stored types a read accepts: Helios checkpoints are F32 only; imports take F16 and BF16 too.
enum class AcceptTypes : uint8_t { F32Only, Floats };

// A tensor as a header describes it.
struct TensorInfo {
  std::string name;
  std::vector<uint64_t> shape;
  StoredType stored = StoredType::F32;
  uint64_t elements() const;
  uint64_t bytes() const; // stored
};

// A safetensors file mapped read-only (engine/io/mapped_file): the header is parsed and checked on opening
// (its length, JSON, dtypes, offsets against shapes, the file's size, the metadata's checksum), then tensors
// are decoded one at a time, each checksum verified where the file carries them. Memory: one tensor's f32
// values at a time; the file's pages come from the page cache. Throws CheckpointError naming the file.
class SafetensorsReader {
public:
  explicit SafetensorsReader(const std::filesystem::path& path, AcceptTypes accept = AcceptTypes::F32Only);
  ~SafetensorsReader();
  SafetensorsReader(SafetensorsReader&&) noexcept;
  const std::filesystem::path& path() const;
  const std::map<std::string, std::string>& metadata() const; // helios.crc32c removed
  bool checksummed() const;                                   // helios.crc32c was present (metadata matched)
  const std::vector<TensorInfo>& tensors() const;             // in the order of their data
  const TensorInfo* find(const std::string& name) const;
  std::vector<float> read(const std::string& name) const;                // f32 values
  std::span<const std::byte> storedBytes(const std::string& name) const; // as stored (unverified)

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes a safetensors file tensor by tensor: the header (every tensor's name, dtype and shape, in the order
// their data follows) goes out first with placeholder checksums, each write() appends the next tensor's
// values in its stored type, and commit() patches the checksums in (same length) and puts the file in place
// durably (writeFileDurably's temporary, fsync and rename). Destroyed uncommitted, nothing replaces `path`.
class SafetensorsWriter {
public:
  SafetensorsWriter(const std::filesystem::path& path, std::map<std::string, std::string> metadata,
                    std::vector<TensorInfo> tensors);
  ~SafetensorsWriter();
  void write(std::span<const float> values);
  void commit();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Durable (writeFileDurably); helios.crc32c added to the metadata.
void writeSafetensors(const std::filesystem::path& path, const SafeTensorsFile& file);
// Throws CheckpointError. headerOnly: metadata and tensor names/shapes (data left empty), after checking that
// the file's size matches the header. Checksums present are verified (the tensors' only with their data).
SafeTensorsFile readSafetensors(const std::filesystem::path& path, bool headerOnly = false,
                                AcceptTypes accept = AcceptTypes::F32Only);

} // namespace helios::train
