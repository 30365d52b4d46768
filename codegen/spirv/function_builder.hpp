#pragma once
// helios::spv::FunctionBuilder: one function under construction. Knows the current block; every
// instruction goes there. Helpers infer result types from operand types and throw BuildError on misuse.
// Implementation is split by topic: function_builder.cpp (blocks, memory, arithmetic, conversions),
// control_flow.cpp (structured if/loops), ext_ops.cpp (GLSL.std.450, barriers, subgroup, atomics),
// coop_matrix.cpp (cooperative matrix KHR), coop_matrix_nv2.cpp (its NV2 row operations).
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "codegen/spirv/ids.hpp"
#include "codegen/spirv/module.hpp"

namespace helios::spv {

class FunctionBuilder {
public:
  FunctionBuilder(Module& m, int32_t index, std::string name, TypeId returnType, std::vector<TypeId> params);

  Module& module() { return m_; }
  const std::string& name() const { return name_; }
  FunctionId id() const { return {fnId_, returnType_, fnType_}; }
  Value param(size_t i) const;
  bool finished() const { return finished_; }

  // ---- blocks and raw control flow ----
  BlockId newBlock();       // created but not yet placed; placed when made current
  void setBlock(BlockId b); // continue emitting into b (appends it to the function's block order)
  BlockId currentBlock() const;
  bool blockTerminated() const; // current block already has a terminator
  void branch(BlockId target);
  void branchCond(Value cond, BlockId ifTrue, BlockId ifFalse);
  void selectionMerge(BlockId merge);
  void loopMerge(BlockId merge, BlockId continueTarget);
  void ret();
  void ret(Value v);
  void unreachable();
  Value phi(TypeId type, const std::vector<std::pair<Value, BlockId>>& incoming);
  Value call(const FunctionId& fn, const std::vector<Value>& args);

  // ---- structured control flow (control_flow.cpp) ----
  // Bodies may end with ret()/breakLoop()/continueLoop(); otherwise a branch to the merge block is added.
  void ifThen(Value cond, const std::function<void()>& thenBody);
  void ifThenElse(Value cond, const std::function<void()>& thenBody, const std::function<void()>& elseBody);
  // for (i = begin; i < end; i += step) body(i); int types (signed or unsigned compare by type);
  // the counter lives in a Function variable.
  void forRange(Value begin, Value end, Value step, const std::function<void(Value)>& body);
  void forRange(Value begin, Value end, const std::function<void(Value)>& body); // step 1
  // while (cond()) body(); cond is evaluated in the loop header each iteration.
  void whileLoop(const std::function<Value()>& cond, const std::function<void()>& body);
  void breakLoop();    // branch to the innermost loop's merge block
  void continueLoop(); // branch to the innermost loop's continue block

  // ---- constants shortcuts (forward to Module) ----
  Value u32(uint32_t v) { return m_.constU32(v); }
  Value i32(int32_t v) { return m_.constI32(v); }
  Value f32(float v) { return m_.constF32(v); }
  Value f16(float v) { return m_.constF16(v); }
  Value boolean(bool v) { return m_.constBool(v); }
  Value constant(TypeId t, double v) { return m_.constant(t, v); }

  // ---- memory ----
  // Function-storage variable; emitted at the start of the first block whenever it is requested.
  Value variable(TypeId type, std::optional<Value> initializer = {});
  Value load(Value pointer, MemoryAccess access = {});
  void store(Value pointer, Value value, MemoryAccess access = {});
  Value accessChain(Value base, const std::vector<Value>& indices);
  Value at(const Buffer& buf, Value index); // &buf.data[index]
  Value loadAt(const Buffer& buf, Value index, MemoryAccess access = {});
  void storeAt(const Buffer& buf, Value index, Value value, MemoryAccess access = {});
  Value arrayLength(const Buffer& buf); // OpArrayLength (uint32)
  Value loadPush(const PushConstants& pc, uint32_t member);
  Value builtin(BuiltIn b);                     // loaded uvec3 / uint
  Value builtin(BuiltIn b, uint32_t component); // one component of a uvec3 builtin
  Value globalId(uint32_t c = 0) { return builtin(BuiltIn::GlobalInvocationId, c); }
  Value localId(uint32_t c = 0) { return builtin(BuiltIn::LocalInvocationId, c); }
  Value workgroupId(uint32_t c = 0) { return builtin(BuiltIn::WorkgroupId, c); }

