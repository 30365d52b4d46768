// helios-train: train a small GPT (or the bigram baseline) on a text file with Helios, and sample from it.
//   helios-train --preset tiny --steps 300 --out runs/tiny
//   helios-train --resume runs/tiny --steps 600
//   helios-train sample --resume runs/tiny --prompt "And God said" --tokens 200
//   helios-train export --format hf --run runs/tiny --out hf/tiny --dtype f16
//   helios-train --init-from hf/tiny --steps 100 --out runs/finetune     (GPT-2, Llama, Qwen2, Mistral)
//   helios-train logits --init-from hf/tiny --tokens ids.npy --out logits.npy
//   helios-train tokenizer --data texts/ --vocab 8192 --out tok.model
//   helios-train prepare --data texts/ --tokenizer tok.model --out shards/
//   helios-train tokenize --tokenizer hf/Qwen2.5-0.5B --text "Hello"   (ids; --jsonl, --decode, --info)
//   helios-train --data-dir shards/ --steps 1000 --out runs/shards
//   mpirun -np 2 helios-train --preset tiny --batch 16   (data parallel: 8 rows per rank, rank 0 reports)
#include "data_commands.hpp"
#include "engine/dist/communicator.hpp"
#include "engine/dist/shares.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/input_file.hpp"
#include "engine/ops/coop_stats.hpp"
#include "engine/ops/device_tuning.hpp"
#include "engine/train/checkpoint.hpp"
#include "engine/train/checkpoint_dir.hpp"
#include "engine/train/checkpoint_pin.hpp"
#include "engine/train/config.hpp"
#include "engine/train/data.hpp"
#include "engine/train/hf/import.hpp"
#include "engine/train/memory_budget.hpp"
#include "engine/train/model_config.hpp"
#include "engine/train/peft/import.hpp"
#include "engine/train/run_dir.hpp"
#include "engine/train/sampler.hpp"
#include "engine/train/token_shard.hpp"
#include "engine/train/trainer.hpp"
#include "engine/tuning/values.hpp"
#include "engine/vk/device_select.hpp"
#include "engine/vk/error.hpp"
#include "export.hpp"
#include "logits_command.hpp"
#include "lora_flags.hpp"
#include "memory_account.hpp"
#include "memory_cli.hpp"
#include "progress.hpp"
#include "rank_options.hpp"
#include "sample_command.hpp"
#include "startup_clock.hpp"
#include "tokenize_command.hpp"
#include "tools/cli_checks.hpp"
#include "tools/helios_tune/tune.hpp"
#include "train_data.hpp"
#include "train_flags.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <unistd.h>

