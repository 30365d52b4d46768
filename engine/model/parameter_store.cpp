#include "engine/model/parameter_store.hpp"

#include <algorithm>
#include <span>

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

void ParameterStore::build(vk::Context& ctx, std::vector<Parameter>& params) {
  const uint64_t align = std::max<uint64_t>(ctx.allocator().alignment() / 4, 1);
  // The optimizer binds a group whole, so it stays within one binding's reach (lavapipe: 128 MiB).
  const uint64_t maxGroupFloats =
      std::min<uint64_t>(kMaxGroupBytes, ctx.device().limits().maxStorageBufferRange) / 4 / align * align;
  struct Planned {
    std::vector<size_t> members;
    std::vector<uint64_t> offsets;
    uint64_t floats = 0;
    bool decay = true;
  };
  std::vector<Planned> plan;
  for (bool decay : {true, false}) {
    Planned cur;
    cur.decay = decay;
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].decay != decay) continue;
      const uint64_t size = roundUp(params[i].elements, align);
      if (!cur.members.empty() && cur.floats + size > maxGroupFloats) {
        plan.push_back(std::move(cur));
        cur = Planned{};
        cur.decay = decay;
      }
      cur.members.push_back(i);
      cur.offsets.push_back(cur.floats);
      cur.floats += size;
    }
    if (!cur.members.empty()) plan.push_back(std::move(cur));
  }
  for (const Planned& g : plan) {
    auto flat = std::make_unique<Flat>();
    const VkDeviceSize bytes = g.floats * 4;
    const char* what = g.decay ? "parameters (decay)" : "parameters (no decay)";
    flat->data = ctx.buffer(bytes, what);
    flat->grad = ctx.buffer(bytes, "parameter gradients");
    flat->m = ctx.buffer(bytes, "AdamW m");
    flat->v = ctx.buffer(bytes, "AdamW v");
    for (const vk::Buffer* b : {&flat->data, &flat->grad, &flat->m, &flat->v})
      zero(ctx, *b);
    for (size_t k = 0; k < g.members.size(); ++k) {
      Parameter& p = params[g.members[k]];
      const VkDeviceSize offset = g.offsets[k] * 4, size = uint64_t(p.elements) * 4;
      p.data = {&flat->data, offset, size};
      p.grad = {&flat->grad, offset, size};
      p.m = {&flat->m, offset, size};
      p.v = {&flat->v, offset, size};
    }
    groups_.push_back({flat->data.range(), flat->grad.range(), flat->m.range(), flat->v.range(),
                       static_cast<uint32_t>(g.floats), g.decay});
    flats_.push_back(std::move(flat));
  }
}

} // namespace helios::model
