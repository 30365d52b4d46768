#include "export.hpp"

#include "engine/train/checkpoint.hpp"
#include "engine/train/checkpoint_pin.hpp"
#include "engine/train/config.hpp"
#include "engine/train/hf/export.hpp"
#include "engine/train/hf_tokenizer.hpp"
#include "engine/train/memory_budget.hpp"
#include "engine/train/peft/export.hpp"
#include "engine/train/stored_tokenizer.hpp"

#include "engine/graph/graph_executor.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/npy.hpp"
#include "engine/io/staged_directory.hpp"
#include "engine/train/data.hpp"
#include "tools/cli_checks.hpp"

#include <cstdio>
#include <cstring>
#include <fmt/ranges.h>

namespace helios::train_cli {

CLI::App* addExportCommand(CLI::App& app, ExportFlags& f) {
  auto* cmd = app.add_subcommand(
      "export",
      "Write a checkpoint as a Hugging Face directory of its architecture (GPT2LMHeadModel, "
      "LlamaForCausalLM, "
      "Qwen2ForCausalLM, MistralForCausalLM): config.json, the weights as safetensors (sharded above "
      "--max-shard-size, with model.safetensors.index.json) and the tokenizer's files, which "
      "AutoModelForCausalLM and AutoTokenizer load. The directory appears whole or not at all; an existing "
      "one is replaced only when it is empty or holds an earlier export");
  cmd->add_option(
         "--format", f.format,
         "hf: a Hugging Face model directory; peft: a LoRA checkpoint's adapters as a PEFT adapter "
         "(adapter_config.json + adapter_model.safetensors, for PeftModel.from_pretrained over the base)")
      ->check(CLI::IsMember({"hf", "peft"}))
      ->capture_default_str();
  cmd->add_flag(
      "--merge", f.merge,
      "With --format hf, for a LoRA checkpoint: the base with the adapters merged in (W + alpha/r B A), "
      "a plain model");
  cmd->add_option("--run", f.run, "Run directory (its current checkpoint) or step directory")->required();
  cmd->add_option("--out", f.out, "Output directory")->required();
  cmd->add_option("--dtype", f.dtype, "Stored tensor type: f32, f16 or bf16")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--max-shard-size", f.maxShardSize,
                  "Largest weights file (e.g. 2GB, 500MiB); more weights go into numbered shards")
      ->capture_default_str();
  cmd->add_option(
         "--reference-logits", f.referenceTokens,
         "Also run Helios' forward (f32) on this many seeded tokens and write them and the logits as "
         "helios_check_tokens.npy / helios_check_logits.npy beside the model, for "
         "bench/device/hf-check.py; with a tokenizer, also helios_check_strings.json (a few strings and "
         "their ids, for bench/device/hf-tokenizer-check.py)")
      ->check(cli::Count);
  cmd->add_option("--device", f.device, "Device for --reference-logits");
  return cmd;
}

namespace {

// Helios' logits for `n` seeded tokens (capped at the context), computed in f32 from the checkpoint.
void writeReferenceLogits(const ExportFlags& f, const std::filesystem::path& checkpoint, uint32_t vocab,
                          const std::filesystem::path& out) {
  nlohmann::json arch = train::checkpointModelConfig(checkpoint);
  arch["precision"] = "f32";
  arch["param_dtype"] = "f32"; // bf16 parameters load widened, exactly
  auto ctx = vk::Context::create({.device = f.device});
  auto model = train::makeModel(*ctx, arch, 0);
  train::loadCheckpoint(*ctx, checkpoint, *model, false);
  const uint32_t T = std::min(f.referenceTokens, model->context());
  train::SplitMix64 rng{12345};
  std::vector<int32_t> tokens(T);
  for (auto& t : tokens)
    t = static_cast<int32_t>(rng.next() % vocab);
  vk::Buffer tok = ctx->buffer(4ull * T, "tokens"), logits = ctx->buffer(4ull * T * vocab, "logits");
  ctx->uploadVector(tok, tokens);
  graph::GraphExecutor exec(*ctx);
  graph::StepArena arena(*ctx);
  model->forward(exec, arena, tok.range(), 1, T, logits.range());
  exec.flush();
  io::NpyArray t;
  t.dtype = io::NpyDType::I32;
  t.shape = {T};
  t.data.resize(4ull * T);
  std::memcpy(t.data.data(), tokens.data(), t.data.size());
  io::writeNpy(out / "helios_check_tokens.npy", t);
  io::writeNpy(out / "helios_check_logits.npy",
               io::NpyArray::fromFloat(ctx->downloadVector<float>(logits, size_t(T) * vocab), {T, vocab}));
}

// Strings whose ids a transformers tokenizer loaded from the export must reproduce (bench/device/
// hf-tokenizer-check.py): contractions, whitespace runs, newlines, digits, Unicode beyond the corpus.
void writeReferenceIds(const train::Tokenizer& tok, const std::filesystem::path& out) {
  const std::vector<std::string> strings = {"In the beginning God created the heaven and the earth.",
                                            "And God said, Let there be light: and there was light.",
                                            "It's 2024; we've   got 12 apples\n\n  and don't you'll 'd ",
                                            "  leading and trailing  \t tabs\r\nCRLF",
                                            "Ünïcödé naïve café – “quotes” 😀 中文 ١٢٣ ½",
                                            "x"};
  nlohmann::json ids = nlohmann::json::array();
  for (const auto& s : strings)
    ids.push_back(tok.encode(s));
  io::writeFileAtomically(out / "helios_check_strings.json",
                          nlohmann::json{{"strings", strings}, {"ids", ids}}.dump(1) + "\n");
}

} // namespace

