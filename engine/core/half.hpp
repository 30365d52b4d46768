#pragma once
// IEEE 754 binary16 <-> binary32 conversion on the host (round to nearest even), for uploads, downloads
// and .npy files. Header-only: it sits on no hot path that matters.
#include <cstdint>
#include <cstring>
#include <vector>

namespace helios {

inline float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13); // inf / NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13); // normal: rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign; // zero
  } else {
    // Subnormal half: normalise into a float.
    int e = -1;
    do {
      mant <<= 1;
      ++e;
    } while (!(mant & 0x400u));
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or NaN (keep NaN quiet)
    return static_cast<uint16_t>(sign | 0x7c00u |
                                 (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0u));
  if (absx >= 0x477ff000u)
    return static_cast<uint16_t>(sign | 0x7c00u);               // rounds to >= 65520: overflow to inf
  if (absx < 0x38800000u) {                                     // below the smallest normal half
    if (absx < 0x33000000u) return static_cast<uint16_t>(sign); // rounds to zero
    uint32_t e = absx >> 23;
    uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e; // 14..24
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = ((absx >> 13) - (112u << 10));
  uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

// bfloat16: the top half of a binary32 (round to nearest even; NaN stays a quiet NaN).
inline float bf16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// Element-wise conversions of whole arrays (f16 bits <-> float).
inline std::vector<uint16_t> toHalf(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    h[i] = floatToHalf(v[i]);
  return h;
}

inline std::vector<float> fromHalf(const std::vector<uint16_t>& v) {
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    f[i] = halfToFloat(v[i]);
  return f;
}

} // namespace helios
