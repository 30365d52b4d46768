#include "engine/model/frozen_store.hpp"

#include "engine/core/half.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace helios::model {

namespace {

constexpr uint64_t kMaxGroupBytes = 256ull << 20;

uint64_t roundUp(uint64_t x, uint64_t a) {
  return (x + a - 1) / a * a;
}

} // namespace

void FrozenStore::build(vk::Context& ctx, std::vector<FrozenTensor>& tensors) {
  const uint64_t align = std::max<uint64_t>(ctx.allocator().alignment(), 16);
  const uint64_t cap = std::min<uint64_t>(kMaxGroupBytes, ctx.device().limits().maxStorageBufferRange);
  for (BaseStorage storage : {BaseStorage::F32, BaseStorage::F16, BaseStorage::BF16}) {
    std::vector<size_t> members;
    std::vector<uint64_t> offsets;
    uint64_t used = 0;
    const auto close = [&] {
      if (members.empty()) return;
      auto buffer = std::make_unique<vk::Buffer>(
          ctx.buffer(used, fmt::format("frozen base weights ({})", codegen::elemName(storage))));
      for (size_t k = 0; k < members.size(); ++k)
        tensors[members[k]].data = {buffer.get(), offsets[k], tensors[members[k]].bytes()};
      bytes_ += used;
      largest_ = std::max(largest_, used);
      buffers_.push_back(std::move(buffer));
      members.clear();
      offsets.clear();
      used = 0;
    };
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].storage != storage) continue;
      const uint64_t size = roundUp(tensors[i].bytes(), align);
      if (!members.empty() && used + size > cap) close();
      members.push_back(i);
      offsets.push_back(used);
      used += size;
    }
    close();
  }
}

void FrozenStore::upload(vk::Context& ctx, const FrozenTensor& t, std::span<const float> values) {
  if (values.size() != t.elements)
    throw std::invalid_argument(
        fmt::format("frozen tensor '{}': {} values for {} elements", t.name, values.size(), t.elements));
  if (t.storage == BaseStorage::F32) {
    ctx.upload(t.data, std::as_bytes(values));
    return;
  }
  std::vector<uint16_t> half(values.size()); // rounded to nearest even
  std::transform(values.begin(), values.end(), half.begin(),
                 t.storage == BaseStorage::BF16 ? floatToBf16 : floatToHalf);
  ctx.upload(t.data, std::as_bytes(std::span<const uint16_t>(half)));
}

} // namespace helios::model
