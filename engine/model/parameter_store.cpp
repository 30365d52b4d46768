#include "engine/model/parameter_store.hpp"

#include "engine/core/half.hpp"

#include <algorithm>
#include <span>
#include <stdexcept>

namespace helios::model {

namespace {

constexpr uint64_t kMaxGroupBytes = 256ull << 20;

uint64_t roundUp(uint64_t x, uint64_t a) {
  return (x + a - 1) / a * a;
}

// Zeroes a buffer through a bounded host staging vector.
void zero(vk::Context& ctx, const vk::Buffer& b) {
  const uint64_t floats = b.size() / 4, chunk = std::min<uint64_t>(floats, 4ull << 20);
  const std::vector<float> zeros(chunk, 0.0f);
  for (uint64_t at = 0; at < floats; at += chunk) {
    const uint64_t n = std::min(chunk, floats - at);
    ctx.upload(b, std::as_bytes(std::span<const float>(zeros.data(), n)), at * 4);
  }
}

} // namespace

void uploadValues(vk::Context& ctx, const Parameter& p, const std::vector<float>& values) {
  if (values.size() != p.elements)
    throw std::invalid_argument("uploadValues: " + std::to_string(values.size()) + " values for '" + p.name +
                                "' of " + std::to_string(p.elements));
  if (p.dtype != codegen::Elem::BF16) {
    ctx.uploadVector(p.data, values);
    return;
  }
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    bits[i] = floatToBf16(values[i]);
  ctx.uploadVector(p.data, bits);
}

std::vector<float> downloadValues(vk::Context& ctx, const Parameter& p) {
  if (p.dtype != codegen::Elem::BF16) return ctx.downloadVector<float>(p.data, p.elements);
  const std::vector<uint16_t> bits = ctx.downloadVector<uint16_t>(p.data, p.elements);
  std::vector<float> values(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    values[i] = bf16ToFloat(bits[i]);
  return values;
}

void ParameterStore::build(vk::Context& ctx, std::vector<Parameter>& params) {
  const uint64_t alignment = std::max<uint64_t>(ctx.allocator().alignment(), 4);
  // The optimizer binds a group whole, so it stays within one binding's reach (lavapipe: 128 MiB).
  const uint64_t maxGroupBytes =
      std::min<uint64_t>(kMaxGroupBytes, ctx.device().limits().maxStorageBufferRange);
  struct Planned {
    std::vector<size_t> members;
    std::vector<uint64_t> offsets; // in elements
    uint64_t elements = 0;
    bool decay = true;
    codegen::Elem dtype = codegen::Elem::F32;
  };
  for (const Parameter& p : params)
    if (p.dtype == codegen::Elem::F16)
      throw std::invalid_argument("ParameterStore: parameter '" + p.name +
                                  "' asks for f16 values (f32 or bf16)");
  std::vector<Planned> plan;
  for (bool decay : {true, false})
    for (codegen::Elem dtype : {codegen::Elem::F32, codegen::Elem::BF16}) {
      // Every slice of every buffer starts aligned: element offsets are multiples of the alignment in the
      // narrowest type's elements (so a bf16 group's sizes stay even, and its f32 buffers aligned too).
      const uint64_t align = alignment / codegen::elemBytes(dtype);
      const uint64_t maxElements = maxGroupBytes / 4 / align * align; // the f32 buffers are the largest
      Planned cur;
      cur.decay = decay;
      cur.dtype = dtype;
      for (size_t i = 0; i < params.size(); ++i) {
        if (params[i].decay != decay || params[i].dtype != dtype) continue;
        const uint64_t size = roundUp(params[i].elements, align);
        if (!cur.members.empty() && cur.elements + size > maxElements) {
          plan.push_back(std::move(cur));
          cur = Planned{};
          cur.decay = decay;
          cur.dtype = dtype;
        }
        cur.members.push_back(i);
        cur.offsets.push_back(cur.elements);
        cur.elements += size;
      }
      if (!cur.members.empty()) plan.push_back(std::move(cur));
    }
  for (const Planned& g : plan) {
    auto flat = std::make_unique<Flat>();
    const uint64_t valueBytes = codegen::elemBytes(g.dtype);
    const VkDeviceSize bytes = g.elements * 4;
    const char* what = g.decay ? "parameters (decay)" : "parameters (no decay)";
    flat->data = ctx.buffer(g.elements * valueBytes, what);
    flat->grad = ctx.buffer(bytes, "parameter gradients");
    flat->m = ctx.buffer(bytes, "AdamW m");
    flat->v = ctx.buffer(bytes, "AdamW v");
    for (const vk::Buffer* b : {&flat->data, &flat->grad, &flat->m, &flat->v})
      zero(ctx, *b);
    for (size_t k = 0; k < g.members.size(); ++k) {
      Parameter& p = params[g.members[k]];
      const VkDeviceSize offset = g.offsets[k] * 4, size = uint64_t(p.elements) * 4;
      p.data = {&flat->data, g.offsets[k] * valueBytes, p.elements * valueBytes};
      p.grad = {&flat->grad, offset, size};
      p.m = {&flat->m, offset, size};
      p.v = {&flat->v, offset, size};
    }
    groups_.push_back({flat->data.range(), flat->grad.range(), flat->m.range(), flat->v.range(),
                       static_cast<uint32_t>(g.elements), g.decay, g.dtype});
    flats_.push_back(std::move(flat));
  }
}

} // namespace helios::model
