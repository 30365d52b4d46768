#pragma once
// FNV-1a, 64 bits: a fingerprint of a corpus or a tokenizer's files, stored beside what was made from them so
// that a resume can tell when they changed. Not a checksum against tampering.
#include <cstdint>
#include <string_view>

namespace helios {

inline uint64_t fnv1a64(std::string_view bytes, uint64_t h = 0xcbf29ce484222325ull) {
  for (char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

} // namespace helios
