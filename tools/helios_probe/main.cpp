// helios-probe: prints what each Vulkan device offers Helios' kernels (report.hpp).
#include "engine/ops/coop_selftest.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "engine/tuning/file.hpp"
#include "tools/cli_checks.hpp"
#include "tools/helios_bench/bench_peak.hpp"
#include "tools/helios_probe/report.hpp"

#include <CLI/CLI.hpp>
#include <iostream>

int main(int argc, char** argv) {
  helios::probe_cli::ProbeOptions options;
  CLI::App app{
      "helios-probe: device capabilities, cooperative-matrix configurations and the f16 x f16 -> f32 "
      "shape Helios would use"};
  app.add_flag("--json", options.json, "Print JSON ({\"devices\":[...]}) instead of tables");
  app.add_option("--from-json", options.fromJson,
                 "Read a captured property list (fixture or --json output) instead of querying Vulkan")
      ->check(CLI::ExistingFile);
  app.add_option("--device", options.device,
                 "Only this device: an index or a case-insensitive name substring (default: $HELIOS_DEVICE)");
  bool selfTest = false;
  app.add_flag(
      "--self-test", selfTest,
      "Run Helios' coop self-test on each device with cooperative matrices where no result is cached "
      "(HELIOS_COOP=on|off skips it), and show the result");
  bool tuning = false;
  std::string tuningFile;
  app.add_flag("--tuning", tuning,
               "Print the device's effective Tuning record and where each value came from (default, file, "
               "--tuning, env); with --json as JSON");
  app.add_option("--tuning-file", tuningFile, "With --tuning: read this tuning file after the device's own");
  bool peak = false;
  app.add_flag(
      "--peak", peak,
      "Measure the device's own ceilings as `helios-bench peak` does (MulAdd throughput per listed "
      "cooperative-matrix configuration, memory bandwidth; the options below); with --json the JSON, "
      "the lines on stderr");
  helios::bench::PeakBenchOptions peakOptions;
  helios::bench::addPeakOptions(app, peakOptions);
  helios::cli::refuseEmptyValues(app); // "" is no path, size or name
  CLI11_PARSE(app, argc, argv);
  if (peak) {
    try {
      const auto ctx = helios::vk::Context::create({.device = options.device});
      peakOptions.log = options.json ? stderr : stdout;
      const auto result = helios::bench::benchPeak(*ctx, {}, peakOptions);
      if (options.json) std::cout << result.dump(1) << "\n";
      return 0;
    } catch (const std::exception& e) {
      std::cerr << "helios-probe: " << e.what() << "\n";
      return 1;
    }
  }
  if (tuning) {
    try {
      if (!tuningFile.empty()) helios::ops::setTuningFile(tuningFile);
      const auto ctx = helios::vk::Context::create({.device = options.device});
      const helios::tuning::Tuning& t = helios::ops::deviceTuning(ctx->device());
      std::cout << (options.json ? helios::tuning::reportJson(t).dump(2) + "\n"
                                 : helios::tuning::reportText(t));
      std::cout << (options.json
                        ? ""
                        : "  (device file: " +
                              helios::tuning::tuningFilePath(helios::vk::cacheDirectory(), t.key).string() +
                              ")\n");
      return 0;
    } catch (const std::exception& e) {
      std::cerr << "helios-probe: " << e.what() << "\n";
      return 1;
    }
  }
  if (selfTest)
    options.selfTest = [](std::size_t index) {
      // The engine's own first use of the device: coopDeviceInfo asks the self-test (coop_selftest.hpp).
      const auto ctx = helios::vk::Context::create({.device = std::to_string(index)});
      helios::ops::coopDeviceInfo(ctx->device());
      return helios::ops::coopSelfTestResult(ctx->device());
    };
  return helios::probe_cli::runProbe(options, std::cout, std::cerr);
}
