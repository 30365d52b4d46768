#pragma once
// The tests' side of tests/train/hf_models.py (random Llama, Qwen2 and Mistral checkpoints and their float64
// NumPy forward): running it with /usr/bin/python3, and the int32 ids .npy files it and helios-train read.
#include "engine/io/npy.hpp"
#include "support/process.hpp"
#include "support/random.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <string>
#include <vector>

namespace helios::test {

inline bool haveNumpy() {
  return runCommand("/usr/bin/python3 -c 'import numpy'").exitCode == 0;
}

inline CommandResult hfModels(const std::string& args) {
  return runCommand(fmt::format("/usr/bin/python3 {}/tests/train/hf_models.py {}", HELIOS_SOURCE_DIR, args));
}

// tests/train/peft_check.py: PEFT adapter directories checked with NumPy against their base.
inline CommandResult peftCheck(const std::string& args) {
  return runCommand(fmt::format("/usr/bin/python3 {}/tests/train/peft_check.py {}", HELIOS_SOURCE_DIR, args));
}

#ifdef HELIOS_TRAIN_EXE
inline CommandResult heliosTrain(const std::string& args) {
  return runCommand(fmt::format("{} {}", HELIOS_TRAIN_EXE, args));
}
#endif

// The checkpoint of `name` (a CASES entry of hf_models.py) written into `dir`, broken on purpose when asked.
inline void writeHfCase(const std::string& name, const std::filesystem::path& dir,
                        const std::string& broken = "") {
  const auto r = hfModels(fmt::format("write {} {} {} {}", name, dir.string(), rng()() % 1000000, broken));
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
}

// int32 ids [batch, ids.size() / batch].
inline void writeIds(const std::filesystem::path& path, const std::vector<int32_t>& ids, uint64_t batch) {
  io::NpyArray a;
  a.dtype = io::NpyDType::I32;
  a.shape = {batch, ids.size() / batch};
  a.data.resize(ids.size() * 4);
  std::memcpy(a.data.data(), ids.data(), a.data.size());
  io::writeNpy(path, a);
}

inline std::vector<int32_t> randomIds(size_t n, uint32_t vocab) {
  std::vector<int32_t> ids(n);
  for (auto& t : ids)
    t = static_cast<int32_t>(rng()() % vocab);
  return ids;
}

// The largest |a - b| (infinite where a is not finite); the sizes must match.
inline float maxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float d = 0;
  for (size_t i = 0; i < a.size(); ++i)
    d = std::max(d, std::isfinite(a[i]) ? std::abs(a[i] - b[i]) : INFINITY);
  return d;
}

} // namespace helios::test
