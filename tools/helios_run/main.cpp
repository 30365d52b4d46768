// helios-run: run one Helios op (matmul, softmax, layernorm, gelu, attention, cross-entropy) on your own
// .npy arrays, e.g.
//   helios-run matmul --a A.npy --b B.npy --out C.npy
#include "engine/io/atomic_file.hpp"
#include "engine/ops/coop_stats.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/vk/error.hpp"
#include "run_ops.hpp"
#include "tools/cli_checks.hpp"

#include <CLI/CLI.hpp>
#include <iostream>

int main(int argc, char** argv) {
  using namespace helios;
  CLI::App app{"helios-run: run one Helios op on NumPy .npy arrays (float32/float16, C order)"};
  app.require_subcommand(1);
  std::string device, out, gradOut, tuningPath;
  bool stats = false;
  auto common = [&](CLI::App* sub, bool needsOut = true) {
    sub->add_option("--device", device,
                    "Device index or name substring (default: $HELIOS_DEVICE, else best)");
    auto* o = sub->add_option("--out", out, "Output .npy file (written only when everything succeeded)");
    if (needsOut) o->required();
    sub->add_option("--tuning", tuningPath,
                    "Tuning file read after the device's own (docs/TUNING.md); a missing, corrupt or "
                    "mismatched one warns and is left out");
    sub->add_flag("--stats", stats, "Print the cooperative-matrix dispatch counters (coop_matmul: ...)");
  };

  run::MatmulOptions mm;
  auto* matmul =
      app.add_subcommand("matmul", "C = gelu?(alpha * op(A) op(B) + beta * C + bias); A, B: (M,K)/(B,M,K)");
  matmul->add_option("--a", mm.a, "A (.npy, float32 or float16)")->required()->check(CLI::ExistingFile);
  matmul->add_option("--b", mm.b, "B (.npy, same dtype as A)")->required()->check(CLI::ExistingFile);
  matmul->add_option("--c", mm.c, "C added with --beta (.npy)")->check(CLI::ExistingFile);
  matmul->add_option("--alpha", mm.alpha, "Scale of the product")->check(cli::Finite)->capture_default_str();
  matmul->add_option("--beta", mm.beta, "Scale of C")->check(cli::Finite)->capture_default_str();
  matmul->add_option("--bias", mm.bias, "Bias added to every row (.npy, shape (N,))")
      ->check(CLI::ExistingFile);
  matmul->add_flag("--transpose-a", mm.transposeA, "A is stored K x M");
  matmul->add_flag("--transpose-b", mm.transposeB, "B is stored N x K");
  matmul->add_flag("--gelu", mm.gelu, "Apply GELU (tanh form) last");
  matmul->add_option("--kernel", mm.kernel, "auto | tiled | coop")
      ->check(CLI::IsMember({"auto", "tiled", "coop"}));
  matmul->add_option("--out-dtype", mm.outDtype, "f32 (default) | f16 (needs f16 inputs)")
      ->check(CLI::IsMember({"f32", "f16"}));
  common(matmul);

  run::RowOptions rows;
  auto* softmax = app.add_subcommand("softmax", "softmax along the last axis");
  softmax->add_option("--x", rows.x, "Input (.npy, float32)")->required()->check(CLI::ExistingFile);
  softmax->add_option("--scale", rows.scale, "Multiply x first")->check(cli::Finite)->capture_default_str();
  softmax->add_flag("--causal", rows.causal, "Causal mask over the last two axes (queries, keys)");
  common(softmax);
  auto* layernorm = app.add_subcommand("layernorm", "LayerNorm along the last axis");
  layernorm->add_option("--x", rows.x, "Input (.npy, float32)")->required()->check(CLI::ExistingFile);
  layernorm->add_option("--gamma", rows.gamma, "Scale (.npy, shape (C,); default ones)")
      ->check(CLI::ExistingFile);
  layernorm->add_option("--beta", rows.beta, "Shift (.npy, shape (C,); default zeros)")
      ->check(CLI::ExistingFile);
  layernorm->add_option("--eps", rows.eps, "Epsilon (> 0)")
      ->check(cli::Finite & CLI::PositiveNumber)
      ->capture_default_str();
  common(layernorm);
  auto* gelu = app.add_subcommand("gelu", "GELU (tanh form), elementwise");
  gelu->add_option("--x", rows.x, "Input (.npy, float32)")->required()->check(CLI::ExistingFile);
  common(gelu);

  run::AttentionOptions at;
  auto* attention = app.add_subcommand(
      "attention", "fused attention softmax(scale q k^T [causal]) v; q (B,H,Tq,D), k and v (B,Hkv,Tk,D)");
  attention->add_option("--q", at.q, "Queries (.npy, float32)")->required()->check(CLI::ExistingFile);
  attention->add_option("--k", at.k, "Keys (.npy, float32)")->required()->check(CLI::ExistingFile);
  attention->add_option("--v", at.v, "Values (.npy, float32)")->required()->check(CLI::ExistingFile);
  attention->add_flag("--causal", at.causal, "Query i sees keys j <= i + Tk - Tq");
  attention->add_option("--scale", at.scale, "Score scale (default 1/sqrt(D))")->check(cli::Finite);
  attention
      ->add_option(
          "--kernel", at.kernel,
          "fallback (f32), coop (cooperative matrices, q/k/v rounded to f16; an error where the device "
          "has none) or auto (coop where it can run)")
      ->check(CLI::IsMember({"fallback", "coop", "auto"}))
      ->capture_default_str();
  common(attention);

  run::CrossEntropyOptions ce;
  auto* crossEntropy =
      app.add_subcommand("cross-entropy", "per-row loss of logits (..., V) against int32 targets");
  crossEntropy->add_option("--logits", ce.logits, "Logits (.npy, float32)")
      ->required()
      ->check(CLI::ExistingFile);
  crossEntropy->add_option("--targets", ce.targets, "Targets (.npy, int32; outside [0,V) = ignored)")
      ->required()
      ->check(CLI::ExistingFile);
  crossEntropy->add_option("--grad-out", gradOut, "Also write dlogits here");
  crossEntropy->add_option("--grad-scale", ce.gradScale, "Gradient scale (default 1/rows)")
      ->check(cli::Finite);
  common(crossEntropy);

  helios::cli::refuseEmptyValues(app); // "" is no path, size or name
  CLI11_PARSE(app, argc, argv);
  try {
    // Refused before any work: a directory, device or FIFO is never replaced (a symlink is written through).
    io::resolveOutputPath(out);
    if (!gradOut.empty()) io::resolveOutputPath(gradOut);
    if (!tuningPath.empty()) ops::setTuningFile(tuningPath);
    auto ctx = vk::Context::create({.device = device});
    std::map<std::string, io::NpyArray> results;
    if (matmul->parsed())
      results["out"] = run::runMatmul(*ctx, mm);
    else if (softmax->parsed())
      results["out"] = run::runSoftmax(*ctx, rows);
    else if (layernorm->parsed())
      results["out"] = run::runLayerNorm(*ctx, rows);
    else if (gelu->parsed())
      results["out"] = run::runGelu(*ctx, rows);
    else if (attention->parsed())
      results["out"] = run::runAttention(*ctx, at);
    else {
      ce.wantGrad = !gradOut.empty();
      auto r = run::runCrossEntropy(*ctx, ce);
      results["out"] = std::move(r["loss"]);
      if (ce.wantGrad) results["grad"] = std::move(r["grad"]);
    }
    io::writeNpy(out, results["out"]);
    if (results.count("grad")) io::writeNpy(gradOut, results["grad"]);
    std::cout << "wrote " << out << " " << results["out"].shapeString() << " "
              << io::npyDTypeName(results["out"].dtype) << (gradOut.empty() ? "" : " and " + gradOut) << "\n";
    if (stats) std::cout << ops::coopStatsLine() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "helios-run: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
