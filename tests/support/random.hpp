#pragma once
// Fresh random inputs for every test run (seeded from the clock, printed so a failure can be replayed
// with HELIOS_TEST_SEED), and the poison value written into outputs before each kernel runs.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace helios::test {

inline uint64_t testSeed() {
  static const uint64_t seed = []() -> uint64_t {
    if (const char* env = std::getenv("HELIOS_TEST_SEED")) return std::strtoull(env, nullptr, 10);
    return static_cast<uint64_t>(std::random_device{}()) ^
           (static_cast<uint64_t>(std::random_device{}()) << 32);
  }();
  return seed;
}

inline std::mt19937_64& rng() {
  static std::mt19937_64 gen(testSeed());
  return gen;
}

inline std::vector<float> randomFloats(size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v)
    x = dist(rng());
  return v;
}

// A NaN with a recognisable payload: an output element still holding it was never written.
inline float poisonF32() {
  uint32_t bits = 0x7fc0dead;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

} // namespace helios::test
