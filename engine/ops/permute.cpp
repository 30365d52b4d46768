#include "engine/ops/permute.hpp"

#include "engine/ops/elementwise.hpp"

#include <initializer_list>
#include <stdexcept>
#include <string>

namespace helios::ops {

std::array<uint32_t, 4> denseStrides(const std::array<uint32_t, 4>& s) {
  return {s[1] * s[2] * s[3], s[2] * s[3], s[3], 1};
}

namespace {

uint64_t lastIndex(uint32_t offset, const std::array<uint32_t, 4>& shape,
                   const std::array<uint32_t, 4>& strides) {
  uint64_t last = offset;
  for (size_t k = 0; k < 4; ++k)
    last += uint64_t(shape[k] - 1) * strides[k];
  return last;
}

void checkRange(const char* name, const vk::BufferRange& r, uint64_t lastIdx, uint64_t elemBytes) {
  if (r.buffer == VK_NULL_HANDLE)
    throw std::invalid_argument(std::string("ops::permute: ") + name + " has no buffer");
  if (lastIdx > 0xffffffffull)
    throw std::invalid_argument(std::string("ops::permute: ") + name + " index exceeds 32 bits");
  if (r.size != 0 && r.size < (lastIdx + 1) * elemBytes)
    throw std::invalid_argument(std::string("ops::permute: ") + name + " holds " + std::to_string(r.size) +
                                " bytes, element " + std::to_string(lastIdx) + " is addressed");
}

} // namespace

void permute(Executor& exec, vk::BufferRange src, vk::BufferRange dst, const PermuteArgs& a) {
  const uint64_t total = uint64_t(a.shape[0]) * a.shape[1] * a.shape[2] * a.shape[3];
  if (total == 0) return;
  if (total >= (1ull << 31)) throw std::invalid_argument("ops::permute: more than 2^31 elements");
  if (a.src != a.dst && (a.accumulate || a.src != Elem::F32))
    throw std::invalid_argument(std::string("ops::permute: ") + codegen::elemName(a.src) + " -> " +
                                codegen::elemName(a.dst) +
                                " (types change only from f32 to 16 bits, in copies)");
  const uint64_t srcBytes = codegen::elemBytes(a.src), dstBytes = codegen::elemBytes(a.dst);
  checkRange("src", src, lastIndex(a.srcOffset, a.shape, a.srcStrides), srcBytes);
  checkRange("dst", dst, lastIndex(a.dstOffset, a.shape, a.dstStrides), dstBytes);
  requireElem(exec.context().device(), a.src, "ops::permute");
  requireElem(exec.context().device(), a.dst, "ops::permute");
  // Whole 4-element vectors on both sides (contiguous innermost dimension, everything divisible by 4, ranges
  // aligned to the vector size): the vectorised kernel, which counts in vectors.
  const auto by4 = [](std::initializer_list<uint32_t> xs) {
    for (uint32_t x : xs)
      if (x % 4) return false;
    return true;
  };
  const bool vec4 = a.srcStrides[3] == 1 && a.dstStrides[3] == 1 &&
                    by4({a.shape[3], a.srcOffset, a.srcStrides[0], a.srcStrides[1], a.srcStrides[2],
                         a.dstOffset, a.dstStrides[0], a.dstStrides[1], a.dstStrides[2]}) &&
                    src.offset % (4 * srcBytes) == 0 && dst.offset % (4 * dstBytes) == 0;
  const uint32_t unit = vec4 ? 4 : 1;
  codegen::PermutePush push;
  push.total = static_cast<uint32_t>(total / unit);
  push.n1 = a.shape[1];
  push.n2 = a.shape[2];
  push.n3 = a.shape[3] / unit;
  push.srcOffset = a.srcOffset / unit;
  push.s0 = a.srcStrides[0] / unit;
  push.s1 = a.srcStrides[1] / unit;
  push.s2 = a.srcStrides[2] / unit;
  push.s3 = vec4 ? 1 : a.srcStrides[3];
  push.dstOffset = a.dstOffset / unit;
  push.d0 = a.dstStrides[0] / unit;
  push.d1 = a.dstStrides[1] / unit;
  push.d2 = a.dstStrides[2] / unit;
  push.d3 = vec4 ? 1 : a.dstStrides[3];
  const codegen::PermuteParams params{a.src, a.dst, a.accumulate, 256, vec4};
  const vk::Pipeline& pipe =
      exec.pipeline(params, [](const codegen::PermuteParams& p) { return codegen::generatePermute(p); });
  exec.dispatch(pipe, {{src, Access::Read}, {dst, a.accumulate ? Access::ReadWrite : Access::Write}}, push,
                {gridStrideGroups(exec.context(), total / unit, params.localSize), 1, 1});
}

} // namespace helios::ops
