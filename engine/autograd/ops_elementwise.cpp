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
  Tensor y;
  y.shape = x.shape;
  y.dtype = to;
  y.data = tape.allocate(y.bytes(), "cast");
  if (to == DType::F16)
    ops::castF32ToF16(tape.exec(), x.data, y.data, x.count());
  else
    ops::castF16ToF32(tape.exec(), x.data, y.data, x.count());
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

// activation() on an f16 x: forward and backward on f16 storage (f32 arithmetic), gradients in f16.
Tensor activationF16(Tape& tape, ops::Activation act, const Tensor& x, DType out) {
  if (out != DType::F16) throw std::invalid_argument("autograd::activation: an f16 x gives an f16 y");
  const bool grad = tape.needsGrad({&x});
  Tensor y = tape.empty(x.shape, DType::F16, grad, "activation");
  ops::activation(tape.exec(), act, x.data, y.data, x.count(), ops::EwType::F16);
  if (grad)
    tape.push([&tape, act, x, y] {
      const vk::BufferRange dy16 = tape.gradOfF16(y);
      const vk::BufferRange dx16 = tape.allocate(x.elements() * 2, "activation gradient f16");
      ops::activationBackward(tape.exec(), act, x.data, dy16, dx16, x.count(), ops::EwType::F16);
      tape.passGradF16(x, dx16);
    });
  return y;
}

} // namespace

Tensor activation(Tape& tape, ops::Activation act, const Tensor& x, DType out, bool f16Grad) {
  if (x.dtype == DType::F16) return activationF16(tape, act, x, out);
  const bool grad = tape.needsGrad({&x});
  Tensor y = tape.empty(x.shape, out, grad, "activation");
  if (out == DType::F16)
    ops::activationToF16(tape.exec(), act, x.data, y.data, x.count());
  else
    ops::activation(tape.exec(), act, x.data, y.data, x.count());
  if (grad)
    tape.push([&tape, act, x, y, f16Grad] {
      const vk::BufferRange dy = tape.gradOf(y);
      if (f16Grad && gradStillEmpty(x)) {
        const vk::BufferRange dx16 = tape.allocate(x.elements() * 2, "activation gradient f16");
        ops::activationBackwardToF16(tape.exec(), act, x.data, dy, dx16, x.count());
        tape.passGradF16(x, dx16);
        return;
      }
      const Tape::Sink s = tape.sink(x);
      ops::activationBackward(tape.exec(), act, x.data, dy, s.range, x.count());
      tape.commit(x, s);
    });
  return y;
}

} // namespace helios::autograd
