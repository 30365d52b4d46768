#pragma once
// model::Gpt behind the trainer's Model interface. Built only when the GPT implementation is linked
// (HELIOS_TRAIN_HAVE_GPT); otherwise makeModel() refuses "gpt" with a clear message.
#include "engine/train/model.hpp"

namespace helios::train {

std::unique_ptr<Model> makeGptModel(vk::Context& ctx, const model::GptConfig& config, uint64_t seed);

} // namespace helios::train
