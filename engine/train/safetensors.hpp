#pragma once
// safetensors files: u64 little-endian header length N, N bytes of JSON (space-padded to a multiple of 8),
// then the tensors' bytes back to back. Helios writes helios.crc32c into __metadata__: a JSON object of each
// tensor's CRC-32C (of its stored bytes) and one of the other metadata entries; and helios.seal: a CRC-32C
// over that object, the other metadata and the tensor table (names, types, shapes, offsets), so that two
// tensors swapped together with their checksum entries are caught too. Tensors are held as f32 on the host
// and stored as F32, F16 or BF16 (the latter two for exports; checkpoints are F32 only).
#include <cstdint>
#include <filesystem>
#include <map>
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
  bool sealed = false;             // read: helios.seal was present too and matched (removed as well)
  const SafeTensor* find(const std::string& name) const;
};

std::string shapeString(const std::vector<uint64_t>& shape); // "[2, 3]"

// Which stored types a read accepts: Helios checkpoints are F32 only; imports take F16 and BF16 too.
enum class AcceptTypes : uint8_t { F32Only, Floats };

// Durable (writeFileDurably); helios.crc32c and helios.seal added to the metadata.
void writeSafetensors(const std::filesystem::path& path, const SafeTensorsFile& file);
// Throws CheckpointError. headerOnly: metadata and tensor names/shapes (data left empty), after checking that
// the file's size matches the header. Checksums present are verified (the tensors' only with their data), and
// the seal where the file has one.
SafeTensorsFile readSafetensors(const std::filesystem::path& path, bool headerOnly = false,
                                AcceptTypes accept = AcceptTypes::F32Only);

} // namespace helios::train
