// Activation checkpointing: a block recorded forward-only, recomputed on its own tape in the backward.
#include "engine/autograd/ops.hpp"

#include <functional>
#include <stdexcept>

namespace helios::autograd {

Tensor checkpoint(Tape& tape, const Tensor& x, const std::function<Tensor(Tape&, const Tensor&)>& fn) {
  if (!tape.recording()) return fn(tape, x);
  Workspace& ws = tape.workspace();
  Tensor y = tape.empty(x.shape, DType::F32, true, "checkpoint output");
  {
    const Workspace::Mark mark = ws.mark();
    Tape inner(tape.exec(), ws, false);
    const Tensor yi = fn(inner, Tensor::constant(x.data, x.shape, x.dtype));
    if (yi.elements() != x.elements() || yi.dtype != DType::F32)
      throw std::logic_error("autograd::checkpoint: fn must return an f32 tensor shaped like its input");
    ops::copy(tape.exec(), yi.data, y.data, y.count());
    ws.rewind(mark);
  }
  tape.push([&tape, x, y, fn] {
    if (x.requiresGrad()) tape.gradStorage(x); // outlives the recomputation below
    const vk::BufferRange dy = tape.gradOf(y);
    Workspace& w = tape.workspace();
    const Workspace::Mark mark = w.mark();
    {
      Tape inner(tape.exec(), w, true);
      const Tensor yi = fn(inner, x);
      if (!yi.requiresGrad())
        throw std::logic_error("autograd::checkpoint: the recomputed output has no gradient");
      inner.seedGrad(yi, dy);
      inner.backward();
    }
    w.rewind(mark);
  });
  return y;
}

} // namespace helios::autograd