namespace {

using namespace helios;
namespace fs = std::filesystem;

void printProfile(const graph::GraphExecutor& graph) {
  const auto prof = graph.profile();
  double total = 0;
  for (const auto& p : prof)
    total += p.totalUs;
  std::printf("\nper-kernel GPU time (timestamps after every dispatch):\n");
  std::printf("  %-48s %8s %12s %10s %6s\n", "kernel", "calls", "total ms", "avg us", "%");
  for (const auto& p : prof)
    std::printf("  %-48s %8llu %12.2f %10.1f %5.1f%%\n", p.name.c_str(),
                static_cast<unsigned long long>(p.calls), p.totalUs * 1e-3,
                p.totalUs / double(std::max<uint64_t>(p.calls, 1)),
                total > 0 ? 100.0 * p.totalUs / total : 0.0);
}

// --tune: the model's shapes searched on the device where its record has no tuned shapes yet; the record
// written is then the one the run uses (tune::tuneTargets reloads it).
void tuneBeforeTraining(vk::Context& ctx, const train::TrainConfig& cfg, uint32_t vocab, double budget) {
  const tuning::Tuning& record = ops::deviceTuning(ctx.device());
  if (!record.gemm.shapes.value.empty() || !record.attention.shapes.value.empty()) {
    std::printf("helios-train: --tune: the device's tuning record has tuned shapes (%s); using it\n",
                tuning::sourceName(record.gemm.shapes.source));
    return;
  }
  train::TrainConfig model = cfg;
  if (!model.gpt.vocab) model.gpt.vocab = vocab;
  tune::TuneOptions o;
  o.budgetSeconds = budget;
  o.progress = &std::cerr;
  const tune::TuneReport r = tune::tuneTargets(ctx, tune::trainingTargets(model), o);
  std::printf("helios-train: --tune: wrote %s\n", r.file.string().c_str());
}

// One line on the record the run uses: how many of this model's GEMM shapes and attention passes have a
// tuned choice, and where the choices came from (the device's file or --tuning), or that none do.
std::string tuningLine(vk::Context& ctx, const train::TrainConfig& cfg, uint32_t vocab) {
  const tuning::Tuning& record = ops::deviceTuning(ctx.device());
  train::TrainConfig model = cfg;
  if (!model.gpt.vocab) model.gpt.vocab = vocab;
  const tune::Targets targets = tune::trainingTargets(model);
  size_t gemms = 0, passes = 0;
  for (const tuning::GemmShape& s : targets.gemms)
    gemms += tuning::findGemm(record, s) ? 1 : 0;
  for (const tune::AttentionTarget& t : targets.attention)
    for (const auto pass : {tuning::AttentionPassId::Forward, tuning::AttentionPassId::QueryGrad,
                            tuning::AttentionPassId::KeyValueGrad})
      passes += tuning::findAttention(record, pass, t.headDim, t.causal) ? 1 : 0;
  if (!gemms && !passes)
    return "  tuning: defaults (no tuned choice for this model's shapes; helios-train --tune)";
  return fmt::format("  tuning: tuned record in use ({}): {} of {} GEMM shapes, {} of {} attention passes",
                     tuning::sourceName(gemms ? record.gemm.shapes.source : record.attention.shapes.source),
                     gemms, targets.gemms.size(), passes, 3 * targets.attention.size());
}

// Under mpirun: this rank's device and the ranks' shares, one line each, then how the gradients travel.
void printDataParallel(const train::Trainer& trainer, const train_cli::Flags& f, dist::Communicator& comm,
                       uint32_t batch) {
  std::printf(
      "  data parallel: %d ranks, shares %s of each micro-batch of %u (%s; MPI; gradients summed in %g "
      "MiB buckets through %s, %s the backward, parameter hashes compared every %u steps)\n",
      comm.size(), dist::describeRows(trainer.rowsPerRank()).c_str(), batch,
      dist::shareModeName(trainer.shareMode()), f.bucketMb,
      trainer.parallel() && trainer.parallel()->zeroCopy() ? "shared memory the GPUs read and write"
      : f.distExchange == "shared" && comm.localSize() == comm.size() ? "shared memory"
                                                                      : "messages",
      f.overlap == "on" ? "overlapped with" : "after", f.checkEvery);
  for (size_t r = 0; r < trainer.rankDevices().size(); ++r)
    std::printf("    rank %zu: %s, %u sequences\n", r, trainer.rankDevices()[r].c_str(),
                trainer.rowsPerRank()[r]);
}

// The ranks' last measured window: device, rows, tokens/s and exchange wait each.
void printRanks(const std::vector<train::StepRecord>& recs) {
  for (auto it = recs.rbegin(); it != recs.rend(); ++it) {
    if (it->ranks.empty()) continue;
    std::printf("ranks (measured up to step %llu):", static_cast<unsigned long long>(it->step));
    for (const train::RankStats& r : it->ranks)
      std::printf(" | %d %s: %u sequences, %s tok/s, %.1f ms busy, %.1f ms exchange wait", r.rank,
                  r.device.c_str(), r.rows, train_cli::formatRate(r.tokPerSec).c_str(), r.busyMs, r.waitMs);
    std::printf("\n");
    return;
  }
}

int runTrain(const CLI::App& app, const train_cli::Flags& f, dist::Communicator& comm) {
  train_cli::StartupClock startup;
  // Data parallel: the shares and this rank's device and delay, refused before any work.
  const dist::ShareSpec shares = f.share.empty() ? dist::ShareSpec{} : dist::parseShareSpec(f.share);
  const std::string devices = vk::deviceSelector(f.device);
  const std::string device = devices.empty()
                                 ? devices
                                 : train_cli::rankEntry(devices, comm.rank(), comm.size(),
                                                        f.device.empty() ? "HELIOS_DEVICE" : "--device");
  const double delayMsPerRow = train_cli::rankDelay(f.distDelay, comm.rank(), comm.size());
  train::TrainConfig cfg;
  train::applyPreset(cfg, f.preset);
  nlohmann::json resumeState;
  // The step read is pinned until it is loaded: a trainer pruning that run cannot remove it meanwhile.
  std::optional<train::PinnedCheckpoint> pin;
  if (!f.resume.empty()) pin = train::pinCheckpoint(f.resume);
  const fs::path checkpoint = pin ? pin->dir() : fs::path();
  if (!f.resume.empty()) {
    resumeState = train::checkpointTrainerState(checkpoint);
    train::fromJson(resumeState.at("config"), cfg);
  }
  if (!f.config.empty()) {
    io::requireRegularFile(f.config, "config file");
    std::ifstream in(f.config);
    if (!in) throw std::runtime_error(fmt::format("{}: cannot open the config file", f.config));
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded()) throw std::runtime_error(fmt::format("{}: not valid JSON", f.config));
    train::fromJson(j, cfg);
  }
  train_cli::applyFlags(app, f, cfg);
  std::optional<train::hf::Import> imported;
  if (!f.initFrom.empty()) {
    if (!f.resume.empty()) throw std::invalid_argument("--init-from and --resume exclude each other");
    imported = train::hf::openImport(f.initFrom);
    train_cli::applyImportedArchitecture(app, f, imported->config, cfg);
  }
  const std::optional<train::peft::Adapter> adapter = train_cli::openInitAdapter(f);
  train_cli::applyLoraFlags(app, f.lora, cfg, adapter ? &*adapter : nullptr);
  cfg.validate();
  const nlohmann::json loraBase =
      cfg.gpt.lora.enabled()
          ? train_cli::checkedLoraBase(f, checkpoint, cfg.seed, adapter ? &*adapter : nullptr)
          : nlohmann::json();
  dist::initialRows(shares, shares.mode.value_or(dist::ShareMode::Even), uint32_t(comm.size()), cfg.batch);
  // The device: each rank its own (a selector several devices match is shared out by the local rank).
  std::unique_ptr<vk::Context> ctx;
  try {
    ctx = vk::Context::create({.device = device,
                               .slot = static_cast<uint32_t>(comm.localRank()),
                               .planBindingLimit = train_cli::planBindingLimit(f)});
  } catch (const vk::NoDevice& e) {
    if (devices.find(',') == std::string::npos) throw;
    throw vk::NoDevice(fmt::format("this rank's entry '{}' of {}: {}", device, devices, e.what()));
  }
  startup.lap("device");
  const fs::path resumedRun = train::runOfCheckpoint(checkpoint); // RUN of RUN/checkpoints/step-N
  const fs::path out = !f.out.empty()        ? fs::path(f.out)
                       : !resumedRun.empty() ? resumedRun
                       : !f.resume.empty()   ? fs::path(f.resume)
                                             : fs::path("runs") / f.preset;

