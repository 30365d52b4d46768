// helios-bench: throughput of Helios' kernels on one device, as JSON (compare with bench/torch/*.py run in
// the same device session).
#include "bench_attention.hpp"
#include "bench_compile.hpp"
#include "bench_dispatch.hpp"
#include "bench_gemm.hpp"
#include "bench_peak.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/vk/error.hpp"
#include "tools/cli_checks.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <iostream>

int main(int argc, char** argv) {
  using namespace helios;
  CLI::App app{"helios-bench: time Helios kernels on a Vulkan device and write JSON"};
  app.require_subcommand(1);
  bench::CommonOptions common;
  auto addCommon = [&](CLI::App* sub) {
    sub->add_option("--device", common.device,
                    "Device index or name substring (default: $HELIOS_DEVICE, else best)");
    sub->add_option("--json", common.jsonOut, "Write the results to this JSON file");
    sub->add_option("--tuning", common.tuningFile,
                    "Tuning file read after the device's own (docs/TUNING.md); a missing, corrupt or "
                    "mismatched one warns and is left out");
    sub->add_option("--commit", common.commit, "Commit recorded in the JSON (default: $HELIOS_COMMIT)");
    sub->add_option("--label", common.label, "Recorded in the JSON: which configuration this run is");
    sub->add_option("--warmup", common.warmup, "Untimed runs first (dispatch benchmark)")
        ->check(cli::Count)
        ->capture_default_str();
    sub->add_option(
           "--warmup-ms", common.warmupMs,
           "Keep the GPU busy with replayed calls this long before timing (clocks ramp up under load)")
        ->check(cli::FiniteNonNegative)
        ->capture_default_str();
    sub->add_option("--repeat", common.repeat, "Calls per timed window, back to back (timed together)")
        ->check(cli::PositiveCount)
        ->capture_default_str();
    sub->add_option("--windows", common.windows,
                    "Timed windows, back to back; the median window's time per call is reported")
        ->check(cli::PositiveCount)
        ->capture_default_str();
  };

  bench::GemmBenchOptions gemm;
  auto* gemmCmd = app.add_subcommand("gemm", "C = A*B throughput (TFLOP/s) per shape, layout and tiling");
  addCommon(gemmCmd);
  gemmCmd->add_option("--shapes", gemm.shapes, "MxNxK list")->delimiter(',')->capture_default_str();
  gemmCmd->add_option("--layouts", gemm.layouts, "nn, nt (B stored NxK), tn (A stored KxM)")
      ->delimiter(',')
      ->capture_default_str();
  gemmCmd->add_option("--tiles", gemm.tiles, "'auto' or tiled-kernel tilings such as 128x128x8_8x8_p4_s2")
      ->delimiter(',')
      ->capture_default_str();
  gemmCmd
      ->add_option(
          "--dtype", gemm.dtype,
          "Storage of A and B (bf16: bf16 cooperative matrices where the device lists them, else the "
          "tiled kernel widening bf16 to f32)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  gemmCmd->add_option("--out", gemm.out, "Storage of C (a 16-bit C is the operands' kind)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  gemmCmd
      ->add_option("--beta", gemm.beta,
                   "C = A*B + beta*C (timing only: C accumulates over the runs, no check)")
      ->check(cli::Finite)
      ->capture_default_str();
  gemmCmd->add_option("--kernel", gemm.kernel, "Kernel family")
      ->check(CLI::IsMember({"auto", "tiled", "coop"}));
  gemmCmd->add_flag(
      "--coop", [&](int64_t) { gemm.kernel = "coop"; }, "Same as --kernel coop");

  bench::AttentionBenchOptions attention;
  auto* attentionCmd =
      app.add_subcommand("attention", "Fused attention time and TFLOP/s per shape, mask and mode");
  addCommon(attentionCmd);
  attentionCmd->add_option("--shapes", attention.shapes, "BxHxSxD (kv heads = H) or BxHxHkvxSxD list")
      ->delimiter(',')
      ->capture_default_str();
  attentionCmd->add_option("--masks", attention.masks, "causal, dense")
      ->delimiter(',')
      ->check(CLI::IsMember({"causal", "dense"}))
      ->capture_default_str();
  attentionCmd
      ->add_option("--kernel", attention.kernel,
                   "fallback (f32) or coop (cooperative matrices; q, k, v, dO rounded to f16)")
      ->check(CLI::IsMember({"fallback", "coop"}))
      ->capture_default_str();
  attentionCmd->add_option("--qkv", attention.qkv, "storage of q, k and v: f32, or f16 / bf16 (coop only)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))
      ->capture_default_str();
  attentionCmd
      ->add_option("--half", attention.half,
                   "the coop passes' 16-bit kind, f16 or bf16 (bf16 cooperative matrices; a 16-bit --qkv "
                   "sets it)")
      ->check(CLI::IsMember({"f16", "bf16"}))
      ->capture_default_str();
  attentionCmd
      ->add_option("--passes", attention.passes,
                   "times over the shape list, recording the last (the first shape of a process read 2-10x "
                   "slow on the H100)")
      ->check(CLI::Range(1u, 10u))
      ->capture_default_str();
  attentionCmd->add_option("--modes", attention.modes, "fwd (forward), fwdbwd (forward + backward)")
      ->delimiter(',')
      ->check(CLI::IsMember({"fwd", "fwdbwd"}))
      ->capture_default_str();

  uint32_t count = 1000, elements = 1024;
  auto* dispatchCmd =
      app.add_subcommand("dispatch", "Small dependent dispatches: graph vs one submit per dispatch");
  addCommon(dispatchCmd);
  dispatchCmd->add_option("--count", count, "Dispatches in the chain")
      ->check(cli::PositiveCount)
      ->capture_default_str();
  dispatchCmd->add_option("--elements", elements, "Floats per dispatch")
      ->check(cli::PositiveCount)
      ->capture_default_str();

  bench::PeakBenchOptions peak;
  auto* peakCmd = app.add_subcommand(
      "peak", "The device's own ceilings: MulAdd throughput per listed cooperative-matrix configuration (a "
              "register-resident loop) and memory bandwidth (a 16-byte vector copy)");
  addCommon(peakCmd);
  bench::addPeakOptions(*peakCmd, peak);

  bench::CompileOptions compile;
  auto* compileCmd = app.add_subcommand(
      "compile", "Compile only: the pipelines a GPT-2-small step and the attention shapes use, with the "
                 "driver's statistics (registers, spills); nothing is submitted");
  addCommon(compileCmd);
  compileCmd->add_option("--workloads", compile.workloads, "gpt2-small, attention")
      ->delimiter(',')
      ->check(CLI::IsMember({"gpt2-small", "attention"}))
      ->capture_default_str();
  compileCmd->add_option("--attention-shapes", compile.attentionShapes, "BxHxSxD list (kv heads = H)")
      ->delimiter(',')
      ->capture_default_str();
  compileCmd->add_flag("--gate-no-spills", compile.gateNoSpills,
                       "Exit with status 3 when a GEMM or attention kernel spills or fills registers");
  CLI11_PARSE(app, argc, argv);
  try {
    if (!common.jsonOut.empty())
      io::resolveOutputPath(common.jsonOut); // refused before the timing, not after
    if (!common.tuningFile.empty()) ops::setTuningFile(common.tuningFile);
    auto ctx = vk::Context::create({.device = common.device});
    nlohmann::json result = gemmCmd->parsed()        ? bench::benchGemm(*ctx, common, gemm)
                            : attentionCmd->parsed() ? bench::benchAttention(*ctx, common, attention)
                            : compileCmd->parsed()   ? bench::benchCompile(*ctx, common, compile)
                            : peakCmd->parsed()      ? bench::benchPeak(*ctx, common, peak)
                                                     : bench::benchDispatch(*ctx, common, count, elements);
    bench::emit(result, common);
    if (common.jsonOut.empty() && !compileCmd->parsed()) std::cout << result.dump(1) << "\n";
    if (compileCmd->parsed() && compile.gateNoSpills && !result["spilling"].empty()) return 3;
  } catch (const vk::LoaderMissing& e) {
    std::cerr << "helios-bench: " << e.what() << "\n";
    return 1;
  } catch (const vk::NoDevice& e) {
    std::cerr << "helios-bench: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "helios-bench: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
