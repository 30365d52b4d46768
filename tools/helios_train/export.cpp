#include "export.hpp"

#include "engine/train/checkpoint.hpp"
#include "engine/train/checkpoint_dir.hpp"
#include "engine/train/config.hpp"
#include "engine/train/hf_gpt2.hpp"
#include "engine/train/tokenizer.hpp"

#include <cstdio>

namespace helios::train_cli {

CLI::App* addExportCommand(CLI::App& app, ExportFlags& f) {
  auto* cmd = app.add_subcommand(
      "export", "Write a checkpoint as a Hugging Face GPT-2 directory (config.json, model.safetensors) that "
                "transformers' GPT2LMHeadModel.from_pretrained loads");
  cmd->add_option("--format", f.format, "Output format")->check(CLI::IsMember({"hf"}))->capture_default_str();
  cmd->add_option("--run", f.run, "Run directory (its current checkpoint) or step directory")->required();
  cmd->add_option("--out", f.out, "Output directory")->required();
  cmd->add_option("--dtype", f.dtype, "Stored tensor type: f32, f16 or bf16")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))
      ->capture_default_str();
  return cmd;
}

int runExport(const ExportFlags& f) {
  const std::filesystem::path checkpoint = train::resolveCheckpoint(f.run);
  std::optional<int64_t> eos;
  try {
    if (auto eot = train::Tokenizer::fromJson(train::checkpointTokenizer(checkpoint)).endOfText()) eos = *eot;
  } catch (const train::CheckpointError&) {
    // A checkpoint without a tokenizer exports without an end-of-text id.
  }
  const model::GptConfig c = train::exportHf(checkpoint, f.out, train::parseStoredType(f.dtype), eos);
  std::printf("exported %s (%s, %s) as Hugging Face GPT-2 to %s/{config.json, model.safetensors}\n",
              checkpoint.string().c_str(), train::describeGpt(c).c_str(), f.dtype.c_str(), f.out.c_str());
  return 0;
}

} // namespace helios::train_cli
