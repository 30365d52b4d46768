#pragma once
// The devices, problems and configs the coop policy's tests (test_policy_*.cpp) share: captured fixtures read
// as the policy sees them, and the two configs that isolate the padded and the bounded paths.
#include <array>
#include <catch2/catch_test_macros.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/ops/matmul_policy.hpp"
#include "probe/json.hpp"

namespace helios::policy_test {

using namespace helios::ops;

// The fixture's coop list, shared memory and subgroup size (the fields the policy reads), parsed here so the
// test needs only the JSON header.
inline probe::DeviceCaps loadFixture(const std::string& file) {
  std::ifstream in(std::string(HELIOS_FIXTURE_DIR) + "/coopmat/" + file);
  REQUIRE(in);
  const auto j = nlohmann::json::parse(in);
  probe::DeviceCaps caps;
  caps.name = j.value("device", "");
  caps.subgroup_size = j.value("subgroup_size", 0u);
  caps.min_subgroup_size = j.value("min_subgroup_size", 0u);
  caps.max_subgroup_size = j.value("max_subgroup_size", 0u);
  for (const auto& e : j.value("extensions", nlohmann::json::array()))
    caps.extensions.push_back(e.get<std::string>());
  caps.max_compute_shared_memory = j.value("max_compute_shared_memory_size", 0u);
  for (const auto& p : j.value("properties", nlohmann::json::array()))
    caps.coop_khr.push_back({p.at("M"), p.at("N"), p.at("K"), p.at("A"), p.at("B"), p.at("C"), p.at("Result"),
                             p.value("saturating", false), p.at("scope")});
  if (j.contains("shader_cores")) caps.shader_cores.computeUnits = j["shader_cores"].at("compute_units");
  if (j.contains("shader_bfloat16")) {
    const auto& b = j["shader_bfloat16"];
    caps.shader_bfloat16 = {true, b.value("type", false), b.value("dot_product", false),
                            b.value("cooperative_matrix", false)};
  }
  return caps;
}

inline CoopDeviceInfo h100() {
  return coopDeviceFromCaps(loadFixture("nvidia-h100-580.json"));
}

inline CoopDeviceInfo noCoop() { // lavapipe-like: no cooperative matrices at all
  probe::DeviceCaps caps;
  caps.subgroup_size = 8;
  caps.max_compute_shared_memory = 32768;
  return coopDeviceFromCaps(caps);
}

inline MatmulProblem problem(uint32_t M, uint32_t N, uint32_t K, uint32_t batch = 1) {
  MatmulProblem p;
  p.M = M;
  p.N = N;
  p.K = K;
  p.batch = batch;
  return p;
}

// The padded path's own rules (cap, floor) with the bounded kernel out of the way, and the bounded kernel
// for every unaligned problem over the floor up to 10 GFLOP (and over the cap at any size).
inline tuning::GemmTuning padOnly() {
  tuning::GemmTuning g;
  g.bounded.value = tuning::BoundedMode::Never;
  return g;
}
inline tuning::GemmTuning withBounded() {
  tuning::GemmTuning g;
  g.boundedMinFlops.value = 0;
  g.boundedMaxFlops.value = 1e10;
  return g;
}

inline uint32_t up(uint32_t x, uint32_t m) {
  return (x + m - 1) / m * m;
}

// The H100's coop shapes and limits on a device of 24 compute units (a mid-range GPU).
inline CoopDeviceInfo small24() {
  probe::DeviceCaps caps = loadFixture("nvidia-h100-580.json");
  caps.shader_cores.computeUnits = 24;
  return coopDeviceFromCaps(caps);
}

// A fixture read whole by the probe's reader (vendor id and subgroup range included), e.g. the captures of
// ANV and RADV under Mesa's no-op DRM shims (tests/fixtures/coopmat/*-shim.json).
inline CoopDeviceInfo shimFixture(const std::string& file) {
  return coopDeviceFromCaps(probe::loadCapsFile(std::string(HELIOS_FIXTURE_DIR) + "/coopmat/" + file).at(0));
}

// The H100 fixture plus its VK_NV_cooperative_matrix2 list (as the 580 driver reports it, int8 and bf16
// entries included: the policy must skip them).
inline CoopDeviceInfo h100Nv2() {
  probe::DeviceCaps caps = loadFixture("nvidia-h100-580.json");
  for (auto [m, n, k, inv] : {std::array<uint32_t, 4>{16, 16, 16, 0},
                              {16, 16, 16, 32},
                              {16, 16, 16, 64},
                              {32, 16, 16, 128},
                              {32, 32, 16, 256}}) {
    const std::string scope = inv ? "workgroup" : "subgroup";
    caps.coop_nv2.push_back({m, n, k, "float16", "float16", "float32", "float32", false, scope, inv});
    caps.coop_nv2.push_back({m, n, k * 2, "uint8", "uint8", "uint32", "uint32", false, scope, inv});
    caps.coop_nv2.push_back({m, n, k, "bfloat16", "bfloat16", "float32", "float32", false, scope, inv});
  }
  return coopDeviceFromCaps(caps);
}

} // namespace helios::policy_test
