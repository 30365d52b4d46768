#include "model_source.hpp"

#include "engine/train/checkpoint.hpp"
#include "engine/train/checkpoint_dir.hpp"
#include "engine/train/config.hpp"

#include <fmt/format.h>

namespace helios::train_cli {

void addModelSourceOptions(CLI::App& cmd, ModelSourceFlags& f) {
  auto* resume =
      cmd.add_option("--resume", f.resume, "Run directory (its current checkpoint) or step directory");
  cmd.add_option("--init-from", f.initFrom,
                 "A Hugging Face model directory (config.json + safetensors: GPT-2, Llama, Qwen2, Mistral)")
      ->excludes(resume);
}

ModelSource openModelSource(const ModelSourceFlags& f) {
  if (f.resume.empty() == f.initFrom.empty())
    throw std::invalid_argument("name the model with --resume RUN or --init-from DIR");
  ModelSource s;
  if (!f.resume.empty()) {
    s.name = f.resume;
    s.checkpoint = train::resolveCheckpoint(f.resume);
    s.architecture = train::checkpointModelConfig(s.checkpoint);
    try {
      s.tokenizer = train::loadCheckpointTokenizer(s.checkpoint);
    } catch (const train::CheckpointError&) {
      // a checkpoint without a tokenizer (the caller says whether it needs one)
    }
    return s;
  }
  s.name = f.initFrom;
  s.import = train::hf::openImport(f.initFrom);
  s.architecture = train::toJson(s.import->config);
  s.architecture["kind"] = "gpt";
  s.tokenizer = train::hf::importTokenizer(*s.import);
  return s;
}

std::unique_ptr<train::Model> loadModel(vk::Context& ctx, const ModelSource& source,
                                        const std::string& precision) {
  nlohmann::json arch = source.architecture;
  if (!precision.empty()) arch["precision"] = precision;
  auto model = train::makeModel(ctx, arch, 0);
  if (source.import)
    train::hf::loadImport(ctx, *model, *source.import);
  else
    train::loadCheckpoint(ctx, source.checkpoint, *model, false);
  return model;
}

} // namespace helios::train_cli
