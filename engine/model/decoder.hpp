#pragma once
// Incremental decoding of a model::Gpt with a KV cache: the prompt runs once (all its tokens in one call),
// then each new token runs alone, its attention reading the keys and values of every earlier position from
// the cache instead of recomputing them. The cache holds `window` positions per layer ([kvHeads, window, D]
// for K and for V, f32); a feed beyond it is refused (the caller starts over with a shorter prefix).
// Decoding runs in f32 from the master weights whatever the model's training precision, with the forward
// pass's kernels (fused bias + GELU GEMM, the f32 attention fallback), so greedy decoding picks the tokens a
// full-window forward picks. RoPE rotates each new query and key at its position (the cache holds rotated
// keys). bf16 parameters are not supported (unsupported() says so).
#include "engine/graph/arena.hpp"
#include "engine/model/gpt.hpp"

#include <string>

namespace helios::model {

class GptDecoder {
public:
  // Why `c` cannot be decoded incrementally ("" when it can).
  static std::string unsupported(const GptConfig& c);

  // Keeps references to gpt's parameters: the model must outlive the decoder. window <= context.
  GptDecoder(vk::Context& ctx, Gpt& gpt, uint32_t window);
  ~GptDecoder();

  // Runs tokens[0, n) (int32) at positions [length(), length() + n) and writes the logits of the last one
  // (vocab f32) to logitsOut. Throws std::invalid_argument when length() + n exceeds the window.
  void feed(ops::Executor& exec, graph::StepArena& arena, const vk::BufferRange& tokens, uint32_t n,
            const vk::BufferRange& logitsOut);
  uint32_t length() const { return length_; }
  uint32_t window() const { return window_; }
  void reset() { length_ = 0; } // forget the cached positions

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint32_t window_ = 0, length_ = 0;
};

} // namespace helios::model
