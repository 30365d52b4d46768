#pragma once
// Whether a device's cooperative matrices can be trusted. Drivers advertise coop matrices that are broken or
// slow, so the first coop use of a device runs a small self-test (coop GEMMs, aligned and through the
// bounded kernel, and a coop attention forward and backward, each against a float64 CPU reference) and keeps
// the verdict beside the pipeline caches (probe/selftest.hpp), keyed by device, driver and
// HELIOS_KERNEL_VERSION. A failure turns coop off for that device with one warning on stderr, and the tiled
// and fallback kernels run instead. The Tuning record's gemm.coop (HELIOS_COOP=on|off|auto) overrides it
// (auto: the self-test decides).
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "engine/ops/matmul_policy.hpp"
#include "engine/tuning/tuning.hpp"
#include "engine/vk/context.hpp"
#include "probe/selftest.hpp"

namespace helios::ops {

using CoopMode = tuning::CoopMode;

// One check: its name, and a run that returns "" when the result is right, else what was wrong. A throw
// (a pipeline that fails to build) fails the check as well.
struct CoopCheck {
  std::string name;
  std::function<std::string()> run;
};
// Runs `checks` in order and stops at the first failure ("<name>: <what>"); NotRun when there are none.
probe::SelfTestResult runCoopChecks(const std::vector<CoopCheck>& checks);

// The verdict for one device: On and Off decide alone (NotRun); Auto reads `cacheFile` for `key`, else runs
// `checks()` and writes the result there. A failure (fresh or cached) writes one warning naming `deviceName`
// and the failed check to `warn`. Returns whether coop may be used; the result goes to `out`.
bool decideCoop(CoopMode mode, const std::string& deviceName, const std::filesystem::path& cacheFile,
                const probe::SelfTestKey& key, const std::function<std::vector<CoopCheck>()>& checks,
                std::ostream& warn, probe::SelfTestResult* out = nullptr);

// What liveCoopChecks runs. standIn: the tiled GEMM and the fallback attention in place of the coop kernels
// (the checks' own path end to end on a device without coop matrices: tests); tamper: changes each result
// after it is read back (tests plant wrong outputs with it).
struct CoopCheckOptions {
  bool standIn = false;
  std::function<void(std::vector<float>&)> tamper;
};
// `g` with the self-test's choices for its unaligned GEMM where no file, --tuning or override set them: no
// padding and no size floors, so it plans bounded.
tuning::GemmTuning selfTestBounded(tuning::GemmTuning g);

// The checks on `ctx` for a device whose raw coop query is `info`: GEMM f16 x f16 -> f32 on an aligned
// problem (direct kernel) and an unaligned one (bounded kernel), then attention forward and backward where
// attentionCoopAvailable() (or standIn). Fresh random inputs each run. A plan that falls back (a device
// without coop, a tuning knob) runs the tiled kernel, and its result is checked the same way.
std::vector<CoopCheck> liveCoopChecks(vk::Context& ctx, const CoopDeviceInfo& info,
                                      const CoopCheckOptions& options = {});

// The engine's hook (coopDeviceInfo): whether coop may be used on `device`, whose raw query `info` has coop
// matrices. Decided once per device and process from HELIOS_COOP, the cache in vk::cacheDirectory() and
// liveCoopChecks on the device's context (none: trusted, not run). Inside the self-test it answers true.
bool coopTrusted(const vk::Device& device, const CoopDeviceInfo& info);
// What coopTrusted found for `device` (NotRun before it ran, or under HELIOS_COOP=on|off).
probe::SelfTestResult coopSelfTestResult(const vk::Device& device);

} // namespace helios::ops
