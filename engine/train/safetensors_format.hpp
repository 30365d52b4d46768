#pragma once
// Internal to engine/train's safetensors reader and writer: the pieces of the format both need (the stored
// types' sizes and conversions, the checksum entry and how the metadata's checksum is taken).
#include "engine/train/safetensors.hpp"

#include <cstddef>
#include <span>
#include <string>

namespace helios::train::safetensors_format {

constexpr uint64_t kMaxHeader = 100ull << 20;
constexpr const char* kChecksumKey = "helios.crc32c"; // JSON: tensor name -> CRC-32C, "__metadata__" too

uint32_t bytesOf(StoredType t);
// values -> their stored bytes (little-endian hosts; F16/BF16 round to nearest even), appended to `out`.
void encode(std::span<const float> values, StoredType t, std::string& out);
// stored bytes -> f32 values (exact widening).
void decode(std::span<const std::byte> bytes, StoredType t, float* out);
std::string hex32(uint32_t v);
// The CRC-32C of every metadata entry but the checksums, as "key\0value\0" in key order.
uint32_t metadataCrc(const std::map<std::string, std::string>& metadata);

} // namespace helios::train::safetensors_format
