#pragma once
// What the public handles (include/helios/) hold: the engine objects behind them. Private to libhelios.so.
#include "helios/device.hpp"
#include "helios/tensor.hpp"

#include "engine/ops/executor.hpp"
#include "engine/vk/context.hpp"
#include "probe/caps.hpp"

#include <functional>
#include <memory>

namespace helios {

struct Device::Impl {
  std::unique_ptr<vk::Context> ctx;
  DeviceInfo info;
  ops::Executor* recording = nullptr; // the graph executor while a Graph::record runs, else null
};

struct Tensor::Impl {
  Device device;
  std::vector<uint64_t> shape;
  DType dtype = DType::F32;
  vk::Buffer buffer;
};

namespace api {

DeviceInfo toDeviceInfo(const probe::DeviceCaps& caps, uint32_t index);

// Runs `ops` on the device's recording graph, or on an immediate executor that is flushed (waited for).
void execute(Device::Impl& device, const std::function<void(ops::Executor&)>& ops);
// Throws std::logic_error naming `op` while a Graph::record runs (its replays could not reach a new tensor).
void requireNotRecording(const Device::Impl& device, const char* op);

// Throws std::invalid_argument unless every tensor lives on the same device as the first.
void requireSameDevice(const char* op, std::initializer_list<const Tensor*> tensors);

} // namespace api
} // namespace helios
