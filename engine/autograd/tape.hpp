#pragma once
// The tape: ops (engine/autograd/ops.hpp) dispatch their forward kernels through the executor and, when the
// tape records and an input needs a gradient, push a closure that dispatches the backward kernels.
// backward() runs the closures in reverse order. Everything is recorded on the GPU timeline: no host round
// trips. Temporaries (activations, saved tensors, activation gradients) come from the Workspace, in the same
// order with the same sizes every step.
//
// Gradient accumulation rules (for op implementers): a gradient slot with no value yet is overwritten by its
// first writer (no fill needed) and accumulated into afterwards; parameter slots (persistent) are always
// accumulated into. The helpers below implement exactly that.
#include "engine/autograd/tensor.hpp"
#include "engine/autograd/workspace.hpp"
#include "engine/ops/executor.hpp"

#include <functional>
#include <string_view>
#include <vector>

namespace helios::autograd {

class Tape {
public:
  // recording = false: a no-grad tape (ops dispatch forward only; outputs carry no gradient slot).
  Tape(ops::Executor& exec, Workspace& workspace, bool recording = true)
      : exec_(exec), ws_(workspace), recording_(recording) {}
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  ops::Executor& exec() { return exec_; }
  Workspace& workspace() { return ws_; }
  bool recording() const { return recording_; }

  // A fresh tensor from the workspace; with grad = true (and a recording tape) it gets an empty grad slot.
  Tensor empty(std::vector<uint32_t> shape, DType dtype, bool grad, std::string_view what);
  vk::BufferRange allocate(VkDeviceSize bytes, std::string_view what) { return ws_.allocate(bytes, what); }
  // True when the tape records and any of the tensors needs a gradient.
  bool needsGrad(std::initializer_list<const Tensor*> inputs) const;

  void push(std::function<void()> backward) { closures_.push_back(std::move(backward)); }
  // Runs the recorded closures in reverse order, then forgets them.
  void backward();
  size_t size() const { return closures_.size(); }

  // --- helpers for backward closures -------------------------------------------------------------------
  // The gradient of an op's output, ready to read (zero-filled if nothing was written to it).
  vk::BufferRange gradOf(const Tensor& y);
  // Seeds y's gradient with an existing range (e.g. a checkpointed block's output gradient).
  void seedGrad(const Tensor& y, vk::BufferRange grad);
  // The slot's storage, allocated on first use.
  vk::BufferRange gradStorage(const Tensor& t);
  // For ops that can accumulate natively (GEMM beta, permute/embedding accumulate): the range to write and
  // whether to accumulate; marks the slot written.
  struct Target {
    vk::BufferRange range;
    bool accumulate = false;
  };
  Target target(const Tensor& t);
  // For ops that only overwrite: write into sink(t).range, then commit(t, sink) (adds a temporary if needed).
  struct Sink {
    vk::BufferRange range;
    bool direct = false;
  };
  Sink sink(const Tensor& t);
  void commit(const Tensor& t, const Sink& s);
  // t.grad += g. allowAlias: when the slot has no storage and no value, it takes `g` itself (no copy); only
  // for a `g` nobody writes to afterwards.
  void passGrad(const Tensor& t, vk::BufferRange g, bool allowAlias);
  // to.grad += from.grad without a copy where possible: a `to` with no gradient yet takes from's range
  // itself, shared (whichever sharer is written first while another may still be read gets a private copy).
  // For ops whose output gradient passes unchanged to inputs (add).
  void shareGrad(const Tensor& from, const Tensor& to);
  // The slot's storage for an op that writes or accumulates into it directly (copy-on-write if shared).
  vk::BufferRange gradForWrite(const Tensor& t);
  // y's gradient rounded to the 16-bit kind `half` (f16 or bf16: for a GEMM's 16-bit operand): cast once
  // and kept while valid, or the 16-bit gradient a producer passed with passGradHalf (no cast at all).
  vk::BufferRange gradOfHalf(const Tensor& y, DType half);
  // t.grad += g16 (of kind `half`, nobody writes it afterwards): kept so when it is t's first gradient,
  // widened to f32 only if something reads or adds to t's gradient in f32.
  void passGradHalf(const Tensor& t, vk::BufferRange g16, DType half);
  // t's gradient was just written in f32 by a kernel that also wrote its rounding to `half` into g16: kept
  // as the slot's 16-bit copy (gradOfHalf then casts nothing) until the next f32 write, and handed on with
  // the range to the slots that share it (shareGrad).
  void noteHalf(const Tensor& t, vk::BufferRange g16, DType half);

private:
  // Before writing into t's slot: a private copy if its range is shared with a slot still to be read.
  void prepareWrite(const Tensor& t);

  ops::Executor& exec_;
  Workspace& ws_;
  bool recording_;
  std::vector<std::function<void()>> closures_;
  std::vector<std::shared_ptr<GradSlot>> read_; // gradients read by the running closure (released after it)
};

} // namespace helios::autograd
