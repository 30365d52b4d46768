#include "targets.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "engine/tuning/values.hpp"

namespace helios::tune {

namespace {

AttentionTarget parseAttention(const std::string& entry, std::string t) {
  AttentionTarget a;
  const auto bad = [&] {
    throw std::invalid_argument("--shapes entry '" + entry + "': expected attn:B<n>H<n>S<n>D<n>[c|d]");
  };
  if (!t.empty() && (t.back() == 'c' || t.back() == 'd')) {
    a.causal = t.back() == 'c';
    t.pop_back();
  }
  for (const char key : {'B', 'H', 'S', 'D'}) {
    if (t.empty() || t[0] != key) bad();
    size_t n = 1;
    while (n < t.size() && std::isdigit(static_cast<unsigned char>(t[n])))
      ++n;
    if (n == 1 || n > 7) bad();
    const uint32_t v = static_cast<uint32_t>(std::stoul(t.substr(1, n - 1)));
    if (!v) bad();
    (key == 'B' ? a.batch : key == 'H' ? a.heads : key == 'S' ? a.seq : a.headDim) = v;
    t = t.substr(n);
  }
  if (!t.empty()) bad();
  return a;
}

// Adds `x` once, counting `n` more runs of it.
template <class T>
void addOnce(std::vector<T>& v, std::vector<uint32_t>& counts, const T& x, uint32_t n = 1) {
  const auto it = std::find(v.begin(), v.end(), x);
  if (it != v.end()) {
    counts[size_t(it - v.begin())] += n;
    return;
  }
  v.push_back(x);
  counts.push_back(n);
}

} // namespace

Targets parseTargets(const std::string& list) {
  Targets t;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = list.find(',', at);
    const std::string entry = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? list.size() + 1 : comma + 1;
    if (entry.empty()) continue;
    if (entry.starts_with("gemm:")) {
      std::string s = entry.substr(5);
      std::transform(s.begin(), s.begin() + std::min<size_t>(2, s.size()), s.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      addOnce(t.gemms, t.gemmCounts, tuning::parseGemmShape("--shapes entry '" + entry + "'", s));
    } else if (entry.starts_with("attn:")) {
      addOnce(t.attention, t.attentionCounts, parseAttention(entry, entry.substr(5)));
    } else {
      throw std::invalid_argument("--shapes entry '" + entry + "': expected gemm:... or attn:...");
    }
  }
  return t;
}

Targets trainingTargets(const train::TrainConfig& c) {
  Targets t;
  const model::GptConfig& g = c.gpt;
  const uint32_t tokens = c.batch * c.seqLen, d = g.dim, hidden = g.mlpWidth();
  const uint32_t heads = std::max(g.heads, 1u), D = g.headDim ? g.headDim : d / heads;
  const uint32_t kv = g.kvHeads ? g.kvHeads : heads;
  const uint32_t vocab = g.vocab ? g.vocab : 256;
  const bool f16 = codegen::isHalf(model::halfOf(g.precision)); // 16-bit GEMM outputs (f16 or bf16)
  // y = x W (x: tokens x in, W: in x out); dx = dy W^T (NT); dW = x^T dy (TN, f32 sums).
  const auto projection = [&](uint32_t in, uint32_t out, uint32_t n) {
    addOnce(t.gemms, t.gemmCounts, tuning::GemmShape{tokens, out, in, 1, false, false, f16}, n);
    addOnce(t.gemms, t.gemmCounts, tuning::GemmShape{tokens, in, out, 1, false, true, f16}, n);
    addOnce(t.gemms, t.gemmCounts, tuning::GemmShape{in, out, tokens, 1, true, false, false}, n);
  };
  const uint32_t layers = std::max(g.layers, 1u);
  projection(d, (heads + 2 * kv) * D, layers);                               // packed QKV
  projection(heads * D, d, layers);                                          // attention output
  projection(d, hidden, layers * (g.mlp == model::MlpKind::SwiGLU ? 2 : 1)); // fc, or gate and up
  projection(hidden, d, layers);
  projection(d, vocab, 1); // the head
  t.attention.push_back({c.batch, heads, c.seqLen, D, true});
  t.attentionCounts.push_back(layers);
  return t;
}

double gemmFlops(const tuning::GemmShape& s) {
  return 2.0 * s.m * s.n * s.k * s.batch;
}

double attentionFlops(const AttentionTarget& t, bool backward) {
  const double forward = 4.0 * t.batch * t.heads * double(t.seq) * t.seq * t.headDim * (t.causal ? 0.5 : 1.0);
  return backward ? 2.5 * forward : forward;
}

} // namespace helios::tune
