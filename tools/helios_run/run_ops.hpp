#pragma once
// helios-run's ops: each reads .npy arrays, checks shapes and dtypes, runs on the device and returns the
// arrays to write. Nothing is written until every check and the GPU run have succeeded.
#include "engine/io/npy.hpp"
#include "engine/vk/context.hpp"

#include <map>
#include <optional>
#include <string>

namespace helios::run {

class UsageError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct MatmulOptions {
  std::string a, b, c, bias;
  float alpha = 1.0f, beta = 0.0f;
  bool transposeA = false, transposeB = false, gelu = false;
  std::string kernel = "auto";
  std::string outDtype; // "" = f32, or f16 when both inputs are f16 and asked for
};
struct RowOptions {
  std::string x, gamma, beta;
  float eps = 1e-5f, scale = 1.0f;
  bool causal = false;
};
struct AttentionOptions {
  std::string q, k, v;
  bool causal = false;
  float scale = 0.0f; // 0 = 1/sqrt(D)
  std::string kernel = "fallback";
};
struct CrossEntropyOptions {
  std::string logits, targets;
  float gradScale = 0.0f; // 0 = 1/rows
  bool wantGrad = false;
};

io::NpyArray runMatmul(vk::Context& ctx, const MatmulOptions& o);
io::NpyArray runSoftmax(vk::Context& ctx, const RowOptions& o);
io::NpyArray runLayerNorm(vk::Context& ctx, const RowOptions& o);
io::NpyArray runGelu(vk::Context& ctx, const RowOptions& o);
// q (B, H, Tq, D), k and v (B, Hkv, Tk, D), float32 -> (B, H, Tq, D): fused attention.
io::NpyArray runAttention(vk::Context& ctx, const AttentionOptions& o);
// {"loss": per-row losses, "grad": dlogits (when wanted)}
std::map<std::string, io::NpyArray> runCrossEntropy(vk::Context& ctx, const CrossEntropyOptions& o);

} // namespace helios::run
