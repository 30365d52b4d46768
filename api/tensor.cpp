// Tensors: a vk::Buffer with a shape and an element type; host copies through the context.
#include "api/internal.hpp"

#include "engine/core/half.hpp"

#include <cstring>
#include <fmt/format.h>
#include <stdexcept>

namespace helios {

namespace {

uint64_t elementCount(const std::vector<uint64_t>& shape) {
  if (shape.empty()) throw std::invalid_argument("helios::Tensor: a tensor needs at least one dimension");
  uint64_t n = 1;
  for (uint64_t d : shape) {
    if (d == 0) throw std::invalid_argument("helios::Tensor: a dimension is 0");
    n *= d;
  }
  return n;
}

void requireBytes(const Tensor& t, size_t bytes, const char* what) {
  if (bytes != t.bytes())
    throw std::invalid_argument(
        fmt::format("helios::Tensor::{}: {} bytes given, the tensor holds {}", what, bytes, t.bytes()));
}

} // namespace

size_t dtypeSize(DType dtype) {
  return dtype == DType::F16 ? 2 : 4;
}

Tensor::Tensor(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Tensor Tensor::empty(const Device& device, std::vector<uint64_t> shape, DType dtype) {
  const uint64_t bytes = elementCount(shape) * dtypeSize(dtype);
  auto impl = std::make_shared<Impl>(Impl{device, std::move(shape), dtype, {}});
  impl->buffer = device.impl()->ctx->buffer(bytes, "helios::Tensor");
  return Tensor(std::move(impl));
}

Tensor Tensor::fromHost(const Device& device, std::vector<uint64_t> shape, const std::vector<float>& values) {
  Tensor t = empty(device, std::move(shape), DType::F32);
  t.write(values);
  return t;
}

Tensor Tensor::fromBytes(const Device& device, std::vector<uint64_t> shape, DType dtype, const void* data,
                         size_t bytes) {
  Tensor t = empty(device, std::move(shape), dtype);
  t.write(data, bytes);
  return t;
}

const std::vector<uint64_t>& Tensor::shape() const {
  return impl_->shape;
}
DType Tensor::dtype() const {
  return impl_->dtype;
}
uint64_t Tensor::elements() const {
  return elementCount(impl_->shape);
}
uint64_t Tensor::bytes() const {
  return elements() * dtypeSize(impl_->dtype);
}
const Device& Tensor::device() const {
  return impl_->device;
}

void Tensor::read(void* dst, size_t bytes) const {
  requireBytes(*this, bytes, "read");
  impl_->device.impl()->ctx->download(impl_->buffer, {static_cast<std::byte*>(dst), bytes});
}

void Tensor::write(const void* src, size_t bytes) {
  requireBytes(*this, bytes, "write");
  impl_->device.impl()->ctx->upload(impl_->buffer, {static_cast<const std::byte*>(src), bytes});
}

void Tensor::write(const std::vector<float>& values) {
  if (values.size() != elements())
    throw std::invalid_argument(
        fmt::format("helios::Tensor::write: {} values given, the tensor has {}", values.size(), elements()));
  if (impl_->dtype == DType::F32) return write(values.data(), values.size() * sizeof(float));
  const std::vector<uint16_t> half = toHalf(values);
  write(half.data(), half.size() * sizeof(uint16_t));
}

std::vector<float> Tensor::toHost() const {
  if (impl_->dtype == DType::F32) {
    std::vector<float> out(elements());
    read(out.data(), out.size() * sizeof(float));
    return out;
  }
  std::vector<uint16_t> half(elements());
  read(half.data(), half.size() * sizeof(uint16_t));
  return fromHalf(half);
}

} // namespace helios
