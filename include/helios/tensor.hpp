#pragma once
// Tensors: dense row-major arrays in device memory, copied to and from host memory explicitly.
#include "helios/device.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace helios {

enum class DType { F32, F16 };
HELIOS_API size_t dtypeSize(DType dtype);

class HELIOS_API Tensor {
public:
  // Uninitialised device memory of `shape` (at least one dimension, none zero).
  static Tensor empty(const Device& device, std::vector<uint64_t> shape, DType dtype = DType::F32);
  // A tensor holding `values` (elements of `shape`, which must match their count).
  static Tensor fromHost(const Device& device, std::vector<uint64_t> shape, const std::vector<float>& values);
  // Raw bytes of `dtype` (f16: IEEE binary16 bit patterns); `bytes` must equal elements() * dtypeSize.
  static Tensor fromBytes(const Device& device, std::vector<uint64_t> shape, DType dtype, const void* data,
                          size_t bytes);

  const std::vector<uint64_t>& shape() const;
  DType dtype() const;
  uint64_t elements() const;
  uint64_t bytes() const;
  const Device& device() const;

  // Copies to the host, waiting for the GPU work that writes this tensor; f16 is widened to float.
  std::vector<float> toHost() const;
  void read(void* dst, size_t bytes) const;     // raw bytes, exactly bytes()
  void write(const void* src, size_t bytes);    // raw bytes, exactly bytes()
  void write(const std::vector<float>& values); // f32 tensors, or f16 ones (rounded to nearest even)

  // The engine objects behind the handle, opaque outside libhelios.so (api/internal.hpp).
  struct Impl;
  explicit Tensor(std::shared_ptr<Impl> impl);
  const std::shared_ptr<Impl>& impl() const { return impl_; }

private:
  std::shared_ptr<Impl> impl_;
};

} // namespace helios