  // ---- arithmetic: generic versions dispatch on the operand type (int/float, signedness) ----
  Value add(Value a, Value b);
  Value sub(Value a, Value b);
  Value mul(Value a, Value b);
  Value div(Value a, Value b);
  Value rem(Value a, Value b); // SRem / UMod / FRem
  Value neg(Value a);
  Value fadd(Value a, Value b);
  Value fsub(Value a, Value b);
  Value fmul(Value a, Value b);
  Value fdiv(Value a, Value b);
  Value fneg(Value a);
  Value iadd(Value a, Value b);
  Value isub(Value a, Value b);
  Value imul(Value a, Value b);
  Value sdiv(Value a, Value b);
  Value udiv(Value a, Value b);
  Value shl(Value a, Value shift);
  Value shr(Value a, Value shift); // logical for unsigned, arithmetic for signed
  Value bitAnd(Value a, Value b);
  Value bitOr(Value a, Value b);
  Value bitXor(Value a, Value b);
  Value bitNot(Value a);
  Value vectorTimesScalar(Value v, Value s);
  Value dot(Value a, Value b);

  // ---- comparisons (ordered for float; signed/unsigned by int type) and logic ----
  Value lt(Value a, Value b);
  Value le(Value a, Value b);
  Value gt(Value a, Value b);
  Value ge(Value a, Value b);
  Value eq(Value a, Value b);
  Value ne(Value a, Value b);
  Value logicalAnd(Value a, Value b);
  Value logicalOr(Value a, Value b);
  Value logicalNot(Value a);
  Value select(Value cond, Value ifTrue, Value ifFalse);

  // ---- conversions and composites ----
  // convert: float<->float (FConvert, also between coop matrices), int<->float, int<->int (width/sign).
  Value convert(Value v, TypeId to);
  Value bitcast(Value v, TypeId to);
  Value extract(Value composite, std::initializer_list<uint32_t> indices);
  Value insert(Value composite, Value object, std::initializer_list<uint32_t> indices);
  Value extractDynamic(Value vector, Value index);
  Value construct(TypeId type, const std::vector<Value>& constituents);
  Value splat(TypeId vectorType, Value scalar);
  Value shuffle(Value a, Value b, std::initializer_list<uint32_t> components);
  // bfloat16 held as bits (bfloat16.cpp), on any device: an f32 scalar or vector rounded to nearest even,
  // as uint32 with the bf16 in the low half; and bf16 bits (uint16, or uint32's low half) widened exactly.
  Value bf16FromF32(Value x);
  Value f32FromBF16(Value bits);

  // ---- GLSL.std.450 (ext_ops.cpp) ----
  Value glsl(GLSLstd450 inst, TypeId resultType, const std::vector<Value>& args);
  Value exp(Value x);
  Value exp2(Value x);
  Value log(Value x);
  Value log2(Value x);
  Value tanh(Value x);
  Value sqrt(Value x);
  Value inverseSqrt(Value x);
  Value floor(Value x);
  Value ceil(Value x);
  Value fabs(Value x);
  Value fmax(Value a, Value b);
  Value fmin(Value a, Value b);
  Value pow(Value a, Value b);
  Value fma(Value a, Value b, Value c);
  Value umin(Value a, Value b);
  Value umax(Value a, Value b);
  Value smin(Value a, Value b);
  Value smax(Value a, Value b);
  Value min(Value a, Value b); // FMin / UMin / SMin by type
  Value max(Value a, Value b);

  // ---- barriers ----
  void controlBarrier(Scope execution, Scope memory, uint32_t semantics);
  void memoryBarrier(Scope memory, uint32_t semantics);
  // OpControlBarrier(Workgroup, Workgroup, AcquireRelease | WorkgroupMemory): GLSL barrier().
  void workgroupBarrier();

  // ---- subgroup (GroupNonUniform*) ----
  Value subgroupAdd(Value v, GroupOperation op = GroupOperation::Reduce); // FAdd / IAdd
  Value subgroupMul(Value v, GroupOperation op = GroupOperation::Reduce);
  Value subgroupMax(Value v, GroupOperation op = GroupOperation::Reduce); // FMax / SMax / UMax
  Value subgroupMin(Value v, GroupOperation op = GroupOperation::Reduce);
  Value subgroupBroadcast(Value v, Value lane); // lane must be dynamically uniform
  Value subgroupBroadcastFirst(Value v);
  Value subgroupShuffle(Value v, Value lane);
  Value subgroupShuffleXor(Value v, Value mask);
  Value subgroupElect();

