#include "engine/tuning/tuning.hpp"

#include <algorithm>

namespace helios::tuning {

const GemmChoice* findGemm(const Tuning& t, const GemmShape& s) {
  const auto& v = t.gemm.shapes.value;
  const auto it = std::find_if(v.begin(), v.end(), [&](const GemmChoice& c) { return c.shape == s; });
  return it == v.end() ? nullptr : &*it;
}

const AttentionChoice* findAttention(const Tuning& t, AttentionPassId pass, uint32_t headDim, bool causal) {
  const auto& v = t.attention.shapes.value;
  const auto it = std::find_if(v.begin(), v.end(), [&](const AttentionChoice& c) {
    return c.pass == pass && c.headDim == headDim && c.causal == causal;
  });
  return it == v.end() ? nullptr : &*it;
}

void putGemm(Tuning& t, const GemmChoice& c, Source source) {
  auto& v = t.gemm.shapes.value;
  std::erase_if(v, [&](const GemmChoice& e) { return e.shape == c.shape; });
  v.push_back(c);
  t.gemm.shapes.source = source;
}

void putAttention(Tuning& t, const AttentionChoice& c, Source source) {
  auto& v = t.attention.shapes.value;
  std::erase_if(v, [&](const AttentionChoice& e) {
    return e.pass == c.pass && e.headDim == c.headDim && e.causal == c.causal;
  });
  v.push_back(c);
  t.attention.shapes.source = source;
}

} // namespace helios::tuning
