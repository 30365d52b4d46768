#include "train_flags.hpp"

#include "tools/cli_checks.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace helios::train_cli {

void addTrainOptions(CLI::App& app, Flags& f) {
  app.add_option("--preset", f.preset, std::string("Configuration preset: ") + train::presetNames())
      ->check(CLI::IsMember({"tiny", "char", "gpt2-small"}))
      ->capture_default_str();
  app.add_option("--config", f.config, "JSON file with training-config keys (see config.json of a run)");
  app.add_option("--steps", f.steps, "Optimizer steps in total (a resumed run continues to this step)")
      ->check(cli::PositiveCount);
  app.add_option("--data", f.data, "Training text file (default: the KJV corpus)");
  app.add_option("--data-dir", f.dataDir,
                 "Token shards written by `helios-train prepare` (memory-mapped; their tokenizer is used)");
  app.add_option("--out", f.out, "Output directory (default: runs/<preset>, or the --resume run directory)");
  app.add_option(
      "--resume", f.resume,
      "Continue from a run directory's current checkpoint (RUN/checkpoints/latest), or from a step "
      "directory RUN/checkpoints/step-N");
  app.add_flag(
      "--overwrite", f.overwrite,
      "Start afresh in an --out directory that holds a run: it is moved aside to OUT.replaced-N (never "
      "deleted); without this a fresh run there is refused");
  app.add_option(
      "--init-from", f.initFrom,
      "Start from a Hugging Face model directory to fine-tune: GPT2LMHeadModel, LlamaForCausalLM (Llama 2, "
      "3.x, SmolLM2), Qwen2ForCausalLM or MistralForCausalLM (config.json + model.safetensors or sharded "
      "safetensors with model.safetensors.index.json; F32, F16 or BF16), e.g. one written by helios-train "
      "export; its architecture replaces the preset's and its tokenizer files are used");
  app.add_option(
      "--device", f.device,
      "Device index or name substring (default: $HELIOS_DEVICE, else the best). Under mpirun one for "
      "every rank, or one per rank: --device nvidia,llvmpipe (a name several devices match is shared "
      "out by the ranks' order on the host)");
  app.add_option("--seed", f.seed, "Seed for initialisation and batch sampling")->check(cli::Count);
  app.add_option("--attention", f.attention,
                 "fused (one kernel per direction, scores never in memory; heads read in place from the QKV "
                 "projection where the device allows), split (the same kernels on [B, H, T, D] copies of the "
                 "heads) or unfused (GEMM, softmax, GEMM)")
      ->check(CLI::IsMember({"fused", "split", "unfused"}));
  app.add_option("--precision", f.precision,
                 "f32; mixed (f16 GEMM inputs + dynamic loss scaling); or bf16 (bf16 GEMM inputs and "
                 "activations, f32 master weights and accumulation, no loss scaling)")
      ->check(CLI::IsMember({"f32", "mixed", "bf16"}));
  app.add_option(
         "--param-dtype", f.paramDtype,
         "f32, or bf16 with --precision bf16: the GEMM weights stored in bf16 (saves their f32 copies "
         "and per-step casts; AdamW keeps f32 moments and rounds updates stochastically)")
      ->check(CLI::IsMember({"f32", "bf16"}));
  app.add_option("--model", f.model, "gpt, or bigram (a one-table baseline)")
      ->check(CLI::IsMember({"gpt", "bigram"}));
  app.add_option("--tokenizer", f.tokenizer, "byte (vocab 256) or char (the corpus' characters)")
      ->check(CLI::IsMember({"byte", "char"}));
  app.add_option("--batch", f.batch,
                 "Sequences per micro-batch (under mpirun: of all ranks together, shared out by --share)")
      ->check(cli::PositiveCount);
  app.add_option("--seq-len", f.seqLen, "Tokens per sequence (T)")->check(cli::PositiveCount);
  app.add_option("--context", f.context, "Model context (maximum T; a --seq-len above it needs this too)")
      ->check(cli::Count);
  app.add_option("--grad-accum", f.gradAccum, "Micro-batches per optimizer step")->check(cli::PositiveCount);
  app.add_option("--layers", f.layers, "Transformer blocks")->check(cli::PositiveCount);
  app.add_option("--dim", f.dim, "Model width")->check(cli::PositiveCount);
  app.add_option("--heads", f.heads, "Attention heads")->check(cli::PositiveCount);
  app.add_option("--vocab", f.vocab, "Model vocabulary (0 = the tokenizer's; larger pads)")
      ->check(cli::Count);
  app.add_option("--lr", f.lr, "Peak learning rate")->check(cli::Finite);
  app.add_option("--min-lr-frac", f.minLrFrac, "Cosine decay ends at lr times this")->check(cli::Finite);
  app.add_option("--warmup", f.warmup, "Linear warmup steps")->check(cli::Count);
  app.add_option("--weight-decay", f.weightDecay, "AdamW weight decay (matrices only)")->check(cli::Finite);
  app.add_option("--grad-clip", f.gradClip, "Global gradient-norm clip (0 = off)")->check(cli::Finite);
  app.add_option("--loss-scale", f.lossScale,
                 "Initial loss scale; enables dynamic scaling (default: 65536 when "
                 "mixed)")
      ->check(cli::Finite);
  app.add_option("--eval-every", f.evalEvery, "Validation loss every N steps (0 = never)")->check(cli::Count);
  app.add_option("--eval-batches", f.evalBatches, "Validation batches per evaluation")
      ->check(cli::PositiveCount);
  app.add_option("--checkpoint-every", f.checkpointEvery, "Checkpoint every N steps (always at the end)")
      ->check(cli::Count);
  app.add_option("--keep", f.keep, "Complete checkpoints kept in RUN/checkpoints (default 2, at least 1)")
      ->check(cli::PositiveCount);
  app.add_option("--nonfinite-limit", f.nonFiniteLimit,
                 "Stop with an error after this many non-finite losses in a row (default 3)")
      ->check(cli::PositiveCount);
  app.add_option("--log-every", f.logEvery, "Progress line every N steps when stderr is not a terminal")
      ->check(cli::PositiveCount);
  app.add_option("--time-every", f.timeEvery, "Synchronised, phase-timed step every N steps (0 = never)")
      ->check(cli::Count);
  app.add_option("--sync-every", f.syncEvery, "Debugging: wait for the GPU every N steps")->check(cli::Count);
  app.add_flag(
      "--tune", f.tune,
      "Before step 1, tune this model's GEMM and attention shapes on the device when its tuning record "
      "has none (helios-tune), and train with the result");
  app.add_option("--tune-budget", f.tuneBudget, "Seconds --tune may search")
      ->check(cli::FiniteNonNegative)
      ->capture_default_str();
  app.add_flag("--pack", f.pack,
               "Sequence packing: attention stays inside each document (documents end with the tokenizer's "
               "end-of-text token) and positions restart per document");
  app.add_flag("--profile", f.profile, "GPU timestamps per dispatch; prints a per-kernel table at the end");
  app.add_option(
         "--check-every", f.checkEvery,
         "Under mpirun: compare a hash of the parameters across ranks every N steps (0 = at the start "
         "and the end only)")
      ->check(cli::Count)
      ->capture_default_str();
  app.add_option("--dist-timeout", f.distTimeout,
                 "Under mpirun: seconds a rank waits for the others before ending the job")
      ->check(cli::Finite)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--dist-exchange", f.distExchange,
                 "Under mpirun, ranks on one host: sum gradients through shared memory or MPI messages "
                 "(the same bits either way)")
      ->check(CLI::IsMember({"shared", "messages"}))
      ->capture_default_str();
  app.add_option("--bucket-mb", f.bucketMb, "Under mpirun: MiB of gradients averaged per MPI exchange")
      ->check(cli::Finite)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option(
         "--overlap", f.overlap,
         "Under mpirun: on (default): each bucket is exchanged as soon as the backward has written it, "
         "while the GPU runs the rest; off: after the whole backward (the same results)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option(
      "--share", f.share,
      "Under mpirun: each rank's share of every micro-batch: auto (measured from each rank's step "
      "time and re-balanced when it drifts; the default where the ranks' devices differ), even (the "
      "default where they are alike), or one positive weight per rank, e.g. 7,1");
  app.add_option("--slow-ranks", f.slowRanks,
                 "Under mpirun, --share auto: exclude (default) leaves out a rank whose device costs more in "
                 "exchange than it adds (with a warning); keep trains on it anyway")
      ->check(CLI::IsMember({"exclude", "keep"}))
      ->capture_default_str();
  app.add_option(
      "--dist-delay", f.distDelay,
      "Testing aid, under mpirun: ms each rank sleeps per sequence of its share every step (one for "
      "every rank or one per rank), imitating a slower device");
  app.add_option("--overlap-trace", f.overlapTrace,
                 "Under mpirun: rank 0 writes, per step, when each bucket was ready and exchanged and when "
                 "the backward ended (JSON lines; a measurement aid)");
  app.add_option("--memory-plan", f.memoryPlan,
                 "on (default): step temporaries reuse memory as soon as they are dead, by a plan computed "
                 "once from the recorded step; off: nothing is reused within a step")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--checkpoint-activations", f.checkpointActivations,
                 "none (default); attention: each block's attention half is recomputed in the backward; "
                 "block: whole blocks are")
      ->check(CLI::IsMember({"none", "attention", "block"}));
  app.add_option("--max-memory", f.maxMemory,
                 "Memory budget (e.g. 22GiB): the batch is split into gradient-accumulation micro-batches "
                 "whose planned step fits it (refused when a micro-batch of 1 does not)");
  addLoraOptions(app, f.lora);
  app.add_option(
      "--plan-binding-limit", f.planBindingLimit,
      "With --plan-only: plan as for a device whose kernel bindings (maxStorageBufferRange) span this "
      "much, e.g. 2GiB for an iGPU or 4GiB for NVIDIA, where this device's limit is smaller (lavapipe: "
      "128 MiB)");
  app.add_flag("--plan-only", f.planOnly,
               "Print what a step asks of memory (dry runs of the training step and the evaluation: the "
               "plan, what is live at its peak) and exit without training");
  addChatOptions(app, f);
}