  // ---- atomics (scope Device, relaxed semantics unless given) ----
  Value atomicIAdd(Value pointer, Value v, Scope scope = Scope::Device, uint32_t semantics = 0);
  // OpAtomicFAddEXT (SPV_EXT_shader_atomic_float_add; AtomicFloat{16,32,64}AddEXT capability).
  Value atomicFAdd(Value pointer, Value v, Scope scope = Scope::Device, uint32_t semantics = 0);
  Value atomicUMax(Value pointer, Value v, Scope scope = Scope::Device, uint32_t semantics = 0);
  Value atomicCompareExchange(Value pointer, Value value, Value comparator, Scope scope = Scope::Device,
                              uint32_t semantics = 0);

  // ---- cooperative matrix KHR (coop_matrix.cpp) ----
  // pointer: to a scalar/vector element of a StorageBuffer or Workgroup array; stride in elements.
  Value coopLoad(TypeId matrixType, Value pointer, Value stride, CoopLayout layout, MemoryAccess access = {});
  void coopStore(Value pointer, Value matrix, Value stride, CoopLayout layout, MemoryAccess access = {});
  // Result type = c's type. operands: CoopOperands bits (e.g. MatrixASignedComponentsKHR), 0 = none.
  Value coopMulAdd(Value a, Value b, Value c, uint32_t operands = 0);
  Value coopLength(TypeId matrixType);             // uint32: number of elements this invocation holds
  Value coopFill(TypeId matrixType, Value scalar); // OpCompositeConstruct with one scalar
  Value coopScale(Value matrix, Value scalar);     // OpMatrixTimesScalar

  // ---- cooperative matrix NV2 row operations (coop_matrix_nv2.cpp; SPV_NV_cooperative_matrix2) ----
  // Accumulator -> A/B use: OpFConvert when the component type changes, else OpCooperativeMatrixConvertNV.
  Value coopConvert(Value matrix, TypeId to);
  // OpCooperativeMatrixReduceNV: `mask` of CooperativeMatrixReduceMask bits; with Row every element of a
  // result row holds that row's reduction (result: same rows, any columns). combine: (T, T) -> T.
  Value coopReduce(TypeId resultType, Value matrix, CoopReduce mask, const FunctionId& combine);
  // OpCooperativeMatrixPerElementOpNV: fn(u32 row, u32 col, T element, extra...) -> T for every element;
  // a matrix among `extra` passes its corresponding element.
  Value coopPerElement(Value matrix, const FunctionId& fn, const std::vector<Value>& extra = {});

  // ---- tensor addressing (tensor_addressing.cpp; SPV_NV_tensor_addressing, SPV_NV_cooperative_matrix2) ----
  // Layouts and views are values: every setter returns a new one. Dimensions, strides, offsets and spans are
  // u32 values in elements of the buffer the layout addresses.
  Value createTensorLayout(TypeId layoutType);
  Value tensorLayoutDimensions(Value layout, const std::vector<Value>& dims); // row-major strides implied
  Value tensorLayoutStrides(Value layout, const std::vector<Value>& strides);
  Value tensorLayoutSlice(Value layout, const std::vector<std::pair<Value, Value>>& offsetSpan);
  Value createTensorView(TypeId viewType);
  // OpCooperativeMatrixLoadTensorNV: the layout's slice (through `view` if given) from the buffer at
  // `pointer`; elements the clamp mode leaves out read as 0.
  Value coopLoadTensor(TypeId matrixType, Value pointer, Value layout, std::optional<Value> view = {});
  // OpCooperativeMatrixStoreTensorNV: elements outside the layout's dimensions are not written.
  void coopStoreTensor(Value pointer, Value matrix, Value layout, std::optional<Value> view = {});

  // ---- raw escape hatches (no type checking; operands are raw words, ids via ref()) ----
  Value op(Op opcode, TypeId resultType, const std::vector<uint32_t>& operands);
  void opNoResult(Op opcode, const std::vector<uint32_t>& operands);
  uint32_t ref(Value v); // checks v may be used here (defined, same function or module scope); returns id
  void name(Value v, std::string_view n) { m_.setName(v.id, n); }

