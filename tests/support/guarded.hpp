#pragma once
// Device buffers with guard elements: kGuard copies of a known value past the range an op is told about, so
// that a test sees both that the op wrote its whole range and that it wrote nothing beyond it.
#include "support/device_io.hpp"

#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <cstring>
#include <vector>

namespace helios::test {

constexpr size_t kGuard = 16;

// A float's bits, for comparisons that must be exact (NaN payloads included).
inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// A device buffer holding `data` followed by kGuard copies of `guard`.
template <class T> vk::Buffer guardedBuffer(std::vector<T> data, T guard, const char* what) {
  data.insert(data.end(), kGuard, guard);
  vk::Buffer b = ctx().buffer(data.size() * sizeof(T), what);
  ctx().uploadVector(b, data);
  return b;
}

// The first `elems` elements of b (what the op is told about); the guard stays outside.
inline vk::BufferRange head(const vk::Buffer& b, size_t elems, size_t elemBytes = 4) {
  vk::BufferRange r = b.range();
  r.size = elems * elemBytes;
  return r;
}

// Downloads n elements and the guard; checks every guard element still holds `guard`, bit for bit, and
// returns the first n.
template <class T> std::vector<T> readGuarded(const vk::Buffer& b, size_t n, T guard) {
  auto all = ctx().downloadVector<T>(b, n + kGuard);
  size_t touched = 0;
  for (size_t i = n; i < n + kGuard; ++i)
    touched += std::memcmp(&all[i], &guard, sizeof(T)) != 0;
  CHECK(touched == 0);
  all.resize(n);
  return all;
}

// How many elements still hold poisonF32()'s bits (never written).
inline size_t countPoisoned(const std::vector<float>& v) {
  size_t c = 0;
  for (float x : v)
    c += isPoison(x);
  return c;
}

} // namespace helios::test
