// Devices: enumeration through the probe, opening through vk::Context, the coop self-test through the ops'
// own first use of the device.
#include "api/internal.hpp"

#include "engine/ops/coop_selftest.hpp"
#include "engine/ops/matmul_coop.hpp"
#include "engine/vk/device_probe.hpp"
#include "probe/scoring.hpp"
#include "probe/selftest.hpp"

#include <fmt/format.h>

namespace helios {

namespace api {

DeviceInfo toDeviceInfo(const probe::DeviceCaps& caps, uint32_t index) {
  DeviceInfo info;
  info.index = index;
  info.name = caps.name;
  info.type = std::string(probe::deviceTypeName(caps.type));
  info.vendorId = caps.vendor_id;
  info.deviceId = caps.device_id;
  info.driver = caps.driver;
  info.apiVersion = caps.api_version;
  info.subgroupSize = caps.subgroup_size;
  if (const auto shape = probe::bestF16F32(caps.coop_khr))
    info.coopShape = fmt::format("{}x{}x{}", shape->M, shape->N, shape->K);
  return info;
}

void execute(Device::Impl& device, const std::function<void(ops::Executor&)>& ops) {
  if (device.recording) {
    ops(*device.recording);
    return;
  }
  ops::ImmediateExecutor exec(*device.ctx);
  ops(exec);
  exec.flush();
}

void requireNotRecording(const Device::Impl& device, const char* op) {
  if (device.recording)
    throw std::logic_error(fmt::format("helios::{}: inside Graph::record, pass the output tensor (a replay "
                                       "writes the same tensor again)",
                                       op));
}

void requireSameDevice(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Device::Impl* first = tensors.begin()[0]->impl()->device.impl().get();
  for (const Tensor* t : tensors)
    if (t->impl()->device.impl().get() != first)
      throw std::invalid_argument(fmt::format("helios::{}: the tensors are on different devices", op));
}

} // namespace api

std::string CoopSelfTest::describe() const {
  probe::SelfTestResult r;
  r.status = status == Status::Pass   ? probe::SelfTestStatus::Pass
             : status == Status::Fail ? probe::SelfTestStatus::Fail
                                      : probe::SelfTestStatus::NotRun;
  r.failure = failure;
  r.cached = cached;
  return probe::describeSelfTest(r);
}

std::vector<DeviceInfo> devices() {
  const std::vector<probe::DeviceCaps> all = vk::probeDevices();
  std::vector<DeviceInfo> out;
  for (size_t i = 0; i < all.size(); ++i)
    out.push_back(api::toDeviceInfo(all[i], static_cast<uint32_t>(i)));
  return out;
}

Device::Device(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Device Device::open(const DeviceOptions& options) {
  auto impl = std::make_shared<Impl>();
  impl->ctx = vk::Context::create({.device = options.select, .validation = options.validation});
  const vk::Device& dev = impl->ctx->device();
  impl->info = api::toDeviceInfo(probe::queryCaps(impl->ctx->instance().handle(), dev.physical()),
                                 impl->ctx->deviceIndex());
  return Device(std::move(impl));
}

const DeviceInfo& Device::info() const {
  return impl_->info;
}

CoopSelfTest Device::coopSelfTest() const {
  // The engine's first coop use of a device asks the self-test (engine/ops/coop_selftest.hpp).
  ops::coopDeviceInfo(impl_->ctx->device());
  const probe::SelfTestResult r = ops::coopSelfTestResult(impl_->ctx->device());
  CoopSelfTest out;
  out.status = r.status == probe::SelfTestStatus::Pass   ? CoopSelfTest::Status::Pass
               : r.status == probe::SelfTestStatus::Fail ? CoopSelfTest::Status::Fail
                                                         : CoopSelfTest::Status::NotRun;
  out.failure = r.failure;
  out.cached = r.cached;
  return out;
}

} // namespace helios
