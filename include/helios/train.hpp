#pragma once
// The trainer loop: a GPT (or the bigram baseline) trained on a text file, as helios-train does it.
#include "helios/device.hpp"
#include "helios/train_config.hpp"

namespace helios {

// Throws std::invalid_argument on a bad configuration, std::runtime_error on data or device failures.
HELIOS_API TrainResult train(const Device& device, const TrainConfig& config);

} // namespace helios