namespace {

// config.json's token ids from the tokenizer: GPT-2 names its end-of-text as both; the others their BOS and
// EOS ids.
train::hf::TokenIds tokenIds(const train::Tokenizer& tok, model::Family family) {
  train::hf::TokenIds ids;
  if (family == model::Family::Gpt2) {
    if (auto eot = tok.endOfText()) ids.eos = {*eot};
    return ids;
  }
  if (auto bos = tok.bos()) ids.bos = *bos;
  for (int32_t id : tok.eosIds())
    ids.eos.push_back(id);
  return ids;
}

} // namespace

namespace {

int runPeftExport(const ExportFlags& f, const std::filesystem::path& checkpoint) {
  if (f.merge) throw std::invalid_argument("--merge writes a plain model: use it with --format hf");
  io::StagedDirectory out(f.out, "adapter_config.json");
  const std::vector<std::string> files = train::peft::exportPeft(checkpoint, out.path());
  out.commit();
  std::printf("exported the LoRA adapters of %s as a PEFT adapter to %s/{%s}\n", checkpoint.string().c_str(),
              f.out.c_str(), fmt::format("{}", fmt::join(files, ", ")).c_str());
  return 0;
}

} // namespace

int runExport(const ExportFlags& f) {
  const train::PinnedCheckpoint pin = train::pinCheckpoint(f.run); // not pruned while it is read
  const std::filesystem::path& checkpoint = pin.dir();
  if (f.format == "peft") return runPeftExport(f, checkpoint);
  model::GptConfig c = train::hf::exportableArchitecture(checkpoint);
  if (f.merge) c.lora = {};
  train::hf::ExportOptions options;
  options.dtype = train::parseStoredType(f.dtype);
  options.maxShardBytes = train::parseByteSize(f.maxShardSize);
  options.merge = f.merge;
  std::optional<train::Tokenizer> tok;
  try {
    tok = train::loadCheckpointTokenizer(checkpoint);
    options.ids = tokenIds(*tok, c.family);
  } catch (const train::CheckpointError&) {
    // A checkpoint without a tokenizer exports without token ids and without tokenizer files.
  }
  io::StagedDirectory out(f.out, "config.json");
  const std::vector<std::string> files = train::hf::exportHf(checkpoint, out.path(), options);
  const std::string note = tok ? train::writeHfTokenizer(tok->impl(), c.context, out.path())
                               : std::string("tokenizer: none written (the checkpoint records none)");
  if (f.referenceTokens > 0) writeReferenceLogits(f, checkpoint, c.vocab, out.path());
  if (f.referenceTokens > 0 && tok) writeReferenceIds(*tok, out.path());
  out.commit();
  std::printf("exported %s (%s, %s) as Hugging Face %s (%s) to %s/{%s}\n%s\n", checkpoint.string().c_str(),
              train::describeGpt(c).c_str(), f.dtype.c_str(),
              c.family == model::Family::Gpt2 ? "GPT-2" : model::familyName(c.family),
              train::hf::architectureName(c.family), f.out.c_str(),
              fmt::format("{}", fmt::join(files, ", ")).c_str(), note.c_str());
  return 0;
}

} // namespace helios::train_cli
