#pragma once
// Devices: what Vulkan devices there are, and opening one to run Helios' kernels on.
#include "helios/export.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace helios {

// What the probe reports about one physical device (helios-probe prints the full tables).
struct DeviceInfo {
  uint32_t index = 0; // as --device / HELIOS_DEVICE take it
  std::string name;   // "NVIDIA H100 80GB HBM3", "llvmpipe (LLVM 15.0.7, 256 bits)"
  std::string type;   // "discrete", "integrated", "virtual", "cpu", "other"
  uint32_t vendorId = 0, deviceId = 0;
  std::string driver;        // driver name and version
  std::string apiVersion;    // "1.4.309"
  uint32_t subgroupSize = 0; // the default subgroup size
  std::string coopShape; // the f16 x f16 -> f32 cooperative-matrix shape the GEMMs use ("16x16x16"), or ""
};

// The per-device cooperative-matrix self-test (coop GEMM and attention against float64 references).
struct HELIOS_API CoopSelfTest {
  enum class Status { NotRun, Pass, Fail };
  Status status = Status::NotRun;
  std::string failure;          // the failed check and what was wrong, when Fail
  bool cached = false;          // read from the cache beside the pipeline caches, not run by this process
  std::string describe() const; // "pass (cached)", "fail: <why> (this run)", "not run"
};

// Every Vulkan device on this machine, in index order. Throws std::runtime_error without a Vulkan loader or
// device.
HELIOS_API std::vector<DeviceInfo> devices();

struct DeviceOptions {
  std::string select;      // "" -> $HELIOS_DEVICE -> the best device; else an index or a name substring
  bool validation = false; // the Khronos validation layer (an error when it is not installed)
};

class Tensor;

// An open device. Copies share it; tensors keep it open while they live.
class HELIOS_API Device {
public:
  // Throws std::runtime_error naming what failed (no loader, no matching device, a Vulkan error).
  static Device open(const DeviceOptions& options = {});

  const DeviceInfo& info() const;
  // Runs the self-test where the device has cooperative matrices and no verdict is cached (HELIOS_COOP=on|off
  // skips it), and returns its result; NotRun on devices without cooperative matrices.
  CoopSelfTest coopSelfTest() const;

  // The engine objects behind the handle, opaque outside libhelios.so (api/internal.hpp).
  struct Impl;
  explicit Device(std::shared_ptr<Impl> impl);
  const std::shared_ptr<Impl>& impl() const { return impl_; }

private:
  std::shared_ptr<Impl> impl_;
};

} // namespace helios
