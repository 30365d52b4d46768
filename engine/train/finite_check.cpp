#include "engine/train/finite_check.hpp"

#include "engine/ops/elementwise.hpp"
#include "engine/ops/optim_step.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>

namespace helios::train {

namespace {

enum Kind { kWeights, kFirstMoment, kSecondMoment, kKinds };

const char* describe(int kind) {
  static constexpr std::array<const char*, kKinds> names{"the weights", "Adam's first moment (m)",
                                                         "Adam's second moment (v)"};
  return names[kind];
}

const vk::BufferRange& bufferOf(const model::ParameterGroup& g, int kind) {
  return kind == kWeights ? g.data : kind == kFirstMoment ? g.m : g.v;
}

const vk::BufferSlice& sliceOf(const model::Parameter& p, int kind) {
  return kind == kWeights ? p.data : kind == kFirstMoment ? p.m : p.v;
}

// The tensors of one kind holding a non-finite value (host read-back: the failure path only).
void nameTensors(vk::Context& ctx, Model& model, int kind, std::vector<std::string>& out) {
  for (auto& p : model.parameters()) {
    const auto v = kind == kWeights ? model::downloadValues(ctx, p)
                                    : ctx.downloadVector<float>(sliceOf(p, kind), p.elements);
    for (float x : v)
      if (!std::isfinite(x)) {
        out.push_back(fmt::format("{} of '{}'", describe(kind), p.name));
        break;
      }
  }
}

} // namespace

std::vector<std::string> nonFiniteState(vk::Context& ctx, graph::GraphExecutor& graph, Model& model) {
  const auto& groups = model.parameterGroups();
  std::vector<uint32_t> first; // first partial slot of (group, kind)
  uint32_t slots = 0;
  for (const auto& g : groups)
    for (int k = 0; k < kKinds; ++k) {
      first.push_back(slots);
      slots += ops::gradSumsqSlots(g.elements);
    }
  if (slots == 0) return {};
  vk::Buffer partials = ctx.buffer(4ull * slots, "finite-check partials");
  // bf16 weights are summed from an f32 copy (exact: widening keeps every value and its finiteness).
  uint32_t widest = 0;
  for (const auto& g : groups)
    if (g.dtype != codegen::Elem::F32) widest = std::max(widest, g.elements);
  vk::Buffer widened;
  if (widest != 0) widened = ctx.buffer(4ull * widest, "finite-check widened weights");
  for (size_t i = 0; i < groups.size(); ++i)
    for (int k = 0; k < kKinds; ++k) {
      vk::BufferRange values = bufferOf(groups[i], k);
      if (k == kWeights && groups[i].dtype != codegen::Elem::F32) {
        const vk::BufferRange f32 = vk::subrange(widened.range(), 0, 4ull * groups[i].elements);
        ops::cast(graph, values, f32, groups[i].elements, groups[i].dtype, codegen::Elem::F32);
        values = f32;
      }
      ops::gradSumsq(graph, values, groups[i].elements, partials.range(), first[i * kKinds + k]);
    }
  std::vector<float> sums(slots);
  graph.download(partials, std::as_writable_bytes(std::span<float>(sums)));
  graph.flush();
  std::array<bool, kKinds> bad{};
  for (size_t i = 0; i < groups.size(); ++i)
    for (int k = 0; k < kKinds; ++k) {
      const uint32_t begin = first[i * kKinds + k], n = ops::gradSumsqSlots(groups[i].elements);
      for (uint32_t s = begin; s < begin + n; ++s)
        bad[k] = bad[k] || !std::isfinite(sums[s]);
    }
  std::vector<std::string> out;
  for (int k = 0; k < kKinds; ++k)
    if (bad[k]) {
      const size_t before = out.size();
      nameTensors(ctx, model, k, out);
      if (out.size() == before) // the square of a finite value overflowed
        out.push_back(fmt::format("{} (a value beyond 1.8e19 in magnitude)", describe(k)));
    }
  return out;
}

} // namespace helios::train
