#include "engine/autograd/tape.hpp"

#include "engine/ops/elementwise.hpp"

#include <stdexcept>
#include <string>

namespace helios::autograd {

Tensor Tensor::reshape(std::vector<uint32_t> newShape) const {
  Tensor t = *this;
  t.shape = std::move(newShape);
  if (t.elements() != elements())
    throw std::invalid_argument("Tensor::reshape: " + std::to_string(elements()) +
                                " elements cannot become " + std::to_string(t.elements()));
  return t;
}

Tensor Tensor::parameter(vk::BufferRange data, vk::BufferRange grad, std::vector<uint32_t> shape,
                         DType dtype) {
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.gradSlot = std::make_shared<GradSlot>();
  t.gradSlot->range = grad;
  t.gradSlot->persistent = true;
  return t;
}

Tensor Tensor::constant(vk::BufferRange data, std::vector<uint32_t> shape, DType dtype) {
  Tensor t;
  t.data = data;
  t.shape = std::move(shape);
  t.dtype = dtype;
  return t;
}

Tensor Tape::empty(std::vector<uint32_t> shape, DType dtype, bool grad, std::string_view what) {
  Tensor t;
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.data = ws_.allocate(t.bytes(), what);
  if (grad && recording_) t.gradSlot = std::make_shared<GradSlot>();
  return t;
}

bool Tape::needsGrad(std::initializer_list<const Tensor*> inputs) const {
  if (!recording_) return false;
  for (const Tensor* t : inputs)
    if (t && t->requiresGrad()) return true;
  return false;
}

void Tape::backward() {
  for (auto it = closures_.rbegin(); it != closures_.rend(); ++it) {
    (*it)();
    // The gradients this closure read were its outputs': no later closure reads them.
    for (const auto& slot : read_)
      slot->released = true;
    read_.clear();
  }
  closures_.clear();
}

vk::BufferRange Tape::gradStorage(const Tensor& t) {
  GradSlot& s = *t.gradSlot;
  if (s.range.buffer == VK_NULL_HANDLE) s.range = ws_.allocate(t.elements() * 4, "gradient");
  if (s.halfOnly) { // widen the 16-bit gradient for an f32 reader or writer (exact; `half` stays valid)
    ops::cast(exec_, s.half, s.range, t.count(), s.halfType, DType::F32);
    s.halfOnly = false;
  }
  return s.range;
}

vk::BufferRange Tape::gradOf(const Tensor& y) {
  read_.push_back(y.gradSlot);
  GradSlot& s = *y.gradSlot;
  const vk::BufferRange r = gradStorage(y);
  if (!s.written && !s.persistent) {
    ops::fill(exec_, r, y.count(), 0.0f);
    s.written = true;
  }
  return r;
}

void Tape::seedGrad(const Tensor& y, vk::BufferRange grad) {
  if (!y.gradSlot) throw std::logic_error("Tape::seedGrad: tensor has no gradient slot");
  y.gradSlot->range = grad;
  y.gradSlot->written = true;
  y.gradSlot->halfValid = y.gradSlot->halfOnly = false;
}

void Tape::prepareWrite(const Tensor& t) {
  GradSlot& s = *t.gradSlot;
  bool live = false;
  for (const auto& w : s.sharers)
    if (const auto o = w.lock();
        o && !o->released && o->range.buffer == s.range.buffer && o->range.offset == s.range.offset)
      live = true;
  s.sharers.clear();
  if (!live) return;
  const vk::BufferRange own = ws_.allocate(t.elements() * 4, "gradient (copy on write)");
  ops::copy(exec_, s.range, own, t.count());
  s.range = own;
}

vk::BufferRange Tape::gradForWrite(const Tensor& t) {
  gradStorage(t);
  prepareWrite(t);
  t.gradSlot->halfValid = false;
  return t.gradSlot->range;
}

void Tape::shareGrad(const Tensor& from, const Tensor& to) {
  if (!to.gradSlot) return;
  GradSlot& s = *to.gradSlot;
  const vk::BufferRange g = gradOf(from);
  if (s.written || s.persistent || s.range.buffer != VK_NULL_HANDLE) {
    passGrad(to, g, false);
    return;
  }
  // Every slot still read from this range learns of the new one and the other way round (released ones are
  // read by nobody, so the group stays as small as the live part of a residual chain).
  GradSlot& f = *from.gradSlot;
  std::vector<std::shared_ptr<GradSlot>> group{from.gradSlot};
  for (const auto& w : f.sharers)
    if (auto o = w.lock(); o && !o->released) group.push_back(std::move(o));
  for (const auto& o : group) {
    o->sharers.push_back(to.gradSlot);
    s.sharers.push_back(o);
  }
  s.range = g;
  s.written = true;
  s.halfValid = f.halfValid; // the same values: the same 16-bit copy
  s.half = f.half;
  s.halfType = f.halfType;
}

void Tape::noteHalf(const Tensor& t, vk::BufferRange g16, DType half) {
  if (!t.gradSlot) return;
  if (!codegen::isHalf(half)) throw std::logic_error("Tape::noteHalf: f32 is no 16-bit kind");
  GradSlot& s = *t.gradSlot;
  s.half = g16;
  s.halfType = half;
  s.halfValid = true;
}

Tape::Target Tape::target(const Tensor& t) {
  GradSlot& s = *t.gradSlot;
  Target r{gradForWrite(t), s.written || s.persistent};
  s.written = true;
  return r;
}

Tape::Sink Tape::sink(const Tensor& t) {
  const GradSlot& s = *t.gradSlot;
  if (!s.written && !s.persistent) return {gradStorage(t), true};
  return {ws_.allocate(t.elements() * 4, "gradient temporary"), false};
}

void Tape::commit(const Tensor& t, const Sink& k) {
  if (!k.direct) {
    const vk::BufferRange g = gradForWrite(t);
    ops::add(exec_, g, k.range, g, t.count());
  }
  t.gradSlot->written = true;
  t.gradSlot->halfValid = false;
}

void Tape::passGrad(const Tensor& t, vk::BufferRange g, bool allowAlias) {
  if (!t.gradSlot) return;
  GradSlot& s = *t.gradSlot;
  if (!s.written && !s.persistent) {
    if (allowAlias && s.range.buffer == VK_NULL_HANDLE) {
      s.range = g;
    } else {
      ops::copy(exec_, g, gradStorage(t), t.count());
    }
  } else {
    const vk::BufferRange r = gradForWrite(t);
    ops::add(exec_, r, g, r, t.count());
  }
  s.written = true;
  s.halfValid = false;
}

vk::BufferRange Tape::gradOfHalf(const Tensor& y, DType half) {
  if (!codegen::isHalf(half)) throw std::logic_error("Tape::gradOfHalf: f32 is no 16-bit kind");
  GradSlot& s = *y.gradSlot;
  if (s.halfValid && s.halfType == half) {
    read_.push_back(y.gradSlot);
    return s.half;
  }
  const vk::BufferRange g = gradOf(y); // (widens a 16-bit gradient of the other kind first)
  s.half = ws_.allocate(y.elements() * 2, "gradient 16-bit"); // never into a range a producer handed over
  ops::cast(exec_, g, s.half, y.count(), DType::F32, half);
  s.halfType = half;
  s.halfValid = true;
  return s.half;
}

void Tape::passGradHalf(const Tensor& t, vk::BufferRange g16, DType half) {
  if (!t.gradSlot) return;
  if (!codegen::isHalf(half)) throw std::logic_error("Tape::passGradHalf: f32 is no 16-bit kind");
  GradSlot& s = *t.gradSlot;
  if (!s.written && !s.persistent) {
    s.half = g16;
    s.halfType = half;
    s.halfValid = s.halfOnly = true;
    s.written = true;
    return;
  }
  const vk::BufferRange g = ws_.allocate(t.elements() * 4, "gradient f32 from 16 bits");
  ops::cast(exec_, g16, g, t.count(), half, DType::F32);
  passGrad(t, g, false);
}

} // namespace helios::autograd
