#pragma once
// What `helios-probe` does, apart from parsing its command line (tools/helios_probe/main.cpp).
#include <ostream>
#include <string>

namespace helios::probe {

struct ProbeOptions {
  bool json = false;    // --json: machine-readable output
  std::string fromJson; // --from-json FILE: score a captured property list instead of the live devices
  std::string device;   // --device SEL (falls back to HELIOS_DEVICE)
};

// Prints the report to `out`; on any failure prints one sentence to `err` and returns 1, else returns 0.
int runProbe(const ProbeOptions& options, std::ostream& out, std::ostream& err);

} // namespace helios::probe
