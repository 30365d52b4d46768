#include "codegen/kernels/elementwise.hpp"

#include <stdexcept>
#include <vector>

#include "codegen/kernels/elem_io.hpp"
#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

namespace {

using spv::FunctionBuilder;
using spv::Value;

bool isBinary(EwOp op) {
  return op == EwOp::Add || op == EwOp::Sub || op == EwOp::Mul;
}
bool isBackward(EwOp op) {
  return op == EwOp::GeluBackward || op == EwOp::SiluBackward || op == EwOp::ReluBackward;
}
bool isCast(EwOp op) {
  return op == EwOp::Cast;
}
bool isMath(EwOp op) {
  return !isCast(op) && op != EwOp::Axpy && op != EwOp::Fill && op != EwOp::Copy;
}
// The output's storage: a 16-bit `out`, else f32 for a cast and `type` otherwise.
Elem outputOf(const ElementwiseParams& p) {
  return isHalf(p.out) ? p.out : isCast(p.op) ? Elem::F32 : p.type;
}
// The op's name in keys and kernel names: a cast carries both types ("cast_f32_f16").
std::string opName(const ElementwiseParams& p) {
  if (!isCast(p.op)) return toString(p.op);
  return std::string("cast_") + elemName(p.type) + "_" + elemName(outputOf(p));
}
// The type field of keys and names: `type`, or "f32" for every cast (whose name carries its types).
const char* typeField(const ElementwiseParams& p) {
  return isCast(p.op) ? "f32" : elemName(p.type);
}
// "_f16out" / "_bf16out" for a math op's 16-bit output.
std::string outSuffix(const ElementwiseParams& p, const char* sep) {
  return isHalf(p.out) && !isCast(p.op) ? std::string(sep) + elemName(p.out) + "out" : std::string();
}

constexpr float kGeluK = 0.7978845608028654f; // sqrt(2 / pi)
constexpr float kGeluC = 0.044715f;

// The maths in f32 or in f32 4-vectors (ElementwiseParams::vec4): constants take the value's shape.
struct Math {
  FunctionBuilder& f;
  spv::TypeId t; // f32 or vec4
  Value k(float c) const { return k(f.f32(c)); }
  Value k(Value scalar) const { return f.module().componentCount(t) > 1 ? f.splat(t, scalar) : scalar; }
};

// 1 / (1 + exp(-z)): exp overflows to +inf for very negative z, giving exactly 0 (no NaN).
Value sigmoid(const Math& m, Value z) {
  const Value one = m.k(1.0f);
  return m.f.fdiv(one, m.f.fadd(one, m.f.exp(m.f.fneg(z))));
}

Value gelu(const Math& m, Value x, bool grad) {
  FunctionBuilder& f = m.f;
  const Value x2 = f.fmul(x, x);
  const Value u = f.fmul(f.fmul(m.k(kGeluK), x), f.fadd(m.k(1.0f), f.fmul(m.k(kGeluC), x2)));
  const Value s = sigmoid(m, f.fmul(m.k(2.0f), u)); // = 0.5 (1 + tanh u)
  if (!grad) return f.fmul(x, s);
  // d/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) u'(x), with 0.5 (1 + t) = s and 1 - t^2 = 4 s (1 - s).
  const Value du = f.fmul(m.k(kGeluK), f.fadd(m.k(1.0f), f.fmul(m.k(3.0f * kGeluC), x2)));
  const Value tail = f.fmul(f.fmul(m.k(2.0f), x), f.fmul(f.fmul(s, f.fsub(m.k(1.0f), s)), du));
  return f.fadd(s, tail);
}

Value silu(const Math& m, Value x, bool grad) {
  FunctionBuilder& f = m.f;
  const Value s = sigmoid(m, x);
  if (!grad) return f.fmul(x, s);
  return f.fmul(s, f.fadd(m.k(1.0f), f.fmul(x, f.fsub(m.k(1.0f), s)))); // s (1 + x (1 - s))
}

} // namespace

const char* toString(EwOp op) {
  switch (op) {
  case EwOp::Add:
    return "add";
  case EwOp::Sub:
    return "sub";
  case EwOp::Mul:
    return "mul";
  case EwOp::Scale:
    return "scale";
  case EwOp::Axpy:
    return "axpy";
  case EwOp::Gelu:
    return "gelu";
  case EwOp::Silu:
    return "silu";
  case EwOp::Relu:
    return "relu";
  case EwOp::GeluBackward:
    return "gelu_bwd";
  case EwOp::SiluBackward:
    return "silu_bwd";
  case EwOp::ReluBackward:
    return "relu_bwd";
  case EwOp::Cast:
    return "cast";
  case EwOp::Fill:
    return "fill";
  case EwOp::Copy:
    return "copy";
  }
  return "?";
}

