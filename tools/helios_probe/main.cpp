// helios-probe: prints what each Vulkan device offers Helios' kernels (see probe/cli.hpp).
#include "probe/cli.hpp"

#include <CLI/CLI.hpp>
#include <iostream>

int main(int argc, char** argv) {
  helios::probe::ProbeOptions options;
  CLI::App app{
      "helios-probe: device capabilities, cooperative-matrix configurations and the f16 x f16 -> f32 "
      "shape Helios would use"};
  app.add_flag("--json", options.json, "Print JSON ({\"devices\":[...]}) instead of tables");
  app.add_option("--from-json", options.fromJson,
                 "Read a captured property list (fixture or --json output) instead of querying Vulkan")
      ->check(CLI::ExistingFile);
  app.add_option("--device", options.device,
                 "Only this device: an index or a case-insensitive name substring (default: $HELIOS_DEVICE)");
  CLI11_PARSE(app, argc, argv);
  return helios::probe::runProbe(options, std::cout, std::cerr);
}
