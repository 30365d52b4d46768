// Autograd elementwise ops: casts, add (gradient shared, not copied), broadcast add, mul, activations.
#include "engine/autograd/ops.hpp"

#include "engine/autograd/op_helpers.hpp"
#include "engine/ops/elementwise.hpp"
#include <stdexcept>
#include <string>

namespace helios::autograd {

using namespace detail;

Tensor cast(Tape& tape, const Tensor& x, DType to) {
  if (x.dtype == to) return x;
  if (codegen::isHalf(x.dtype) && codegen::isHalf(to))
    throw std::invalid_argument(std::string("autograd::cast: ") + codegen::elemName(x.dtype) + " -> " +
                                codegen::elemName(to) + " (casts go through f32)");
  Tensor y;
  y.shape = x.shape;
  y.dtype = to;
  y.data = tape.allocate(y.bytes(), "cast");
  ops::cast(tape.exec(), x.data, y.data, x.count(), x.dtype, to);
  if (tape.recording()) y.gradSlot = x.gradSlot;
  return y;
}

Tensor add(Tape& tape, const Tensor& a, const Tensor& b) {
  requireF32("add", a);
  requireF32("add", b);
  requireSameCount("add", a, b);
  const bool grad = tape.needsGrad({&a, &b});
  Tensor y = tape.empty(a.shape, DType::F32, grad, "add");
  ops::add(tape.exec(), a.data, b.data, y.data, a.count());
  if (grad)
    tape.push([&tape, a, b, y] {
      tape.shareGrad(y, a); // both take dy itself; a later writer copies first if it must
      tape.shareGrad(y, b);
    });
  return y;
}

Tensor addBroadcast(Tape& tape, const Tensor& x, const Tensor& b) {
  requireF32("addBroadcast", x);
  requireF32("addBroadcast", b);
  const uint32_t cols = b.count();
  if (cols == 0 || x.elements() % cols != 0)
    throw std::invalid_argument("autograd::addBroadcast: x is not a whole number of rows of b");
  const uint32_t rows = static_cast<uint32_t>(x.elements() / cols);
  const bool grad = tape.needsGrad({&x, &b});
  Tensor y = tape.empty(x.shape, DType::F32, grad, "addBroadcast");
  ops::biasAdd(tape.exec(), x.data, b.data, y.data, rows, cols);
  if (grad)
    tape.push([&tape, x, b, y, rows, cols] {
      const vk::BufferRange dy = tape.gradOf(y);
      if (b.requiresGrad()) columnSumInto(tape, b, dy, rows, cols);
      tape.passGrad(x, dy, true);
    });
  return y;
}

Tensor mul(Tape& tape, const Tensor& a, const Tensor& b) {
  requireF32("mul", a);
  requireF32("mul", b);
  requireSameCount("mul", a, b);
  const bool grad = tape.needsGrad({&a, &b});
  Tensor y = tape.empty(a.shape, DType::F32, grad, "mul");
  ops::mul(tape.exec(), a.data, b.data, y.data, a.count());
  if (grad)
    tape.push([&tape, a, b, y] {
      const vk::BufferRange dy = tape.gradOf(y);
      if (a.requiresGrad()) {
        const Tape::Sink s = tape.sink(a);
        ops::mul(tape.exec(), dy, b.data, s.range, a.count());
        tape.commit(a, s);
      }
      if (b.requiresGrad()) {
        const Tape::Sink s = tape.sink(b);
        ops::mul(tape.exec(), dy, a.data, s.range, b.count());
        tape.commit(b, s);
      }
    });
  return y;
}

namespace {

// activation() on a 16-bit x: forward and backward on that storage (f32 arithmetic), gradients in it too.
Tensor activationHalf(Tape& tape, ops::Activation act, const Tensor& x, DType out) {
  const DType h = x.dtype;
  if (out != h)
    throw std::invalid_argument(std::string("autograd::activation: a ") + codegen::elemName(h) +
                                " x gives a " + codegen::elemName(h) + " y");
  const bool grad = tape.needsGrad({&x});
  Tensor y = tape.empty(x.shape, h, grad, "activation");
  ops::activation(tape.exec(), act, x.data, y.data, x.count(), h);
  if (grad)
    tape.push([&tape, act, x, y, h] {
      const vk::BufferRange dy16 = tape.gradOfHalf(y, h);
      const vk::BufferRange dx16 = tape.allocate(x.elements() * 2, "activation gradient 16-bit");
      ops::activationBackward(tape.exec(), act, x.data, dy16, dx16, x.count(), h);
      tape.passGradHalf(x, dx16, h);
    });
  return y;
}

} // namespace

Tensor activation(Tape& tape, ops::Activation act, const Tensor& x, DType out, bool halfGrad) {
  if (codegen::isHalf(x.dtype)) return activationHalf(tape, act, x, out);
  if (halfGrad && !codegen::isHalf(out))
    throw std::invalid_argument("autograd::activation: halfGrad hands x's gradient back in y's 16-bit kind");
  const bool grad = tape.needsGrad({&x});
  Tensor y = tape.empty(x.shape, out, grad, "activation");
  if (codegen::isHalf(out))
    ops::activationToHalf(tape.exec(), act, x.data, y.data, x.count(), out);
  else
    ops::activation(tape.exec(), act, x.data, y.data, x.count());
  if (grad)
    tape.push([&tape, act, x, y, halfGrad, out] {
      const vk::BufferRange dy = tape.gradOf(y);
      if (halfGrad && gradStillEmpty(x)) {
        const vk::BufferRange dx16 = tape.allocate(x.elements() * 2, "activation gradient 16-bit");
        ops::activationBackwardToHalf(tape.exec(), act, x.data, dy, dx16, x.count(), out);
        tape.passGradHalf(x, dx16, out);
        return;
      }
      const Tape::Sink s = tape.sink(x);
      ops::activationBackward(tape.exec(), act, x.data, dy, s.range, x.count());
      tape.commit(x, s);
    });
  return y;
}

} // namespace helios::autograd
