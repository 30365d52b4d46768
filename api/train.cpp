#include "helios/train.hpp"

#include "api/train_run.hpp"

namespace helios {

TrainResult train(const Device& device, const TrainConfig& config) {
  return api::runTraining(device, config);
}

} // namespace helios
