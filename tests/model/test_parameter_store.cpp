// The flat parameter store (engine/model/parameter_store.hpp): decay parameters first, every slice aligned
// and inside its group, slices disjoint, everything zeroed, and a GPT's groups covering exactly its
// parameters; bf16 values in groups of their own, uploaded rounded to nearest even and read back exactly.
#include "engine/model/gpt.hpp"
#include "engine/model/parameter_store.hpp"
#include "support/device_io.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
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

model::GptConfig smallGpt() {
  model::GptConfig c;
  c.layers = 2;
  c.dim = 32;
  c.heads = 2;
  c.vocab = 50;
  c.context = 16;
  return c;
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
  model::GptConfig c = smallGpt();
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

TEST_CASE("parameter store: bf16 values get groups of their own, aligned, rounded on upload",
          "[parameter_store][bf16]") {
  std::vector<model::Parameter> params = {param("a", 7, true), param("b", 33, false), param("c", 5, true),
                                          param("d", 3, true)};
  params[0].dtype = params[2].dtype = codegen::Elem::BF16;
  model::ParameterStore store;
  store.build(ctx(), params);
  const auto& groups = store.groups();
  REQUIRE(groups.size() == 3); // decay f32 (d), decay bf16 (a, c), no decay (b)
  CHECK(groups[0].dtype == codegen::Elem::F32);
  CHECK(groups[1].dtype == codegen::Elem::BF16);
  CHECK(groups[1].decay);
  CHECK(groups[1].elements % 2 == 0);
  CHECK(groups[1].data.size == 2ull * groups[1].elements);
  CHECK(groups[1].m.size == 4ull * groups[1].elements);
  const uint64_t align = ctx().allocator().alignment();
  for (int i : {0, 2}) {
    const model::Parameter& p = params[size_t(i)];
    INFO(p.name);
    CHECK(p.data.range().buffer == groups[1].data.buffer);
    CHECK(p.data.range().size == 2ull * p.elements);
    CHECK(p.data.range().offset % align == 0);
    CHECK(p.grad.range().offset % align == 0);
    CHECK((p.grad.range().offset - groups[1].grad.offset) ==
          2 * (p.data.range().offset - groups[1].data.offset));
  }
  // bf16's spacing at 1 is 2^-7: 1 + 2^-8 and 1 + 3 * 2^-8 are halfway cases (to even: 1 and 1 + 2^-6);
  // -0 and inf are kept, bf16 values exactly.
  const std::vector<float> values{
      1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -0.0f, INFINITY, 0.15625f, 3.0f, -2.5f};
  model::uploadValues(ctx(), params[0], values);
  const std::vector<float> back = model::downloadValues(ctx(), params[0]);
  const std::vector<float> rounded{1.0f, 1.0f + 1.0f / 64, -0.0f, INFINITY, 0.15625f, 3.0f, -2.5f};
  CHECK(back == rounded);
  CHECK(std::signbit(back[2]));
  CHECK_THROWS(model::uploadValues(ctx(), params[0], std::vector<float>(8, 1.0f)));
}

TEST_CASE("parameter store: a GPT with bf16 parameters stores exactly its GEMM weights in bf16",
          "[parameter_store][bf16]") {
  model::GptConfig c = smallGpt();
  c.paramDtype = codegen::Elem::BF16;
  CHECK_THROWS_WITH(model::Gpt(ctx(), c, 1), Catch::Matchers::ContainsSubstring("bf16 precision"));
  c.precision = model::Precision::BF16;
  model::Gpt gpt(ctx(), c, 1);
  for (const auto& p : gpt.parameters()) {
    INFO(p.name);
    CHECK((p.dtype == codegen::Elem::BF16) == (p.decay && p.shape.size() == 2));
  }
  CHECK(gpt.parameters()[0].dtype == codegen::Elem::BF16); // wte
  CHECK(gpt.parameters()[1].dtype == codegen::Elem::F32);  // wpe
  CHECK(gpt.parameterGroups().size() == 2);
  CHECK(gpt.parameterGroups()[0].dtype == codegen::Elem::BF16);
  CHECK(gpt.parameterGroups()[1].dtype == codegen::Elem::F32);
}