uint32_t ewNumBuffers(EwOp op) {
  if (op == EwOp::Fill) return 1;
  if (isBinary(op) || isBackward(op)) return 3;
  return 2;
}

std::string ElementwiseParams::cacheKey() const {
  return "ew:" + opName(*this) + ":" + typeField(*this) + (broadcast ? ":bcast" : ":flat") + ":wg" +
         std::to_string(localSize) + outSuffix(*this, ":") + (vec4 ? ":v4" : "");
}

Kernel generateElementwise(const ElementwiseParams& p) {
  if (p.broadcast && !isBinary(p.op))
    throw std::invalid_argument(std::string("elementwise: broadcast is only for add/sub/mul, not ") +
                                toString(p.op));
  if (isCast(p.op) && isHalf(p.type) == isHalf(outputOf(p)))
    throw std::invalid_argument(std::string("elementwise: a cast goes between f32 and a 16-bit kind, not ") +
                                elemName(p.type) + " -> " + elemName(outputOf(p)));
  if (isHalf(p.out) && ((!isMath(p.op) && !isCast(p.op)) || p.type != Elem::F32))
    throw std::invalid_argument(std::string("elementwise: ") + elemName(p.out) +
                                " output is for math ops and casts on f32, not " + opName(p) + " on " +
                                elemName(p.type));
  if (p.localSize == 0 || p.localSize > 1024)
    throw std::invalid_argument("elementwise: localSize must be in [1, 1024], got " +
                                std::to_string(p.localSize));

  spv::Module m;
  m.u32(); // the uint type keeps its place (byte-identical kernels)
  // vec4: every buffer element, and the maths, are 4-vectors.
  const auto shaped = [&](spv::TypeId scalar) { return p.vec4 ? m.vectorType(scalar, 4) : scalar; };
  // (f16 is declared by every variant, as it always was.)
  const spv::TypeId f32 = shaped(m.f32()), f16 = shaped(m.f16());
  const auto storageOf = [&](Elem e) {
    return e == Elem::F32 ? f32 : e == Elem::F16 ? f16 : shaped(elemStorageType(m, e));
  };
  const Elem outElem = outputOf(p);
  const spv::TypeId inT = storageOf(p.type), outT = storageOf(outElem);

  std::vector<spv::Buffer> bufs;
  const auto addBuffer = [&](spv::TypeId t, spv::Access access) {
    const spv::Buffer b = m.storageBuffer(static_cast<uint32_t>(bufs.size()), t, access);
    m.decorate(b.var.id, spv::Decoration::Aliased);
    bufs.push_back(b);
    return b;
  };
  const uint32_t numBuffers = ewNumBuffers(p.op);
  if (p.op == EwOp::Fill) {
    addBuffer(outT, spv::Access::WriteOnly);
  } else if (p.op == EwOp::Axpy) {
    addBuffer(inT, spv::Access::ReadOnly);
    addBuffer(outT, spv::Access::ReadWrite);
  } else {
    for (uint32_t b = 0; b + 1 < numBuffers; ++b)
      addBuffer(inT, spv::Access::ReadOnly);
    addBuffer(outT, spv::Access::WriteOnly);
  }
  const spv::PushConstants pc = declarePush<ElementwisePush>(m);

  FunctionBuilder& f = m.entryPoint("main", {p.localSize, 1, 1});
  const Math math{f, f32};
  const Value n = f.loadPush(pc, 0);
  const Value alpha = math.k(f.loadPush(pc, 2));
  const Value stride = f.imul(f.builtin(spv::BuiltIn::NumWorkgroups, 0), f.u32(p.localSize));
  // Loads as f32 (widening 16-bit storage), stores from f32 (rounding to nearest even).
  const spv::Buffer& out = bufs.back();
  const auto elemOf = [&](const spv::Buffer& b) { return b.var.id == out.var.id ? outElem : p.type; };
  const auto load = [&](const spv::Buffer& b, Value i) {
    const Value v = f.loadAt(b, i);
    return b.element.id == f32.id ? v : elemToF32(f, elemOf(b), v);
  };
  const auto store = [&](const spv::Buffer& b, Value i, Value v) {
    f.storeAt(b, i, b.element.id == f32.id ? v : elemFromF32(f, elemOf(b), v));
  };

  Value cols{};
  if (p.broadcast) cols = f.loadPush(pc, 1);
  f.forRange(f.globalId(0), n, stride, [&](Value i) {
    switch (p.op) {
    case EwOp::Add:
    case EwOp::Sub:
    case EwOp::Mul: {
      const Value a = load(bufs[0], i);
      const Value b = load(bufs[1], p.broadcast ? f.rem(i, cols) : i);
      const Value r = p.op == EwOp::Add ? f.fadd(a, b) : p.op == EwOp::Sub ? f.fsub(a, b) : f.fmul(a, b);
      store(out, i, r);
      break;
    }
    case EwOp::Scale:
      store(out, i, f.fmul(alpha, load(bufs[0], i)));
      break;
    case EwOp::Axpy: {
      // y += alpha * (x[i] + x[n + i] + ... ) over `cols` slices of n (1: plain axpy).
      const Value sum = f.variable(f32);
      f.store(sum, math.k(0.0f));
      f.forRange(f.u32(0), f.loadPush(pc, 1),
                 [&](Value s) { f.store(sum, f.fadd(f.load(sum), load(bufs[0], f.iadd(f.imul(s, n), i)))); });
      store(out, i, f.fadd(load(bufs[1], i), f.fmul(alpha, f.load(sum))));
      break;
    }
    case EwOp::Gelu:
      store(out, i, gelu(math, load(bufs[0], i), false));
      break;
    case EwOp::Silu:
      store(out, i, silu(math, load(bufs[0], i), false));
      break;
    case EwOp::Relu: {
      const Value x = load(bufs[0], i);
      store(out, i, f.select(f.gt(x, math.k(0.0f)), x, math.k(0.0f)));
      break;
    }
    case EwOp::GeluBackward:
    case EwOp::SiluBackward:
    case EwOp::ReluBackward: {
      const Value x = load(bufs[0], i);
      const Value dy = load(bufs[1], i);
      Value dx;
      if (p.op == EwOp::ReluBackward)
        dx = f.select(f.gt(x, math.k(0.0f)), dy, math.k(0.0f));
      else
        dx = f.fmul(dy, p.op == EwOp::GeluBackward ? gelu(math, x, true) : silu(math, x, true));
      store(out, i, dx);
      break;
    }
    case EwOp::Cast:
      store(out, i, load(bufs[0], i));
      break;
    case EwOp::Fill:
      store(out, i, alpha);
      break;
    case EwOp::Copy:
      f.storeAt(out, i, f.loadAt(bufs[0], i));
      break;
    }
  });
  f.ret();

  std::string name = "ew_" + opName(p) + "_" + typeField(p) + (p.broadcast ? "_bcast" : "") +
                     outSuffix(p, "_") + (p.vec4 ? "_v4" : "") + "_wg" + std::to_string(p.localSize);
  return linearKernel(std::move(name), p.cacheKey(), m.build(), numBuffers, pc.size, p.localSize);
}

