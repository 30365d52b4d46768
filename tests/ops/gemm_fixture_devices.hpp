#pragma once
// Devices for the GEMM policy and planner tests, without a GPU: each captured fixture under
// tests/fixtures/coopmat/, a lavapipe-like device without cooperative matrices, and that device with the coop
// kernels lowered (HELIOS_COOP_EMULATE) at two shapes. Each comes as the probe's capture (DeviceCaps) and as
// what the GEMM reads of it.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probe/caps.hpp"
#include "probe/json.hpp"

namespace helios::testing {

// One fixture file under tests/fixtures/coopmat/.
inline probe::DeviceCaps fixtureCaps(const std::string& file) {
  std::ifstream in(std::string(HELIOS_FIXTURE_DIR) + "/coopmat/" + file);
  if (!in) throw std::runtime_error("cannot open fixture " + file);
  return probe::capsFromFixtureJson(nlohmann::json::parse(in));
}

// Every fixture file's name, sorted.
inline std::vector<std::string> fixtureFiles() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(HELIOS_FIXTURE_DIR) + "/coopmat"))
    if (e.path().extension() == ".json") files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

// Lavapipe as helios-probe reads it (8 lanes, 32 KiB of shared memory, 1024 invocations), with 4 compute
// units fixed (the live device counts the host's threads).
inline probe::DeviceCaps lavapipeCaps() {
  probe::DeviceCaps caps;
  caps.name = "lavapipe";
  caps.vendor_id = 0x10005;
  caps.subgroup_size = caps.min_subgroup_size = caps.max_subgroup_size = 8;
  caps.max_compute_shared_memory = 32768;
  caps.max_workgroup_invocations = 1024;
  caps.max_workgroup_size = {1024, 1024, 1024};
  caps.extensions = {"VK_EXT_subgroup_size_control"};
  caps.shader_float16 = caps.storage_buffer_16bit = true;
  caps.shader_cores.computeUnits = 4;
  return caps;
}

} // namespace helios::testing