void addChatOptions(CLI::App& app, Flags& f) {
  app.add_option("--chat-data", f.chatData,
                 "Chat or instruction data: JSONL of {\"messages\": [{\"role\", \"content\"}, ...]} or "
                 "{\"prompt\", \"completion\"}, rendered with the chat template and packed into sequences; "
                 "the loss counts assistant tokens only (docs/DATA.md)");
  app.add_option("--eval-data", f.evalData,
                 "Chat data: JSONL examples to evaluate on (else --eval-fraction)");
  app.add_option("--eval-fraction", f.evalFraction,
                 "Chat data without --eval-data: the fraction of examples held out for evaluation (default "
                 "0.1; 0 = none)")
      ->check(cli::FiniteNonNegative);
  app.add_option("--chat-template", f.chatTemplate,
                 "chatml or llama3 (default: the tokenizer's chat_template, when it is one of these)")
      ->check(CLI::IsMember({"chatml", "llama3"}));
  app.add_flag("--skip-bad-lines", f.skipBadLines,
               "Chat data: leave out lines that are no usable example (malformed JSON, unknown roles, empty "
               "assistant turns, ...) and count them, instead of stopping at the first");
}

void applyFlags(const CLI::App& app, const Flags& f, train::TrainConfig& c) {
  auto given = [&](const char* name) { return app.get_option(name)->count() > 0; };
  if (given("--model")) c.model = f.model;
  if (given("--tokenizer")) c.tokenizer = f.tokenizer;
  if (given("--data") && given("--data-dir"))
    throw std::invalid_argument("--data and --data-dir both given: train on a text file or on token shards");
  if (given("--tokenizer") && given("--data-dir"))
    throw std::invalid_argument("--tokenizer with --data-dir: the shards' own tokenizer is used "
                                "(helios-train prepare --tokenizer chose it)");
  if (given("--data")) {
    c.data = f.data;
    c.dataDir.clear();
  }
  if (given("--data-dir")) c.dataDir = f.dataDir;
  if (given("--steps")) c.steps = f.steps;
  if (given("--seed")) c.seed = f.seed;
  if (given("--batch")) c.batch = f.batch;
  if (given("--seq-len")) c.seqLen = f.seqLen; // above the context only with --context (validate() says so)
  if (given("--context")) c.gpt.context = f.context;
  if (given("--grad-accum")) c.gradAccum = f.gradAccum;
  if (given("--layers")) c.gpt.layers = f.layers;
  if (given("--dim")) c.gpt.dim = f.dim;
  if (given("--heads")) c.gpt.heads = f.heads;
  if (given("--vocab")) c.gpt.vocab = f.vocab;
  if (given("--lr")) c.lr = f.lr;
  if (given("--min-lr-frac")) c.minLrFrac = f.minLrFrac;
  if (given("--warmup")) c.warmup = f.warmup;
  if (given("--weight-decay")) c.weightDecay = f.weightDecay;
  if (given("--grad-clip")) c.gradClip = f.gradClip;
  if (given("--loss-scale")) c.lossScale = f.lossScale;
  if (given("--eval-every")) c.evalEvery = f.evalEvery;
  if (given("--eval-batches")) c.evalBatches = f.evalBatches;
  if (given("--checkpoint-every")) c.checkpointEvery = f.checkpointEvery;
  if (given("--keep")) c.keepCheckpoints = f.keep;
  if (given("--nonfinite-limit")) c.nonFiniteLimit = f.nonFiniteLimit;
  if (given("--log-every")) c.logEvery = f.logEvery;
  if (given("--sync-every")) c.syncEvery = f.syncEvery;
  if (given("--time-every")) c.timeEvery = f.timeEvery;
  if (given("--profile")) c.profile = f.profile;
  if (given("--attention")) {
    c.gpt.fusedAttention = f.attention != "unfused";
    c.gpt.packedAttention = f.attention == "fused";
  }
  if (given("--pack")) c.gpt.pack = f.pack;
  if (given("--memory-plan")) c.memoryPlan = f.memoryPlan == "on";
  if (given("--checkpoint-activations")) {
    c.gpt.checkpointActivations = f.checkpointActivations == "block";
    c.gpt.checkpointAttention = f.checkpointActivations == "attention";
  }
  if (given("--precision")) c.gpt.precision = train::parsePrecision(f.precision);
  if (given("--param-dtype")) c.gpt.paramDtype = train::parseParamDtype(f.paramDtype);
  if (c.gpt.paramDtype == codegen::Elem::BF16 && c.gpt.precision != model::Precision::BF16)
    throw std::invalid_argument("--param-dtype bf16 needs --precision bf16 (the GEMMs read the stored "
                                "weights as their bf16 operands)");
  applyChatFlags(app, f, c);
}

