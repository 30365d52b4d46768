// helios-tune: searches kernel parameters for a shape set on one device and writes its tuning file
// (docs/TUNING.md). Shapes from --shapes or a training preset's step.
#include <CLI/CLI.hpp>
#include <iostream>

#include "compare.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/train/config.hpp"
#include "engine/vk/context.hpp"
#include "engine/vk/error.hpp"
#include "tools/cli_checks.hpp"
#include "tune.hpp"

using namespace helios;

int main(int argc, char** argv) {
  CLI::App app{
      "helios-tune: search each kernel family's parameters for a shape set, behind correctness gates, "
      "timed at sustained clocks, and write the device's tuning file"};
  std::string preset, shapes, device, json, base;
  tune::TuneOptions o;
  std::string out;
  bool compare = false;
  tune::CompareOptions co;
  app.add_option("--preset", preset,
                 std::string("Tune a training preset's GEMM and attention shapes: ") + train::presetNames());
  app.add_option("--shapes", shapes,
                 "gemm:NN:1024x768x3072,attn:B1H12S1024D64c,... (layouts nn, nt, tn; _bN "
                 "batch, _f16 output; attention c causal, d dense)");
  app.add_option("--budget", o.budgetSeconds,
                 "Seconds for the whole run (split by each shape's share of the step's FLOPs)")
      ->check(cli::FiniteNonNegative)
      ->capture_default_str();
  app.add_option("--max-evals", o.maxEvaluations, "Candidates timed per shape at most")
      ->check(cli::PositiveCount)
      ->capture_default_str();
  app.add_option("--windows", o.timing.windows, "Timed windows per candidate")->check(cli::PositiveCount);
  app.add_option("--repeat", o.timing.repeat, "Calls per timed window")->check(cli::PositiveCount);
  app.add_option("--warmup-ms", o.timing.warmupMs, "Replayed warm-up before each candidate's windows")
      ->check(cli::FiniteNonNegative);
  app.add_option("--seed", o.seed, "Search and input seed")->check(cli::Count);
  app.add_option("--out", out, "Write the record here instead of the device's tuning file");
  app.add_option("--tuning", base, "Start from this tuning file (read after the device's own)");
  app.add_option("--json", json, "Write the summary (default and tuned time per shape) to this JSON file");
  app.add_flag("--compare", compare,
               "Then time every shape with the record before tuning (its tuned shapes left out) and with the "
               "one written, alternately in this process, and print the before/after table");
  app.add_option("--compare-rounds", co.rounds, "Timings of each side in --compare, alternately")
      ->check(cli::PositiveCount)
      ->capture_default_str();
  app.add_option("--device", device, "Device index or name substring (default: $HELIOS_DEVICE, else best)");
  cli::refuseEmptyValues(app); // "" is no path, size or name
  CLI11_PARSE(app, argc, argv);
  try {
    if (preset.empty() == shapes.empty()) throw std::invalid_argument("give one of --preset and --shapes");
    tune::Targets targets;
    if (!shapes.empty()) targets = tune::parseTargets(shapes);
    if (!preset.empty()) {
      train::TrainConfig cfg;
      train::applyPreset(cfg, preset);
      targets = tune::trainingTargets(cfg);
    }
    if (!json.empty()) io::resolveOutputPath(json);
    if (!base.empty()) ops::setTuningFile(base);
    o.out = out;
    o.progress = &std::cerr;
    auto ctx = vk::Context::create({.device = device});
    const tuning::Tuning before = tune::withoutShapes(ops::deviceTuning(ctx->device()));
    const tune::TuneReport r = tune::tuneTargets(*ctx, targets, o);
    std::cerr << "helios-tune: searched in " << r.seconds << " s (budget " << o.budgetSeconds << " s)\n";
    nlohmann::json doc{{"device", ctx->device().name()},
                       {"file", r.file.string()},
                       {"seconds", r.seconds},
                       {"budget_seconds", o.budgetSeconds},
                       {"results", r.summary}};
    if (compare) {
      co.timing = o.timing;
      co.table = &std::cerr;
      std::cerr << "helios-tune: before/after (alternately, " << co.rounds << " timings each, best kept)\n";
      doc["compare"] = tune::compareRecords(*ctx, targets, before, tune::withShapesOf(before, r.file), co);
    }
    if (!json.empty()) io::writeFileAtomically(json, doc.dump(1) + "\n");
    std::cout << doc.dump(1) << "\n";
    std::cerr << "helios-tune: wrote " << r.file.string() << "\n";
  } catch (const vk::LoaderMissing& e) {
    std::cerr << "helios-tune: " << e.what() << "\n";
    return 1;
  } catch (const vk::NoDevice& e) {
    std::cerr << "helios-tune: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "\nhelios-tune: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
