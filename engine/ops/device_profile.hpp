#pragma once
// What the GEMM planner (gemm_plan.hpp) knows of one device, in one value: the coop facts (the probe's
// cooperative-matrix lists with the self-test's verdict and the Tuning record's device-wide switches
// applied), the tiled kernel's limits (shared memory, invocations, subgroup size, compute units) and the
// device's Tuning record. The engine builds it from the live device (deviceProfile); the planner's tests
// build it from a captured fixture (profileFromCaps) the same way, so a plan is a pure function of
// (MatmulArgs, DeviceProfile).
#include <optional>

#include "codegen/kernels/gemm_tiled.hpp"
#include "engine/ops/matmul_policy.hpp"
#include "engine/tuning/tuning.hpp"
#include "engine/vk/device.hpp"
#include "probe/caps.hpp"

namespace helios::ops {

struct DeviceProfile {
  std::string name;
  CoopDeviceInfo coop; // coopMatrix false where the device has none or the self-test refused them
  codegen::GemmDeviceLimits limits; // the tiled kernel's view; targetWorkgroups = the compute units
  // The device's record (defaults, its file, --tuning, the environment); lives as long as the record
  // (deviceTuning's, or the caller's for profileFromCaps).
  const tuning::Tuning* tuning = nullptr;
  bool subgroupArithmetic = true; // compute-stage subgroup arithmetic (the row reductions' subgroup kernels)
};

// The live device's profile, built on first use and kept for the process (device_profile_live.cpp), with
// HELIOS_COOP and the coop self-test's verdict applied (coop_selftest.hpp: the first call may run it).
DeviceProfile deviceProfile(const vk::Device& device);
// The same before the self-test's verdict (facts only: never runs a kernel).
const DeviceProfile& storedDeviceProfile(const vk::Device& device);
// deviceProfile(device).coop: what the device offers the coop kernels.
CoopDeviceInfo coopDeviceInfo(const vk::Device& device);
// The stored profile's Tuning record, to replace (device_tuning.hpp: setDeviceTuning, reloadDeviceTuning).
tuning::Tuning& deviceRecord(const vk::Device& device);
// Whether any device's profile has been built (a tuning file named after that would not apply).
bool anyDeviceProfile();

// A captured device as the live device would see itself (gemm.coop2 and gemm.coopEmulate from `tuning`
// applied as queryCoopDevice applies them), trusted (no self-test); `tuning` must outlive the profile.
DeviceProfile profileFromCaps(const std::string& name, const probe::DeviceCaps& caps,
                              const tuning::Tuning& tuning);

// gemm.coopEmulate (HELIOS_COOP_EMULATE): `info` with the coop kernels lowered for its subgroup size at
// shape `s` (throws std::invalid_argument when the shape's matrices do not split over the subgroup).
void lowerCoop(CoopDeviceInfo& info, const tuning::MatShape& s);

} // namespace helios::ops
