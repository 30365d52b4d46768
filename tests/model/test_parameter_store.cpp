// The flat parameter store (engine/model/parameter_store.hpp): decay parameters first, every slice aligned
// and inside its group, slices disjoint, everything zeroed, and a GPT's groups covering exactly its
// parameters.
#include "engine/model/gpt.hpp"
#include "engine/model/parameter_store.hpp"
#include "support/device_io.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <vector>

using namespace helios;
using helios::test::ctx;

namespace {

model::Parameter param(const char* name, uint32_t elements, bool decay) {
  model::Parameter p;
  p.name = name;
  p.shape = {elements};
  p.elements = elements;
  p.decay = decay;
  return p;
}

} // namespace

TEST_CASE("parameter store: groups by decay, aligned disjoint slices, zeroed", "[parameter_store]") {
  std::vector<model::Parameter> params = {param("a", 7, true), param("b", 33, false), param("c", 1, true),
                                          param("d", 513, false), param("e", 127, true)};
  model::ParameterStore store;
  store.build(ctx(), params);
  const auto& groups = store.groups();
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].decay);
  CHECK_FALSE(groups[1].decay);
  const uint64_t align = ctx().allocator().alignment();
  for (const auto& p : params) {
    INFO(p.name);
    const auto& g = groups[p.decay ? 0 : 1];
    const vk::BufferRange d = p.data.range();
    CHECK(d.buffer == g.data.buffer);
    CHECK(d.size == uint64_t(p.elements) * 4);
    CHECK(d.offset % align == 0);
    CHECK(d.offset >= g.data.offset);
    CHECK(d.offset + d.size <= g.data.offset + g.data.size);
    CHECK(p.grad.range().offset - g.grad.offset == d.offset - g.data.offset); // same place in every buffer
    CHECK(p.m.range().offset - g.m.offset == d.offset - g.data.offset);
    CHECK(p.v.range().offset - g.v.offset == d.offset - g.data.offset);
    CHECK(ctx().downloadVector<float>(p.m, p.elements) == std::vector<float>(p.elements, 0.0f));
  }
  for (size_t i = 0; i < params.size(); ++i)
    for (size_t j = i + 1; j < params.size(); ++j) {
      const auto a = params[i].data.range(), b = params[j].data.range();
      CHECK((a.buffer != b.buffer || a.offset + a.size <= b.offset || b.offset + b.size <= a.offset));
    }
  // A slice bounds its own uploads.
  CHECK_THROWS(ctx().uploadVector(params[0].data, std::vector<float>(8, 1.0f)));
}

TEST_CASE("parameter store: a GPT's groups hold exactly its parameters", "[parameter_store]") {
  model::GptConfig c;
  c.layers = 2;
  c.dim = 32;
  c.heads = 2;
  c.vocab = 50;
  c.context = 16;
  model::Gpt gpt(ctx(), c, 1);
  uint64_t decay = 0, rest = 0, groupFloats = 0;
  for (const auto& p : gpt.parameters())
    (p.decay ? decay : rest) += p.elements;
  for (const auto& g : gpt.parameterGroups())
    groupFloats += g.elements;
  CHECK(decay > 0);
  CHECK(rest > 0);
  CHECK(groupFloats >= decay + rest);
  CHECK(groupFloats < decay + rest + gpt.parameters().size() * ctx().allocator().alignment() / 4);
  CHECK(gpt.parameterGroups().size() == 2);
}