void applyChatFlags(const CLI::App& app, const Flags& f, train::TrainConfig& c) {
  auto given = [&](const char* name) { return app.get_option(name)->count() > 0; };
  if (given("--chat-data") && (given("--data") || given("--data-dir")))
    throw std::invalid_argument("--chat-data with --data or --data-dir: train on chat data or on text");
  if (given("--chat-data")) {
    c.chatData = f.chatData;
    c.data.clear();
    c.dataDir.clear();
  }
  if (given("--eval-data")) c.chatEvalData = f.evalData;
  if (given("--eval-fraction")) c.evalFraction = f.evalFraction;
  if (given("--chat-template")) c.chatTemplate = f.chatTemplate;
  if (given("--skip-bad-lines")) c.skipBadLines = f.skipBadLines;
  if (given("--eval-fraction") && !c.chat()) // (the other chat keys are checked with the config)
    throw std::invalid_argument(
        "--eval-fraction is for chat data (--chat-data); text and shards have their own validation split");
}

void applyImportedArchitecture(const CLI::App& app, const Flags& f, const model::GptConfig& hf,
                               train::TrainConfig& c) {
  if (c.model != "gpt")
    throw std::invalid_argument("--init-from imports a GPT; --model bigram cannot use it");
  const auto check = [&](const char* flag, uint32_t given, uint32_t imported) {
    if (app.get_option(flag)->count() > 0 && given != imported)
      throw std::invalid_argument(fmt::format("{} {} contradicts the imported model's {} (--init-from {})",
                                              flag, given, imported, f.initFrom));
  };
  check("--layers", f.layers, hf.layers);
  check("--dim", f.dim, hf.dim);
  check("--heads", f.heads, hf.heads);
  check("--vocab", f.vocab, hf.vocab);
  check("--context", f.context, hf.context);
  c.gpt = model::withArchitectureOf(c.gpt, hf);
}

} // namespace helios::train_cli
