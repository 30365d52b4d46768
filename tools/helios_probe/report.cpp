#include "tools/helios_probe/report.hpp"

#include "engine/vk/device_probe.hpp"
#include "engine/vk/device_select.hpp"
#include "probe/format.hpp"
#include "probe/json.hpp"

#include <exception>

namespace helios::probe_cli {

using namespace helios::probe;

int runProbe(const ProbeOptions& options, std::ostream& out, std::ostream& err) {
  try {
    auto devices = options.fromJson.empty() ? vk::probeDevices() : loadCapsFile(options.fromJson);
    // HELIOS_DEVICE picks among this machine's devices; a captured file is filtered by --device only.
    const auto picked = vk::selectProbedDevices(
        devices, options.fromJson.empty() ? vk::deviceSelector(options.device) : options.device);
    if (options.selfTest && options.fromJson.empty())
      for (auto i : picked)
        if (!devices[i].coop_khr.empty()) devices[i].coop_self_test = options.selfTest(i);
    if (options.json) {
      std::vector<DeviceCaps> chosen;
      for (auto i : picked)
        chosen.push_back(devices[i]);
      out << toJson(chosen).dump(2) << "\n";
    } else {
      for (std::size_t n = 0; n < picked.size(); ++n)
        out << (n ? "\n" : "") << formatDevice(devices[picked[n]], picked[n]);
    }
    return 0;
  } catch (const std::exception& e) {
    err << "helios-probe: " << e.what() << "\n";
    return 1;
  }
}

} // namespace helios::probe_cli
