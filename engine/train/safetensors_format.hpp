#pragma once
// Internal to engine/train's safetensors reader and writer: the pieces of the format both need (the stored
// types' sizes and conversions, the checksum and seal entries and how the metadata's checksum and the seal
// are taken).
#include "engine/train/safetensors.hpp"

#include <cstddef>
#include <span>
#include <string>

namespace helios::train::safetensors_format {

constexpr uint64_t kMaxHeader = 100ull << 20;
constexpr const char* kChecksumKey = "helios.crc32c"; // JSON: tensor name -> CRC-32C, "__metadata__" too
constexpr const char* kSealKey = "helios.seal"; // CRC-32C of the checksums, the metadata, the tensor table

// One tensor's entry in the header: what it is and where its bytes lie (offsets past the header).
struct TableEntry {
  TensorInfo info;
  uint64_t begin = 0, end = 0;
};

uint32_t bytesOf(StoredType t);
// values -> their stored bytes (little-endian hosts; F16/BF16 round to nearest even), appended to `out`.
void encode(std::span<const float> values, StoredType t, std::string& out);
// stored bytes -> f32 values (exact widening).
void decode(std::span<const std::byte> bytes, StoredType t, float* out);
std::string hex32(uint32_t v);
// The CRC-32C of every metadata entry but the checksums and the seal, as "key\0value\0" in key order.
uint32_t metadataCrc(const std::map<std::string, std::string>& metadata);
// The seal: a CRC-32C over the checksum map's text (so a tensor swapped together with its entry is caught),
// the other metadata and the tensor table in file order, as "key\0value\0" and
// "name\0dtype\0dims\0begin\0end\0".
uint32_t sealCrc(const std::map<std::string, std::string>& metadata, const std::string& checksums,
                 const std::vector<TableEntry>& table);

} // namespace helios::train::safetensors_format
