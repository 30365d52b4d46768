#include "engine/train/crc32c.hpp"

#include <array>

namespace helios::train {

namespace {

using Tables = std::array<std::array<uint32_t, 256>, 8>;

// t[0] is the classic byte table; t[k][b] is the CRC of byte b followed by k zero bytes, so that eight
// bytes fold in with eight look-ups ("slicing by 8").
constexpr Tables makeTables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i)
      c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    t[0][b] = c;
  }
  for (uint32_t b = 0; b < 256; ++b)
    for (int k = 1; k < 8; ++k)
      t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
  return t;
}

constexpr Tables kTables = makeTables();

uint32_t load32le(const std::byte* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

} // namespace

uint32_t crc32c(std::span<const std::byte> bytes, uint32_t crc) {
  const auto& t = kTables;
  uint32_t c = ~crc;
  const std::byte* p = bytes.data();
  size_t n = bytes.size();
  for (; n >= 8; n -= 8, p += 8) {
    const uint32_t lo = load32le(p) ^ c, hi = load32le(p + 4);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
        t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
  }
  for (; n > 0; --n, ++p)
    c = (c >> 8) ^ t[0][(c ^ uint32_t(*p)) & 0xff];
  return ~c;
}

} // namespace helios::train
