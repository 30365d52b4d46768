#pragma once
// What `helios-probe` prints, apart from parsing its command line (main.cpp): the live devices
// (vk::probeDevices) or a captured list, picked by --device, as tables or JSON.
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>

#include "probe/selftest.hpp"

namespace helios::probe_cli {

struct ProbeOptions {
  bool json = false;    // --json: machine-readable output
  std::string fromJson; // --from-json FILE: score a captured property list instead of the live devices
  std::string device;   // --device SEL (falls back to HELIOS_DEVICE)
  // --self-test: the coop self-test's result for live device `index` (run where none is cached); the tool
  // supplies it, as running kernels needs the engine. Unset: the cached result only.
  std::function<probe::SelfTestResult(std::size_t index)> selfTest;
};

// Prints the report to `out`; on any failure prints one sentence to `err` and returns 1, else returns 0.
int runProbe(const ProbeOptions& options, std::ostream& out, std::ostream& err);

} // namespace helios::probe_cli
