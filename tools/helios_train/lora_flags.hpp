#pragma once
// helios-train's LoRA options: --lora-rank R switches a run to adapters over a frozen base (engine/model/
// lora_config.hpp), --init-adapter DIR starts them from a PEFT adapter. Defaults that depend on the model are
// filled in once its architecture is known (after --init-from): every projection it has, alpha = rank, and a
// half-precision base under --precision mixed (f32 otherwise).
#include "engine/train/config.hpp"
#include "engine/train/peft/import.hpp"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <optional>
#include <string>

namespace helios::train_cli {

struct LoraFlags {
  uint32_t rank = 0;
  float alpha = 0, dropout = 0;
  std::string targets, baseDtype, initAdapter;
};

void addLoraOptions(CLI::App& app, LoraFlags& f);

// The given LoRA flags into c.gpt.lora, the model-dependent defaults filled in (call after --init-from's
// architecture is applied); a new run from a PEFT adapter (--init-adapter) starts from its configuration and
// refuses flags that contradict it. Throws std::invalid_argument for a flag without --lora-rank, a rank of 0,
// an unknown target, an adapter of another rank, alpha or targets.
struct Flags;
void applyLoraFlags(const CLI::App& app, const LoraFlags& f, train::TrainConfig& c,
                    const train::peft::Adapter* adapter = nullptr);

// --init-adapter's directory, opened and checked (it needs --init-from, the base); nullopt without the flag.
std::optional<train::peft::Adapter> openInitAdapter(const Flags& f);
// The "lora_base" of a LoRA run's model, before any device work: a resumed run's own (from `checkpoint`; its
// directory must still hash as recorded), the --init-from directory (hashed now), or the seeded
// initialisation; an --init-adapter trained on another base is refused.
nlohmann::json checkedLoraBase(const Flags& f, const std::filesystem::path& checkpoint, uint64_t seed,
                               const train::peft::Adapter* adapter);
// The adapter's weights into the model (checked against the model's adapter layout).
void loadInitAdapter(vk::Context& ctx, train::Model& model, const train::peft::Adapter& adapter);

} // namespace helios::train_cli
