#include "engine/ops/operand_shapes.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace helios::ops {

namespace {

std::string shapeText(const std::vector<uint64_t>& s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

[[noreturn]] void refuse(std::string_view who, const std::string& why) {
  throw std::invalid_argument(who.empty() ? why : fmt::format("{}: {}", who, why));
}

// A size the kernels index with 32 bits.
uint32_t size32(uint64_t v, const char* what, std::string_view who) {
  if (v == 0 || v > 0x7fffffffu) refuse(who, fmt::format("{} = {} is out of range (1 .. 2^31-1)", what, v));
  return static_cast<uint32_t>(v);
}

} // namespace

MatmulSizes matmulSizes(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b, bool transA,
                        bool transB, std::string_view who) {
  if (a.size() < 2 || a.size() > 3 || b.size() < 2 || b.size() > 3)
    refuse(who, fmt::format("A {} and B {} must be matrices or batches of matrices (2 or 3 dimensions)",
                            shapeText(a), shapeText(b)));
  const uint64_t batchA = a.size() == 3 ? a[0] : 1, batchB = b.size() == 3 ? b[0] : 1;
  if (batchA != batchB && batchA != 1 && batchB != 1)
    refuse(who, fmt::format("batch sizes differ: A {}, B {}", shapeText(a), shapeText(b)));
  const uint64_t ar = a[a.size() - 2], ac = a.back(), br = b[b.size() - 2], bc = b.back();
  const uint64_t M = transA ? ac : ar, K = transA ? ar : ac;
  const uint64_t KB = transB ? bc : br, N = transB ? br : bc;
  if (K != KB)
    refuse(who, fmt::format("inner dimensions differ: op(A) is {}x{}, op(B) is {}x{} (A {}{}, B {}{})", M, K,
                            KB, N, shapeText(a), transA ? " transposed" : "", shapeText(b),
                            transB ? " transposed" : ""));
  MatmulSizes s;
  const uint64_t batch = std::max(batchA, batchB);
  s.outShape = a.size() == 3 || b.size() == 3 ? std::vector<uint64_t>{batch, M, N} : std::vector{M, N};
  MatmulArgs& args = s.args;
  args.M = size32(M, "M", who);
  args.N = size32(N, "N", who);
  args.K = size32(K, "K", who);
  args.batch = size32(batch, "batch", who);
  args.transA = transA;
  args.transB = transB;
  if (batch > 1) {
    args.strideA = batchA == 1 ? 0u : args.M * args.K;
    args.strideB = batchB == 1 ? 0u : args.K * args.N;
  }
  return s;
}

AttentionShape attentionSizes(const std::vector<uint64_t>& q, const std::vector<uint64_t>& k,
                              const std::vector<uint64_t>& v, bool causal, float scale,
                              std::string_view who) {
  if (q.size() != 4 || k.size() != 4 || v != k)
    refuse(who, fmt::format("q {}, k {}, v {} must be [batch, heads, tokens, headDim], with v shaped as k",
                            shapeText(q), shapeText(k), shapeText(v)));
  if (q[0] != k[0] || q[3] != k[3])
    refuse(who, fmt::format("q {} and k {} differ in batch or head dim", shapeText(q), shapeText(k)));
  if (k[1] == 0 || q[1] % k[1] != 0)
    refuse(who,
           fmt::format("q's {} heads are not a multiple of k's {} (grouped-query attention)", q[1], k[1]));
  AttentionShape s;
  s.batch = size32(q[0], "batch", who);
  s.heads = size32(q[1], "heads", who);
  s.kvHeads = size32(k[1], "kv heads", who);
  s.Tq = size32(q[2], "query tokens", who);
  s.Tk = size32(k[2], "key tokens", who);
  s.headDim = size32(q[3], "head dim", who);
  s.causal = causal;
  s.scale = scale != 0.0f ? scale : static_cast<float>(1.0 / std::sqrt(double(s.headDim)));
  return s;
}

} // namespace helios::ops
