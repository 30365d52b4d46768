#include "engine/model/operand_copies.hpp"

#include "engine/autograd/ops.hpp"
#include "engine/ops/elementwise.hpp"

#include <algorithm>
#include <stdexcept>

namespace helios::model::detail {

OperandCopyPlan planOperandCopies(const std::vector<CopySlice>& slices, uint64_t alignment) {
  OperandCopyPlan plan;
  std::vector<uint32_t> groups;
  for (const CopySlice& s : slices)
    if (std::find(groups.begin(), groups.end(), s.group) == groups.end()) groups.push_back(s.group);
  for (uint32_t g : groups) {
    uint64_t first = UINT64_MAX, end = 0;
    for (const CopySlice& s : slices)
      if (s.group == g) {
        first = std::min(first, s.offset);
        end = std::max(end, s.offset + s.bytes);
      }
    // The span starts at the first slice, so every view's offset is half the slice's distance from it.
    const size_t span = plan.spans.size();
    bool used = false;
    for (const CopySlice& s : slices) {
      if (s.group != g) continue;
      const uint64_t at = (s.offset - first) / 2;
      if (at % alignment != 0 || s.offset % 4 != 0) {
        plan.alone.push_back(s.param);
        continue;
      }
      plan.views.push_back({s.param, span, at, s.bytes / 2});
      used = true;
    }
    if (used) plan.spans.push_back({g, first, end - first});
  }
  return plan;
}

namespace {

// The wanted parameters that live in an f32 group, as slices; the rest are cast alone.
std::vector<CopySlice> slicesOf(const ParameterTable& table, const std::vector<int>& wanted,
                                std::vector<int>& alone) {
  const std::vector<ParameterGroup>& groups = table.groups();
  std::vector<CopySlice> slices;
  for (int i : wanted) {
    const Parameter* p = table.trainableParameter(i);
    const vk::BufferRange r = p ? p->data.range() : vk::BufferRange{};
    auto g = std::find_if(groups.begin(), groups.end(), [&](const ParameterGroup& pg) {
      return p && p->dtype == codegen::Elem::F32 && pg.dtype == codegen::Elem::F32 &&
             pg.data.buffer == r.buffer;
    });
    if (g == groups.end()) {
      alone.push_back(i);
      continue;
    }
    slices.push_back({i, uint32_t(g - groups.begin()), r.offset - g->data.offset, r.size});
  }
  return slices;
}

} // namespace

std::vector<autograd::Tensor> operandCopies(autograd::Tape& tape, const ParameterTable& table,
                                            const std::vector<int>& wanted, autograd::DType half) {
  if (!codegen::isHalf(half)) throw std::logic_error("operandCopies: f32 is no 16-bit kind");
  std::vector<autograd::Tensor> out(table.size());
  std::vector<int> alone;
  const std::vector<CopySlice> slices = slicesOf(table, wanted, alone);
  const uint64_t alignment = tape.exec().context().device().limits().minStorageBufferOffsetAlignment;
  OperandCopyPlan plan = planOperandCopies(slices, std::max<uint64_t>(alignment, 4));
  plan.alone.insert(plan.alone.end(), alone.begin(), alone.end());
  std::vector<vk::BufferRange> copies;
  for (const CopySpan& s : plan.spans) {
    const vk::BufferRange src = vk::subrange(table.groups()[s.group].data, s.offset, s.bytes);
    copies.push_back(tape.allocate(s.bytes / 2, "operand copies"));
    ops::cast(tape.exec(), src, copies.back(), uint32_t(s.bytes / 4), codegen::Elem::F32, half);
  }
  for (const CopyView& v : plan.views) {
    autograd::Tensor t = table.tensor(v.param);
    t.dtype = half;
    t.data = vk::subrange(copies[v.span], v.offset, v.bytes);
    if (!tape.recording()) t.gradSlot = nullptr; // as autograd::cast leaves it
    out[size_t(v.param)] = t;
  }
  for (int i : plan.alone)
    out[size_t(i)] = autograd::cast(tape, table.tensor(i), half);
  return out;
}

} // namespace helios::model::detail