  // Checks all blocks are terminated; called by Module::build().
  void finish();

private:
  friend class Module;
  struct Block {
    uint32_t label = 0;
    std::vector<uint32_t> words;
    bool placed = false;
    bool terminated = false;
  };
  struct LoopTargets {
    BlockId merge, cont;
  };

  Block& cur();
  size_t blockIndex(BlockId b, const char* what) const;
  [[noreturn]] void fail(const std::string& msg) const;
  void emit(Op opcode, const std::vector<uint32_t>& operands);
  Value emitResult(Op opcode, TypeId type, const std::vector<uint32_t>& operands);
  void terminate(Op opcode, const std::vector<uint32_t>& operands);
  void requireSameType(const char* what, Value a, Value b);
  void requireFloat(const char* what, Value a);
  void requireInt(const char* what, Value a);
  void requireBoolCond(const char* what, Value c);
  TypeId boolResultType(TypeId operand);
  Value binary(const char* what, Op opcode, Value a, Value b);
  Value compare(const char* what, Op fop, Op sop, Op uop, Value a, Value b);
  Value glslUnaryF(const char* what, GLSLstd450 inst, Value x);
  Value glslBinaryF(const char* what, GLSLstd450 inst, Value a, Value b);
  Value glslBinaryI(const char* what, GLSLstd450 inst, Value a, Value b, bool wantSigned);
  uint32_t scopeId(Scope s);
  Value groupOp(const char* what, Op fop, Op sop, Op uop, Value v, GroupOperation gop);
  void requireCapabilitySubgroup(Capability c);
  void noteCallee(const FunctionId& fn); // fn's globals join the entry point's interface
  // Coop lowering (coop_lowering.cpp).
  struct CoopMemory;
  struct ChainOrigin {
    Value base;
    std::vector<Value> indices;
  };
  void requireCoopNotLowered(const char* what) const;
  Value coopLane();
  // result = fn(components of slot s of each coop operand; other operands as they are) for every slot. A
  // lowered bf16 matrix holds bits: only its conversions pass `bits` (there is no bf16 arithmetic).
  Value coopMap(TypeId result, const std::vector<Value>& operands,
                const std::function<Value(const std::vector<Value>&)>& fn, bool bits = false);
  Value lowerBF16CoopConvert(Value v, TypeId to);
  CoopMemory coopMemory(const char* what, Value pointer, TypeId component);
  Value coopOffset(const CoopMemory& mem, TypeId matrixType, Value slot, Value stride, CoopLayout layout);
  void coopSlots(TypeId matrixType, Value var, const std::function<void(Value, Value)>& body);
  std::pair<Value, Value> coopWord(const CoopMemory& mem, Value offset);
  Value lowerCoopLoad(TypeId matrixType, Value pointer, Value stride, CoopLayout layout);
  void lowerCoopStore(Value pointer, Value matrix, Value stride, CoopLayout layout);
  Value lowerCoopMulAdd(Value a, Value b, Value c);
  // The access operands for `pointer` under the module's memory model (ids.hpp, MemoryAccess::nonPrivate).
  std::vector<uint32_t> memoryOperands(Value pointer, MemoryAccess access);
  uint32_t semanticsId(uint32_t semantics); // Module::memorySemantics, as a constant
  void writeTo(std::vector<uint32_t>& out) const;

  Module& m_;
  int32_t index_;
  std::string name_;
  TypeId returnType_, fnType_;
  uint32_t fnId_ = 0;
  std::vector<Value> params_;
  std::vector<Block> blocks_; // in creation order
  std::vector<size_t> order_; // placement order (index into blocks_)
  std::unordered_map<uint32_t, size_t> blockIndex_;
  std::vector<uint32_t> variables_; // OpVariable words for the first block
  size_t current_ = 0;
  std::vector<LoopTargets> loops_;
  std::set<uint32_t> usedGlobals_;
  std::unordered_map<uint32_t, ChainOrigin> chains_; // access chain result -> its base and indices
  uint32_t loopControl_ = 0; // OpLoopMerge's LoopControl: DontUnroll inside the coop lowering's loops
  std::set<size_t> callees_;
  bool finished_ = false;
};

} // namespace helios::spv