  // Data and tokenizer; then the run directory, claimed (rank 0) before the device and step 1.
  std::optional<train::RunDirectory> owner;
  const auto claimOut = [&] {
    if (comm.rank() != 0) return;
    const auto start = f.overwrite         ? train::RunStart::Overwrite
                       : !f.resume.empty() ? train::RunStart::Resume
                                           : train::RunStart::Fresh;
    owner = train::RunDirectory::claim(out, start, resumedRun);
    if (!owner->movedAside().empty())
      std::printf("helios-train: --overwrite: moved what %s held to %s\n", out.string().c_str(),
                  owner->movedAside().string().c_str());
  };
  // (The text path keeps the tokenizer of a run it resumes: a shard directory and chat data name theirs.)
  train_cli::TokenizerSource tokenizerSource;
  if (!resumeState.is_null() && cfg.dataDir.empty()) tokenizerSource.checkpoint = checkpoint;
  tokenizerSource.imported = imported ? &*imported : nullptr;
  tokenizerSource.tokenizerFlag = app.count("--tokenizer") > 0;
  tokenizerSource.initFrom = f.initFrom;
  train_cli::TrainingData data = train_cli::openTrainingData(cfg, tokenizerSource);
  claimOut();
  train::BatchSource& loader = *data.loader;
  const train::DataInfo& info = data.info;
  const std::string& dataPath = data.path;
  const train::Tokenizer& tok = *data.tokenizer;
  if (cfg.gpt.pack) {
    if (!tok.endOfText())
      throw std::invalid_argument(std::string("--pack: the ") + tok.kindName() +
                                  " tokenizer has no end-of-text token to split documents at (prepare token "
                                  "shards with a SentencePiece, GPT-2 or Hugging Face tokenizer)");
    cfg.gpt.endOfText = static_cast<uint32_t>(*tok.endOfText());
  }
  startup.lap("data");

