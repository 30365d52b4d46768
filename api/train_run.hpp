#pragma once
// The trainer behind helios::train. Kept apart from helios/train.hpp: the public function helios::train and
// the engine's namespace helios::train cannot be declared in one translation unit.
#include "helios/device.hpp"
#include "helios/train_config.hpp"

namespace helios::api {

TrainResult runTraining(const Device& device, const TrainConfig& config);

} // namespace helios::api
