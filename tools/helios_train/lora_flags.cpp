#include "lora_flags.hpp"

#include "engine/model/lora_sites.hpp"
#include "engine/train/checkpoint.hpp"
#include "engine/train/lora_base.hpp"
#include "tools/cli_checks.hpp"
#include "train_flags.hpp"

#include <cstdio>

#include <fmt/format.h>
#include <stdexcept>

namespace helios::train_cli {

void addLoraOptions(CLI::App& app, LoraFlags& f) {
  app.add_option(
         "--lora-rank", f.rank,
         "Train LoRA adapters of this rank on a frozen base instead of every weight (with --init-from, "
         "the base is that directory, referenced by path and content hash from every checkpoint)")
      ->check(cli::Count);
  app.add_option("--lora-alpha", f.alpha,
                 "LoRA scale numerator: the adapters' product is scaled by alpha / rank "
                 "(default: the rank, a scale of 1)")
      ->check(cli::Finite);
  app.add_option("--lora-dropout", f.dropout, "Dropout on the adapters' input, in [0, 1) (default 0)")
      ->check(cli::Finite);
  app.add_option(
      "--lora-targets", f.targets,
      "Projections that get adapters: q,k,v,o,gate,up,down or PEFT's q_proj,...,down_proj (default: "
      "every one the model has; a GELU MLP has no gate, its fc is up)");
  app.add_option(
         "--base-dtype", f.baseDtype,
         "How the frozen base's matrices and embeddings are stored: f16 (default with --precision mixed), "
         "bf16 (default with --precision bf16; the bf16 GEMMs read it as it is) or f32 (default with f32; "
         "a 16-bit base is widened to f32 for every step there). A 16-bit base must be the precision's own "
         "kind (no f16 base under bf16 or the reverse)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  app.add_option("--init-adapter", f.initAdapter,
                 "Continue training a PEFT LoRA adapter directory (adapter_config.json + adapter_model."
                 "safetensors) over the --init-from base; its rank, alpha, dropout and targets apply unless "
                 "flags repeat them");
}

void applyLoraFlags(const CLI::App& app, const LoraFlags& f, train::TrainConfig& c,
                    const train::peft::Adapter* adapter) {
  const auto given = [&](const char* name) { return app.get_option(name)->count() > 0; };
  model::LoraConfig& l = c.gpt.lora;
  if (given("--lora-rank") && f.rank == 0)
    throw std::invalid_argument(
        "--lora-rank 0: a LoRA rank is at least 1 (leave the flag out for full training)");
  if (!given("--lora-rank") && !adapter && !l.enabled())
    for (const char* flag : {"--lora-alpha", "--lora-dropout", "--lora-targets", "--base-dtype"})
      if (given(flag))
        throw std::invalid_argument(fmt::format("{} configures LoRA adapters: give --lora-rank too", flag));
  const bool fresh = (given("--lora-rank") || adapter) && !l.enabled(); // defaults apply to a new run only
  if (fresh && adapter) l = adapter->config.lora;
  if (given("--lora-rank")) l.rank = f.rank;
  if (given("--lora-alpha"))
    l.alpha = f.alpha;
  else if (fresh && !adapter)
    l.alpha = float(l.rank);
  if (given("--lora-dropout")) l.dropout = f.dropout;
  if (given("--lora-targets"))
    l.targets = model::parseLoraTargets(f.targets);
  else if (fresh && !adapter)
    l.targets = model::availableLoraTargets(c.gpt);
  if (given("--base-dtype"))
    l.base = codegen::parseElem(f.baseDtype, "--base-dtype");
  else if (fresh)
    l.base = model::defaultBaseStorage(c.gpt.precision);
  if (adapter)
    if (const std::string why = train::peft::adapterMismatch(*adapter, l, ""); !why.empty())
      throw std::invalid_argument(why);
}

std::optional<train::peft::Adapter> openInitAdapter(const Flags& f) {
  if (f.lora.initAdapter.empty()) return std::nullopt;
  if (f.initFrom.empty())
    throw std::invalid_argument(
        "--init-adapter continues a PEFT adapter over the model it was trained on: name "
        "that base with --init-from DIR");
  return train::peft::openAdapter(f.lora.initAdapter);
}

nlohmann::json checkedLoraBase(const Flags& f, const std::filesystem::path& checkpoint, uint64_t seed,
                               const train::peft::Adapter* adapter) {
  train::LoraBase base{{}, "", seed};
  if (!checkpoint.empty()) {
    const nlohmann::json arch = train::checkpointModelConfig(checkpoint);
    if (!arch.contains("lora_base"))
      throw std::invalid_argument(
          fmt::format("{}: LoRA over a Helios checkpoint trained in full: export it "
                      "(export --format hf) and start from that directory with --init-from",
                      checkpoint.string()));
    base = train::loraBaseFromJson(arch.at("lora_base"));
  } else if (!f.initFrom.empty()) {
    base.dir = std::filesystem::absolute(f.initFrom);
  }
  train::verifyLoraBase(base);
  if (adapter)
    if (const std::string why = train::peft::adapterMismatch(*adapter, adapter->config.lora, base.hash);
        !why.empty())
      throw std::invalid_argument(why);
  return train::loraBaseToJson(base);
}

void loadInitAdapter(vk::Context& ctx, train::Model& model, const train::peft::Adapter& adapter) {
  const train::LoraBase base = train::loraBaseFromJson(model.configJson().at("lora_base"));
  const std::string named = std::filesystem::path(adapter.config.baseModel).filename().string();
  if (!named.empty() && named != base.dir.filename().string())
    std::printf("note: %s names its base %s; training it over %s (the tensors' shapes match)\n",
                adapter.dir.string().c_str(), adapter.config.baseModel.c_str(), base.dir.string().c_str());
  train::peft::loadAdapter(ctx, model, adapter);
}

} // namespace helios::train_cli