  // The model. With several ranks, rank 0 writes.
  // The presets' vocabularies are for bytes: a larger tokenizer's vocabulary replaces them unless given.
  if (cfg.model == "gpt" && cfg.gpt.vocab < tok.vocab() && app.get_option("--vocab")->count() == 0 &&
      !imported)
    cfg.gpt.vocab = 0;
  if (f.tune) tuneBeforeTraining(*ctx, cfg, tok.vocab(), f.tuneBudget);
  nlohmann::json arch = train::modelConfigJson(cfg, tok);
  if (cfg.gpt.lora.enabled()) arch["lora_base"] = loraBase;
  train::requireTrainingHostMemory(*ctx, cfg, arch);   // refused with the numbers, not by the OOM killer
  auto model = train::makeModel(*ctx, arch, cfg.seed); // a LoRA model loads (and checks) its base itself
  if (imported && !cfg.gpt.lora.enabled()) train::hf::loadImport(*ctx, *model, *imported);
  if (adapter) train_cli::loadInitAdapter(*ctx, *model, *adapter);
  startup.lap("model");
  if (f.planOnly) {
    train_cli::printStepMemory(*ctx, *model, cfg);
    return 0;
  }
  if (!f.maxMemory.empty()) train_cli::fitMemory(*ctx, *model, cfg, f.maxMemory);
  train::Parallel parallel{&comm, f.checkEvery, static_cast<uint64_t>(f.bucketMb * (1 << 20)),
                           f.overlap == "on", f.overlapTrace};
  parallel.shares = shares;
  parallel.balance.exclude = f.slowRanks == "exclude";
  parallel.delayMsPerRow = delayMsPerRow;
  train::Trainer trainer(*ctx, *model, cfg, loader, info, comm.rank() == 0 ? out : fs::path(), parallel);
  if (!f.resume.empty()) trainer.resume(checkpoint);
  pin.reset(); // loaded: this run's own saves may prune it now
  startup.lap("trainer");
  if (comm.size() > 1)
    std::fprintf(stderr, "helios-train: %s, pid %ld, on %s\n", comm.describe().c_str(),
                 static_cast<long>(::getpid()), ctx->device().name().c_str());
  if (comm.rank() != 0) { // the other ranks train in step with rank 0, which reports and writes
    trainer.train();
    return 0;
  }

  std::printf("helios-train: %s on %s\n", model->describe().c_str(), ctx->device().name().c_str());
  if (cfg.model == "gpt") std::printf("%s\n", tuningLine(*ctx, cfg, tok.vocab()).c_str());
  std::printf("  %llu parameters | %s tokenizer, vocab %u | data %s: %llu train + %llu val tokens\n",
              static_cast<unsigned long long>(model->parameterCount()), tok.kindName(), tok.vocab(),
              dataPath.c_str(), static_cast<unsigned long long>(loader.trainTokens()),
              static_cast<unsigned long long>(loader.valTokens()));
  for (const std::string& line : data.log)
    std::printf("%s\n", line.c_str());
  std::printf("  batch %u x seq %u x accum %u = %llu tokens/step | lr %.2e (warmup %u, cosine to %.0f%%) | "
              "precision %s%s | steps %llu%s | out %s\n",
              cfg.batch, cfg.seqLen, cfg.gradAccum, static_cast<unsigned long long>(cfg.tokensPerStep()),
              cfg.lr, cfg.warmup, 100.0 * cfg.minLrFrac, train::precisionName(cfg.gpt.precision),
              cfg.dynamicLossScale() ? fmt::format(" (loss scale {:g})", trainer.lossScale()).c_str() : "",
              static_cast<unsigned long long>(cfg.steps),
              trainer.stepsDone() ? fmt::format(" (resuming after step {})", trainer.stepsDone()).c_str()
                                  : "",
              out.string().c_str());
  const auto& pre = trainer.precompiled();
  std::printf("  start-up %s (%u kernels compiled on %u threads in %.2f s)\n", startup.summary().c_str(),
              pre.pipelines, pre.threads, pre.wallMs / 1000);
  if (comm.size() > 1) printDataParallel(trainer, f, comm, cfg.batch);
  std::fflush(stdout);

