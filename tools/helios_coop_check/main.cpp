// helios-coop-check: is the cooperative-matrix GEMM right, deterministic and fast on this device?
//   helios-coop-check [--json FILE] [--quick] [--no-timing] [--no-checks] [--size 4096] [--repeats 10]
//                     [--tiled-inner] [--seed N] [--device NAME]
// Exit status: 0 all checks passed, 1 a check failed, 2 setup error (no device, no coop and no
// --tiled-inner).
#include <chrono>
#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "common.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/ops/coop_stats.hpp"
#include "tools/cli_checks.hpp"

using namespace helios;

int main(int argc, char** argv) {
  CLI::App app{"helios-coop-check: numerics, determinism and timing of the cooperative-matrix GEMM"};
  coopcheck::Options opt;
  std::string jsonPath, device;
  bool noTiming = false, noChecks = false;
  opt.seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  app.add_option("--json", jsonPath, "Write the report as JSON to this file");
  app.add_flag("--quick", opt.quick, "Fewer cases and tilings");
  app.add_flag("--explore", opt.explore, "Also check and time candidate tilings that are on no menu");
  app.add_flag("--only-explored", opt.onlyExplored,
               "Only the candidates of --explore, and only the tiling sweep is timed");
  app.add_option("--rasters", opt.rasters, "Raster swizzles (groupM) every tiling is timed with")
      ->delimiter(',')
      ->check(cli::Count)
      ->capture_default_str();
  app.add_flag("--no-timing", noTiming, "Checks only");
  app.add_flag("--no-checks", noChecks, "Timing only");
  app.add_option("--size", opt.size, "Square size every tiling is timed at")
      ->check(cli::PositiveCount)
      ->capture_default_str();
  app.add_option("--repeats", opt.repeats, "Timed dispatches per kernel (median)")
      ->check(cli::PositiveCount)
      ->capture_default_str();
  app.add_option("--warmup-ms", opt.warmupMs, "Warm up each kernel for this long first (GPU clocks ramp up)")
      ->check(cli::FiniteNonNegative)
      ->capture_default_str();
  app.add_option("--stress", opt.stressRuns, "Repeated runs that must be bit-identical")
      ->check(cli::Count)
      ->capture_default_str();
  app.add_flag("--tiled-inner", opt.tiledInner,
               "Padded cases with the tiled kernel as the inner GEMM (devices without coop matrices)");
  app.add_option("--seed", opt.seed, "Random seed (default: clock)")->check(cli::Count);
  app.add_option("--device", device, "Device index or name substring");
  cli::refuseEmptyValues(app); // "" is no path, size or name
  CLI11_PARSE(app, argc, argv);
  opt.checks = !noChecks;
  opt.timing = !noTiming;

  coopcheck::Report report;
  int status = 0;
  try {
    auto ctx = vk::Context::create({.device = device});
    ops::CoopDeviceInfo dev = ops::coopDeviceInfo(ctx->device());
    fmt::print("device: {}  coop f16xf16->f32: {}  shape {}x{}x{}  subgroup {}  shared {} B  seed {}\n",
               ctx->device().name(), dev.coopMatrix ? "yes" : "no", dev.coopM, dev.coopN, dev.coopK,
               dev.subgroupSize, dev.maxSharedBytes, opt.seed);
    report.json["device"] = ctx->device().name();
    report.json["coop"] = {{"available", dev.coopMatrix},
                           {"M", dev.coopM},
                           {"N", dev.coopN},
                           {"K", dev.coopK},
                           {"subgroup", dev.subgroupSize},
                           {"shared", dev.maxSharedBytes}};
    report.json["seed"] = opt.seed;
    if (!dev.coopMatrix) {
      if (!opt.tiledInner) {
        fmt::print("no cooperative matrices on this device (use --tiled-inner to check the pad/crop path)\n");
        return 2;
      }
      // Plan as an H100 would, run the tiled kernel inside.
      dev.coopMatrix = true;
      dev.coopM = dev.coopN = dev.coopK = 16;
      opt.timing = false;
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (opt.checks) coopcheck::runChecks(*ctx, dev, opt, report);
    const auto t1 = std::chrono::steady_clock::now();
    if (opt.timing) coopcheck::runTiming(*ctx, dev, opt, report);
    const auto t2 = std::chrono::steady_clock::now();
    report.json["seconds"] = {{"checks", std::chrono::duration<double>(t1 - t0).count()},
                              {"timing", std::chrono::duration<double>(t2 - t1).count()}};
    status = report.failures ? 1 : 0;
  } catch (const std::exception& e) {
    fmt::print("error: {}\n", e.what());
    report.json["error"] = e.what();
    status = 2;
  }
  report.json["passed"] = report.passes;
  report.json["failed"] = report.failures;
  fmt::print("summary: {} passed, {} failed\n", report.passes, report.failures);
  if (!jsonPath.empty()) {
    try {
      helios::io::writeFileAtomically(jsonPath, report.json.dump(2) + "\n");
    } catch (const std::exception& e) {
      fmt::print("error: {}\n", e.what());
      return 2;
    }
  }
  return status;
}
