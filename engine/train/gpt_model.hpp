#pragma once
// model::Gpt behind the trainer's Model interface. Built only when the GPT implementation is linked
// (HELIOS_TRAIN_HAVE_GPT); otherwise makeModel() refuses "gpt" with a clear message.
#include "engine/train/model.hpp"

namespace helios::train {

std::unique_ptr<Model> makeGptModel(vk::Context& ctx, const model::GptConfig& config, uint64_t seed);
// A LoRA model (config.lora enabled) over `base` (engine/train/lora_base.hpp), its frozen base loaded.
std::unique_ptr<Model> makeLoraModel(vk::Context& ctx, const model::GptConfig& config, struct LoraBase base);

} // namespace helios::train
