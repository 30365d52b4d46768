// Cooperative-matrix lowering (ModuleOptions::coopLowerSubgroup): the KHR coop instructions as ordinary
// SPIR-V for devices without VK_KHR_cooperative_matrix. A coop value is an array of L = rows*cols/SG
// components per invocation; slot s of lane l holds element e = s*SG + l, counted column-major for use A and
// row-major for B and accumulators. Loads and stores address memory one component at a time through access
// chains formed from the pointer's recorded origin. MulAdd loops over its C slots and K and fetches each A
// and B component with a subgroup shuffle: no shared memory and no barrier, which llvmpipe would otherwise
// split into coroutines (minutes of compile time per attention pass).
#include <algorithm>
#include <utility>

#include "codegen/spirv/binary_writer.hpp"
#include "codegen/spirv/function_builder.hpp"

namespace helios::spv {

namespace {
template <typename E> uint32_t w(E e) {
  return static_cast<uint32_t>(e);
}
// NIR unrolls constant-trip loops: unrolled, a GEMM's MulAdds took lavapipe minutes to compile.
constexpr uint32_t kDontUnroll = static_cast<uint32_t>(::spv::LoopControlMask::DontUnroll);

bool columnMajorSlots(CoopUse use) {
  return use == CoopUse::MatrixAKHR;
}
} // namespace

bool coopLoweredMulAddShuffles(uint32_t m, uint32_t n, uint32_t k, uint32_t sg) {
  if (!sg || m * n % sg || m * k % sg || k * n % sg) return false;
  for (uint32_t s = 0; s < m * n / sg; ++s)
    for (uint32_t kk = 0; kk < k; ++kk)
      for (uint32_t l = 1; l < sg; ++l) {
        const uint32_t e0 = s * sg, e = e0 + l;
        // A(row, k) column-major at k*m + row; B(k, col) row-major at k*n + col.
        if ((kk * m + e / n) / sg != (kk * m + e0 / n) / sg) return false;
        if ((kk * n + e % n) / sg != (kk * n + e0 % n) / sg) return false;
      }
  return true;
}

// ------------------------------------------------------------------------------------------- module

uint32_t Module::coopSlots(TypeId coopType) const {
  const TypeInfo& i = typeInfo(coopType);
  if (i.kind != TypeKind::CoopMatrix)
    throw BuildError("coopSlots: " + typeName(coopType) + " is no coop type");
  return i.count * i.cols / options_.coopLowerSubgroup;
}

// --------------------------------------------------------------------------------- per component

void FunctionBuilder::requireCoopNotLowered(const char* what) const {
  if (m_.coopLowered())
    fail(std::string(what) + ": not available with the coop lowering (the lowered device has no NV2)");
}

Value FunctionBuilder::coopLane() {
  return builtin(BuiltIn::SubgroupLocalInvocationId);
}

Value FunctionBuilder::coopMap(TypeId result, const std::vector<Value>& operands,
                               const std::function<Value(const std::vector<Value>&)>& fn, bool bits) {
  const bool bf16 = m_.typeInfo(result).bfloat || std::any_of(operands.begin(), operands.end(), [&](Value v) {
                      return m_.typeInfo(v.type).kind == TypeKind::CoopMatrix && m_.typeInfo(v.type).bfloat;
                    });
  if (bf16 && !bits)
    fail("coop lowering: bf16 matrices take conversions, loads, stores and MulAdds only, no arithmetic");
  std::vector<Value> out;
  for (uint32_t s = 0; s < m_.coopSlots(result); ++s) {
    std::vector<Value> xs;
    for (const Value& v : operands)
      xs.push_back(m_.isCoopMatrix(v.type) ? extract(v, {s}) : v);
    out.push_back(fn(xs));
  }
  return construct(result, out);
}

// ------------------------------------------------------------------------------------ load, store

// Where a lowered load or store finds its components: the pointer's access chain with its last index moved
// by component offsets. The pointee may be a scalar or a vector; a component narrower than the pointee's
// scalar ("word") is one of `perWord` packed in it.
struct FunctionBuilder::CoopMemory {
  Value base;
  std::vector<Value> prefix; // indices before the element index
  Value index;               // element index the pointer points at
  uint32_t words = 1;        // scalars per element (vector size)
  uint32_t perWord = 1;      // components per scalar
  TypeId word;               // the element's scalar type
};

FunctionBuilder::CoopMemory FunctionBuilder::coopMemory(const char* what, Value pointer, TypeId component) {
  auto it = chains_.find(pointer.id);
  if (it == chains_.end() || it->second.indices.empty())
    fail(std::string(what) + ": the lowering needs the pointer " + m_.describe(pointer) +
         " to come from accessChain()");
  CoopMemory mem{.base = it->second.base, .prefix = it->second.indices, .index = it->second.indices.back()};
  mem.prefix.pop_back();
  const TypeId elem = m_.pointeeOf(pointer.type);
  mem.words = m_.componentCount(elem);
  mem.word = m_.scalarTypeOf(elem);
  const uint32_t wordBits = m_.typeInfo(mem.word).width, compBits = m_.typeInfo(component).width;
  if (!m_.typeInfo(elem).isScalar() && m_.typeInfo(elem).kind != TypeKind::Vector)
    fail(std::string(what) + ": the lowering reads scalars or vectors, not " + m_.typeName(elem));
  if (wordBits < compBits || wordBits % compBits != 0 || wordBits / compBits > 2)
    fail(std::string(what) + ": cannot lower " + m_.typeName(component) + " components in " +
         m_.typeName(elem) + " memory");
  mem.perWord = wordBits / compBits;
  return mem;
}

// Component offset of slot `slot` of this lane, whose element (r, c) is e = slot*SG + lane counted in the
// matrix's slot order: row-major memory (index + r*stride)*P + c, column-major (index + c*stride)*P + r,
// with P components per element.
Value FunctionBuilder::coopOffset(const CoopMemory& mem, TypeId matrixType, Value slot, Value stride,
                                  CoopLayout layout) {
  const TypeInfo& ti = m_.typeInfo(matrixType);
  const Value e = iadd(imul(slot, u32(m_.options().coopLowerSubgroup)), coopLane());
  const bool byColumn = columnMajorSlots(ti.use);
  const Value r = byColumn ? rem(e, u32(ti.count)) : udiv(e, u32(ti.cols));
  const Value c = byColumn ? udiv(e, u32(ti.count)) : rem(e, u32(ti.cols));
  const bool rowMajor = layout == CoopLayout::RowMajorKHR;
  if (!rowMajor && layout != CoopLayout::ColumnMajorKHR) fail("coop lowering: unsupported layout");
  const Value s = convert(stride, m_.u32()), idx = convert(mem.index, m_.u32());
  const Value line = iadd(idx, imul(rowMajor ? r : c, s));
  return iadd(imul(line, u32(mem.words * mem.perWord)), rowMajor ? c : r);
}

// for (s = 0; s < slots of `matrixType`; ++s) body(s, pointer to component s of `var`): one loop, not L
// copies, so a lowered operation costs the same code whatever the subgroup size.
void FunctionBuilder::coopSlots(TypeId matrixType, Value var, const std::function<void(Value, Value)>& body) {
  const TypeId ptr = m_.pointerType(StorageClass::Function, m_.scalarTypeOf(matrixType));
  const uint32_t outer = std::exchange(loopControl_, kDontUnroll);
  forRange(u32(0), u32(m_.coopSlots(matrixType)), [&](Value s) {
    body(s, op(Op::OpAccessChain, ptr, {ref(var), ref(s)}));
  });
  loopControl_ = outer;
}

// Pointer to the scalar holding component offset `o`, and the component's place in it.
std::pair<Value, Value> FunctionBuilder::coopWord(const CoopMemory& mem, Value o) {
  const Value wordIndex = mem.perWord > 1 ? udiv(o, u32(mem.perWord)) : o;
  std::vector<Value> idx = mem.prefix;
  if (mem.words > 1) {
    idx.push_back(udiv(wordIndex, u32(mem.words)));
    idx.push_back(rem(wordIndex, u32(mem.words)));
  } else {
    idx.push_back(wordIndex);
  }
  return {accessChain(mem.base, idx), mem.perWord > 1 ? rem(o, u32(mem.perWord)) : Value{}};
}

Value FunctionBuilder::lowerCoopLoad(TypeId matrixType, Value pointer, Value stride, CoopLayout layout) {
  const TypeId comp = m_.scalarTypeOf(matrixType);
  const CoopMemory mem = coopMemory("coopLoad", pointer, comp);
  const Value var = variable(matrixType);
  coopSlots(matrixType, var, [&](Value s, Value dst) {
    const auto [ptr, sub] = coopWord(mem, coopOffset(mem, matrixType, s, stride, layout));
    const Value word = load(ptr);
    if (mem.perWord > 1)
      store(dst, extractDynamic(bitcast(word, m_.vectorType(comp, mem.perWord)), sub));
    else
      store(dst, word.type == comp ? word : bitcast(word, comp));
  });
  return load(var);
}

void FunctionBuilder::lowerCoopStore(Value pointer, Value matrix, Value stride, CoopLayout layout) {
  const TypeId comp = m_.scalarTypeOf(matrix.type);
  const TypeInfo& ti = m_.typeInfo(matrix.type);
  const CoopMemory mem = coopMemory("coopStore", pointer, comp);
  const uint32_t sg = m_.options().coopLowerSubgroup;
  // Packed pairs are neighbouring lanes, neighbours along the slot order's fast axis: so must memory be.
  const bool byColumn = columnMajorSlots(ti.use);
  const uint32_t fast = byColumn ? ti.count : ti.cols;
  const CoopLayout along = byColumn ? CoopLayout::ColumnMajorKHR : CoopLayout::RowMajorKHR;
  if (mem.perWord > 1 && (layout != along || fast % 2 != 0 || sg % 2 != 0))
    fail("coopStore: the lowering packs " + m_.typeName(comp) + " pairs into " + m_.typeName(mem.word) +
         " words only " + (byColumn ? "column" : "row") + "-major with an even " +
         (byColumn ? "row" : "column") + " count and subgroup size");
  const Value var = variable(matrix.type);
  store(var, matrix);
  coopSlots(matrix.type, var, [&](Value s, Value src) {
    const Value v = load(src);
    const auto [ptr, sub] = coopWord(mem, coopOffset(mem, matrix.type, s, stride, layout));
    if (mem.perWord == 1) {
      store(ptr, v.type == mem.word ? v : bitcast(v, mem.word));
      return;
    }
    // Two components share a word: lanes 2j and 2j+1 hold neighbours along memory's lines in the same slot
    // (an even fast axis and subgroup), so the even lane writes both and no two lanes write one word.
    const Value odd = subgroupShuffleXor(v, u32(1));
    const Value word = bitcast(construct(m_.vectorType(comp, 2), {v, odd}), mem.word);
    ifThen(eq(bitAnd(coopLane(), u32(1)), u32(0)), [&] { store(ptr, word); });
  });
}

// ------------------------------------------------------------------------------------------ MulAdd

// C(r, c) += sum over k of A(r, k) * B(k, c), one C slot at a time: the lane holding A(r, k) is found from
// A's column-major slot order and B(k, c)'s from B's row-major one; coopLoweredMulAddShuffles() proves every
// lane asks for the same source slot, so each source lane offers the right component to one shuffle.
Value FunctionBuilder::lowerCoopMulAdd(Value a, Value b, Value c) {
  const TypeInfo &ai = m_.typeInfo(a.type), &bi = m_.typeInfo(b.type);
  const uint32_t M = ai.count, K = ai.cols, N = bi.cols, sg = m_.options().coopLowerSubgroup;
  if (ai.elem != bi.elem || ai.bfloat != bi.bfloat)
    fail("coopMulAdd: the lowering needs A and B of one component type (" + m_.typeName(a.type) + ", " +
         m_.typeName(b.type) + ")");
  if (!coopLoweredMulAddShuffles(M, N, K, sg))
    fail("coopMulAdd: the lowering cannot shuffle a " + std::to_string(M) + "x" + std::to_string(N) + "x" +
         std::to_string(K) + " MulAdd over " + std::to_string(sg) +
         " lanes (its lanes would read different source slots; powers of two never do)");
  const TypeId accT = m_.scalarTypeOf(c.type);
  const Value aVar = variable(a.type), bVar = variable(b.type), cVar = variable(c.type), acc = variable(accT);
  store(aVar, a);
  store(bVar, b);
  store(cVar, c);
  const TypeId inPtr = m_.pointerType(StorageClass::Function, ai.elem);
  const TypeId accPtr = m_.pointerType(StorageClass::Function, accT);
  // The component at linear index `at` of a matrix held in `var`: its slot, then its lane's copy (bf16 bits
  // widened before the shuffle, which then moves an f32: exact, and no 16-bit subgroup operation).
  const auto fetch = [&](Value var, Value at) {
    const Value mine = load(op(Op::OpAccessChain, inPtr, {ref(var), ref(udiv(at, u32(sg)))}));
    if (ai.bfloat) return convert(subgroupShuffle(f32FromBF16(mine), rem(at, u32(sg))), accT);
    return convert(subgroupShuffle(mine, rem(at, u32(sg))), accT);
  };
  const Value lane = coopLane();
  const uint32_t outer = std::exchange(loopControl_, kDontUnroll);
  forRange(u32(0), u32(m_.coopSlots(c.type)), [&](Value s) {
    const Value e = iadd(imul(s, u32(sg)), lane);
    const Value row = udiv(e, u32(N)), col = rem(e, u32(N));
    const Value cPtr = op(Op::OpAccessChain, accPtr, {ref(cVar), ref(s)});
    store(acc, load(cPtr));
    forRange(u32(0), u32(K), [&](Value k) {
      const Value x = fetch(aVar, iadd(imul(k, u32(M)), row));
      const Value y = fetch(bVar, iadd(imul(k, u32(N)), col));
      store(acc, add(load(acc), mul(x, y)));
    });
    store(cPtr, load(acc));
  });
  loopControl_ = outer;
  return load(cVar);
}

} // namespace helios::spv