void registerElementwise(KernelRegistry& registry) {
  registry.add(
      {"elementwise",
       "grid-stride elementwise: add/sub/mul (+broadcast), scale, axpy, gelu/silu/relu (+backward), casts, "
       "fill, copy",
       [] { return generateElementwise({}); },
       [] {
         std::vector<Kernel> ks;
         for (uint32_t o = 0; o <= static_cast<uint32_t>(EwOp::Copy); ++o) {
           const auto op = static_cast<EwOp>(o);
           for (Elem t : {Elem::F32, Elem::F16, Elem::BF16}) {
             for (bool bc : {false, true}) {
               if (bc && !isBinary(op)) continue;
               for (uint32_t ls : {64u, 256u}) {
                 for (bool v4 : {false, true}) {
                   if (v4 && ls != 256) continue; // the 4-vector kernels at the local size the ops use
                   // Casts: from f32 to each 16-bit kind, and from each back.
                   if (isCast(op)) {
                     for (Elem half : {Elem::F16, Elem::BF16})
                       if (t == Elem::F32) ks.push_back(generateElementwise({op, t, bc, ls, half, v4}));
                     if (isHalf(t)) ks.push_back(generateElementwise({op, t, bc, ls, Elem::F32, v4}));
                     continue;
                   }
                   ks.push_back(generateElementwise({op, t, bc, ls, Elem::F32, v4}));
                   if (isMath(op) && t == Elem::F32)
                     for (Elem half : {Elem::F16, Elem::BF16})
                       ks.push_back(generateElementwise({op, t, bc, ls, half, v4}));
                 }
               }
             }
           }
         }
         return ks;
       }});
}

} // namespace helios::codegen