  train_cli::Progress progress(trainer, cfg.steps, cfg.logEvery);
  train::TrainHooks hooks;
  hooks.onStep = [&](const train::StepRecord& r) { progress.onStep(r); };
  hooks.onEval = [&](uint64_t s, float v) { progress.onEval(s, v); };
  hooks.onCheckpoint = [&](uint64_t s, const fs::path& d) { progress.onCheckpoint(s, d.string()); };
  hooks.onNote = [&](const std::string& line) { progress.onNote(line); };
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t firstStep = trainer.stepsDone();
  trainer.train(hooks);
  progress.finish();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Summary.
  const auto& recs = trainer.records();
  std::printf("\ndone: %llu steps in %s", static_cast<unsigned long long>(trainer.stepsDone() - firstStep),
              train_cli::formatDuration(secs).c_str());
  if (!recs.empty()) {
    const auto& last = recs.back();
    std::optional<float> val;
    for (auto it = recs.rbegin(); it != recs.rend() && !val; ++it)
      val = it->valLoss;
    std::printf(" | %s tok/s (last 20 steps) | final loss %.4f",
                train_cli::formatRate(progress.windowTokPerSec()).c_str(), last.loss);
    if (val) std::printf(", val %.4f", *val);
    std::printf(" | skipped steps %llu\n", static_cast<unsigned long long>(last.skippedTotal));
    const train::StepRecord* typical = &last; // the last step that was not synchronised for timing
    for (auto it = recs.rbegin(); it != recs.rend(); ++it)
      if (!it->timed) {
        typical = &*it;
        break;
      }
    std::printf(
        "per step (step %llu): %u submits, %u dispatches, %u barriers, %u replayed segments, %llu bytes "
        "allocated\n",
        static_cast<unsigned long long>(typical->step), typical->stats.submits, typical->stats.dispatches,
        typical->stats.barriers, typical->stats.replayedSegments,
        static_cast<unsigned long long>(typical->stats.bytesAllocated));
  } else {
    std::printf("\n");
  }
  printRanks(recs);
  const auto& ph = trainer.phases();
  if (ph.measuredAt && ph.split())
    std::printf("phases (synchronised step %llu): forward %.2f ms, backward %.2f ms, optimizer %.2f ms\n",
                static_cast<unsigned long long>(ph.measuredAt), ph.forwardMs, ph.backwardMs, ph.optimizerMs);
  else if (ph.measuredAt)
    std::printf("phases (synchronised step %llu): forward and backward %.2f ms, optimizer %.2f ms\n",
                static_cast<unsigned long long>(ph.measuredAt), ph.forwardBackwardMs, ph.optimizerMs);
  const auto& mem = ctx->allocator().stats();
  std::printf("memory: peak %s in use, %s reserved of device memory (%s in use at the peak of all %u "
              "blocks, host-visible staging included; step arena peak %s)\n",
              train_cli::formatBytes(mem.devicePeakBytesInUse).c_str(),
              train_cli::formatBytes(mem.deviceBytesReserved).c_str(),
              train_cli::formatBytes(mem.peakBytesInUse).c_str(), mem.blocks,
              train_cli::formatBytes(trainer.arena().peakBytes()).c_str());
  if (const auto& plan = trainer.stepPlan(); plan.requests)
    std::printf("memory plan: %llu temporaries over %llu dispatches in %u bins of %s (%s without reuse, %s "
                "live at most; %u barriers between dispatches, %u without reuse)\n",
                static_cast<unsigned long long>(plan.requests),
                static_cast<unsigned long long>(plan.dispatches), plan.bins,
                train_cli::formatBytes(plan.plannedBytes).c_str(),
                train_cli::formatBytes(plan.unplannedBytes).c_str(),
                train_cli::formatBytes(plan.peakLiveBytes).c_str(), plan.plannedBarriers, plan.barriers);
  std::printf("%s\n", ops::coopStatsLine().c_str());
  const auto& pipes = ctx->pipelines().stats();
  std::printf("pipelines: %llu created (%.2f s in the driver's compiler), %llu reused\n",
              static_cast<unsigned long long>(pipes.created), pipes.createMs / 1000,
              static_cast<unsigned long long>(pipes.hits));
  std::printf(
      "wrote %s/{model.safetensors, optimizer.safetensors, config.json}, %s/{metrics.jsonl, loss.svg}\n",
      trainer.lastCheckpoint().string().c_str(), out.string().c_str());
  if (cfg.profile) printProfile(trainer.graph());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "helios-train: train a GPT on a text file with Helios (Vulkan compute), and sample from it.\n"
      "Without --data it reads the default corpus (the King James Bible from the Debian package\n"
      "bible-kjv: share/helios/corpus/kjv.txt of an installed Helios, or what third_party/bootstrap.sh\n"
      "wrote; HELIOS_CORPUS overrides it).\n"
      "Precedence: preset < checkpoint (--resume) < --config FILE < flags."};
  app.require_subcommand(0, 1);
  train_cli::Flags f;
  train_cli::addTrainOptions(app, f);
  train_cli::SampleFlags sf;
  auto* sample = train_cli::addSampleCommand(app, sf);
  std::string tuningPath;
  app.add_option("--tuning", tuningPath,
                 "Tuning file read after the device's own (docs/TUNING.md); a missing, corrupt or mismatched "
                 "one warns and is left out");

  train_cli::ExportFlags ef;
  auto* exportCmd = train_cli::addExportCommand(app, ef);
  train_cli::LogitsFlags lf;
  auto* logitsCmd = train_cli::addLogitsCommand(app, lf);
  train_cli::DataCommands dc;
  train_cli::addDataCommands(app, dc);
  train_cli::TokenizeFlags tf;
  auto* tokenizeCmd = train_cli::addTokenizeCommand(app, tf);

  // "" is no path, size or name; an empty prompt is a prompt, and an empty text tokenizes to no ids.
  helios::cli::refuseEmptyValues(app, {"--prompt", "--text"});
  CLI11_PARSE(app, argc, argv);
  std::unique_ptr<dist::Communicator> comm;
  // Under mpirun an error on one rank ends the whole job (the others would wait for it until the timeout).
  auto fail = [&](const std::exception& e, int code, const char* lead) {
    const bool ranks = comm && comm->size() > 1;
    std::cerr << lead << "helios-train: " << (ranks ? fmt::format("rank {}: ", comm->rank()) : "") << e.what()
              << "\n";
    if (ranks) {
      std::cerr << std::flush;
      comm->abort(code);
    }
    return code;
  };
  try {
    if (!tuningPath.empty()) ops::setTuningFile(tuningPath);
    if (exportCmd->parsed()) return train_cli::runExport(ef);
    if (logitsCmd->parsed()) return train_cli::runLogits(lf);
    if (dc.tokenizer->parsed()) return train_cli::runTokenizerCommand(dc);
    if (dc.prepare->parsed()) return train_cli::runPrepareCommand(dc);
    if (tokenizeCmd->parsed()) return train_cli::runTokenize(tf);
    if (sample->parsed()) return train_cli::runSample(sf);
    comm = dist::connect({.timeoutS = f.distTimeout, .sharedMemory = f.distExchange == "shared"});
    return runTrain(app, f, *comm);
  } catch (const vk::LoaderMissing& e) {
    return fail(e, 1, "");
  } catch (const vk::NoDevice& e) {
    return fail(e, 1, "");
  } catch (const std::exception& e) {
    return fail(e, 2, "\n");
  }
}
