#pragma once
// Device buffers for op tests: one shared context, inputs uploaded from host vectors, outputs poisoned with a
// guard element past the end, and a read-back that checks every element was written and the guard was not.
#include "engine/vk/context.hpp"
#include "support/random.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace helios::test {

inline vk::Context& ctx() {
  static auto context = vk::Context::create({.persistentPipelineCache = false});
  return *context;
}

template <class T> vk::Buffer input(const std::vector<T>& v, const char* what) {
  auto b = ctx().buffer(v.size() * sizeof(T), what);
  ctx().uploadVector(b, v);
  return b;
}

// n floats plus one guard element, all poisoned.
inline vk::Buffer output(size_t n, const char* what) {
  auto b = ctx().buffer((n + 1) * 4, what);
  ctx().uploadVector(b, std::vector<float>(n + 1, poisonF32()));
  return b;
}

inline bool isPoison(float f) {
  uint32_t a, b;
  const float p = poisonF32();
  std::memcpy(&a, &f, 4);
  std::memcpy(&b, &p, 4);
  return a == b;
}

// Downloads n elements; checks every one was written and the guard past the end was not.
inline std::vector<float> result(const vk::Buffer& b, size_t n) {
  auto v = ctx().downloadVector<float>(b, n + 1);
  size_t unwritten = 0;
  for (size_t i = 0; i < n; ++i)
    unwritten += isPoison(v[i]);
  CHECK(unwritten == 0);
  CHECK(isPoison(v[n]));
  v.resize(n);
  return v;
}

// f16 outputs: n halves plus a guard, all holding a NaN pattern no kernel writes.
constexpr uint16_t kPoisonF16 = 0x7E5A;
// The same for bf16 outputs (a NaN as bf16; a kernel's quiet NaN would read 0x7fc0 or carry its payload).
constexpr uint16_t kPoisonBF16 = 0x7F9A;

inline vk::Buffer outputHalf(size_t n, const char* what, uint16_t poison = kPoisonF16) {
  auto b = ctx().buffer((n + 1) * 2, what);
  ctx().uploadVector(b, std::vector<uint16_t>(n + 1, poison));
  return b;
}

// Downloads n halves (the raw bits); checks every one was written and the guard was not.
inline std::vector<uint16_t> resultHalf(const vk::Buffer& b, size_t n, uint16_t poison = kPoisonF16) {
  auto v = ctx().downloadVector<uint16_t>(b, n + 1);
  CHECK(std::count(v.begin(), v.end() - 1, poison) == 0);
  CHECK(v[n] == poison);
  v.resize(n);
  return v;
}

// rows x cols pairs over the odd sizes {1, 7, 33, 127, 513} and a few aligned ones.
inline std::vector<std::pair<uint32_t, uint32_t>> rowShapes() {
  std::vector<std::pair<uint32_t, uint32_t>> s;
  for (uint32_t r : {1u, 7u, 33u, 127u, 513u})
    for (uint32_t c : {1u, 7u, 33u, 127u, 513u})
      s.emplace_back(r, c);
  for (auto rc : {std::pair{64u, 64u}, {256u, 256u}, {64u, 1024u}, {1024u, 256u}})
    s.push_back(rc);
  return s;
}

} // namespace helios::test
