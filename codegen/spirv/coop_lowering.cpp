// Cooperative-matrix lowering (ModuleOptions::coopLowerSubgroup): the KHR coop instructions as ordinary
// SPIR-V for devices without VK_KHR_cooperative_matrix. A coop value is an array of L = rows*cols/SG
// components per invocation; slot s of lane l holds row-major element e = s*SG + l. Loads and stores address
// memory one component at a time through access chains formed from the pointer's recorded origin; MulAdd
// goes through a per-subgroup Workgroup scratch (A and B row-major) and loops over its C slots and K.
#include <algorithm>

#include "codegen/spirv/binary_writer.hpp"
#include "codegen/spirv/function_builder.hpp"

namespace helios::spv {

namespace {
template <typename E> uint32_t w(E e) {
  return static_cast<uint32_t>(e);
}
uint32_t subgroupsOf(uint32_t invocations, uint32_t subgroupSize) {
  return (invocations + subgroupSize - 1) / subgroupSize;
}
} // namespace

uint32_t coopLoweredScratchBytes(uint32_t invocations, uint32_t subgroupSize, uint32_t m, uint32_t n,
                                 uint32_t k, uint32_t componentBytes) {
  return subgroupsOf(invocations, subgroupSize) * (m * k + k * n) * componentBytes;
}

// ------------------------------------------------------------------------------------------- module

uint32_t Module::coopSlots(TypeId coopType) const {
  const TypeInfo& i = typeInfo(coopType);
  if (i.kind != TypeKind::CoopMatrix)
    throw BuildError("coopSlots: " + typeName(coopType) + " is no coop type");
  return i.count * i.cols / options_.coopLowerSubgroup;
}

Value Module::coopScratch(TypeId component, uint32_t perSubgroup) {
  auto it = std::find_if(coopScratch_.begin(), coopScratch_.end(),
                         [&](const CoopScratch& s) { return s.component == component; });
  if (it == coopScratch_.end()) {
    CoopScratch s{.component = component};
    u32(); // the length constant's type must precede the declaration
    s.array = TypeId{newId()};
    s.pointer = TypeId{newId()};
    s.var = newId();
    types_.emplace(s.array.id, TypeInfo{.kind = TypeKind::Array, .elem = component});
    types_.emplace(s.pointer.id,
                   TypeInfo{.kind = TypeKind::Pointer, .elem = s.array, .storage = StorageClass::Workgroup});
    globalVarStorage_.emplace(s.var, StorageClass::Workgroup);
    setName(s.var, "coopScratch");
    coopScratch_.push_back(s);
    it = coopScratch_.end() - 1;
  }
  it->perSubgroup = std::max(it->perSubgroup, perSubgroup);
  return Value{it->var, it->pointer};
}

void Module::declareCoopScratch() {
  if (coopScratch_.empty()) return;
  uint32_t subgroups = 0;
  for (const auto& ep : entryPoints_) {
    if (ep.sizeIds) throw BuildError("coop lowering: the MulAdd scratch needs a literal workgroup size");
    subgroups =
        std::max(subgroups, subgroupsOf(ep.size.x * ep.size.y * ep.size.z, options_.coopLowerSubgroup));
  }
  for (CoopScratch& s : coopScratch_) {
    if (s.length) continue; // build() ran before
    s.length = subgroups * s.perSubgroup;
    types_.at(s.array.id).count = s.length;
    const uint32_t len = newId();
    InstBuilder(Op::OpConstant).word(u32().id).word(len).word(s.length).appendTo(globals_);
    InstBuilder(Op::OpTypeArray).word(s.array.id).word(s.component.id).word(len).appendTo(globals_);
    InstBuilder(Op::OpTypePointer)
        .word(s.pointer.id)
        .word(w(StorageClass::Workgroup))
        .word(s.array.id)
        .appendTo(globals_);
    InstBuilder(Op::OpVariable)
        .word(s.pointer.id)
        .word(s.var)
        .word(w(StorageClass::Workgroup))
        .appendTo(globals_);
    globalVars_.push_back(s.var);
  }
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
                               const std::function<Value(const std::vector<Value>&)>& fn) {
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

// Component offset of slot `slot` of this lane: row-major (index + r*stride)*P + c, column-major
// (index + c*stride)*P + r, with P components per element.
Value FunctionBuilder::coopOffset(const CoopMemory& mem, TypeId matrixType, Value slot, Value stride,
                                  CoopLayout layout) {
  const TypeInfo& ti = m_.typeInfo(matrixType);
  const Value e = iadd(imul(slot, u32(m_.options().coopLowerSubgroup)), coopLane());
  const Value r = udiv(e, u32(ti.cols)), c = rem(e, u32(ti.cols));
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
  forRange(u32(0), u32(m_.coopSlots(matrixType)), [&](Value s) {
    body(s, op(Op::OpAccessChain, ptr, {ref(var), ref(s)}));
  });
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
  if (mem.perWord > 1 && (layout != CoopLayout::RowMajorKHR || ti.cols % 2 != 0 || sg % 2 != 0))
    fail("coopStore: the lowering packs " + m_.typeName(comp) + " pairs into " + m_.typeName(mem.word) +
         " words only row-major with even columns and subgroup size");
  const Value var = variable(matrix.type);
  store(var, matrix);
  coopSlots(matrix.type, var, [&](Value s, Value src) {
    const Value v = load(src);
    const auto [ptr, sub] = coopWord(mem, coopOffset(mem, matrix.type, s, stride, layout));
    if (mem.perWord == 1) {
      store(ptr, v.type == mem.word ? v : bitcast(v, mem.word));
      return;
    }
    // Two components share a word: lanes 2j and 2j+1 hold (r, c) and (r, c+1) of the same slot (row-major,
    // even cols and subgroup), so the even lane writes both and no two lanes write one word.
    const Value odd = subgroupShuffleXor(v, u32(1));
    const Value word = bitcast(construct(m_.vectorType(comp, 2), {v, odd}), mem.word);
    ifThen(eq(bitAnd(coopLane(), u32(1)), u32(0)), [&] { store(ptr, word); });
  });
}

// ------------------------------------------------------------------------------------------ MulAdd

Value FunctionBuilder::lowerCoopMulAdd(Value a, Value b, Value c) {
  const TypeInfo &ai = m_.typeInfo(a.type), &bi = m_.typeInfo(b.type);
  const uint32_t M = ai.count, K = ai.cols, N = bi.cols, sg = m_.options().coopLowerSubgroup;
  if (ai.elem != bi.elem)
    fail("coopMulAdd: the lowering needs A and B of one component type (" + m_.typeName(ai.elem) + ", " +
         m_.typeName(bi.elem) + ")");
  const TypeId accT = m_.scalarTypeOf(c.type);
  const Value scratch = m_.coopScratch(ai.elem, M * K + K * N);
  const TypeId ptrT = m_.pointerType(StorageClass::Workgroup, ai.elem);
  const Value base = imul(builtin(BuiltIn::SubgroupId), u32(M * K + K * N)), lane = coopLane();
  const auto slot = [&](Value offset) { return op(Op::OpAccessChain, ptrT, {ref(scratch), ref(offset)}); };
  // A row-major M x K at base, B row-major K x N after it: element e of either sits at its own offset.
  for (const auto& [v, at] : {std::pair{a, base}, std::pair{b, iadd(base, u32(M * K))}}) {
    const Value var = variable(v.type);
    store(var, v);
    coopSlots(v.type, var,
              [&](Value s, Value src) { store(slot(iadd(at, iadd(lane, imul(s, u32(sg))))), load(src)); });
  }
  const uint32_t sem = w(MemorySemanticsMask::AcquireRelease) | w(MemorySemanticsMask::WorkgroupMemory);
  controlBarrier(Scope::Subgroup, Scope::Subgroup, sem);
  const Value cVar = variable(c.type), acc = variable(accT);
  store(cVar, c);
  const TypeId accPtr = m_.pointerType(StorageClass::Function, accT);
  forRange(u32(0), u32(m_.coopSlots(c.type)), [&](Value s) {
    const Value e = iadd(imul(s, u32(sg)), lane);
    const Value rowA = iadd(base, imul(udiv(e, u32(N)), u32(K))),
                colB = iadd(base, iadd(u32(M * K), rem(e, u32(N))));
    const Value cPtr = op(Op::OpAccessChain, accPtr, {ref(cVar), ref(s)});
    store(acc, load(cPtr));
    forRange(u32(0), u32(K), [&](Value k) {
      const Value x = convert(load(slot(iadd(rowA, k))), accT);
      const Value y = convert(load(slot(iadd(colB, imul(k, u32(N))))), accT);
      store(acc, add(load(acc), mul(x, y)));
    });
    store(cPtr, load(acc));
  });
  controlBarrier(Scope::Subgroup, Scope::Subgroup, sem); // the scratch is free for the next MulAdd
  return load(cVar);
}

} // namespace helios::spv
