// The MMA ceiling kernel (peak_mma.hpp), in the order it is emitted:
//
//   setup: this unit's index (workgroup, and subgroup at subgroup scope); rows A and cols B matrices loaded
//          from the operand buffer; rows x cols accumulators = 0
//   loop:  `iterations` times: every accumulator (r, c) += A_r B_c, the grid unrolled in the loop body, so
//          the body holds rows*cols independent MulAdds and touches no memory
//   store: the sum of the unit's accumulators to its M x N region of `out`
//
// The accumulators depend on the loop's trip count, which is a push constant, so no compiler can fold the
// loop away; A and B are the same for every unit (a few KiB, read once).
#include "codegen/kernels/peak_mma.hpp"

#include <array>
#include <stdexcept>
#include <vector>

#include "codegen/spirv/builder.hpp"

namespace helios::codegen {

using namespace helios::spv;

namespace {

struct TypeRow {
  MmaType type;
  const char* probe; // probe::componentTypeName's spelling
  const char* tag;   // in kernel names
  uint32_t bytes;
  bool isInt;
};
constexpr std::array<TypeRow, 7> kTypes{{{MmaType::F16, "float16", "f16", 2, false},
                                         {MmaType::BF16, "bfloat16", "bf16", 2, false},
                                         {MmaType::F32, "float32", "f32", 4, false},
                                         {MmaType::S8, "sint8", "s8", 1, true},
                                         {MmaType::U8, "uint8", "u8", 1, true},
                                         {MmaType::S32, "sint32", "s32", 4, true},
                                         {MmaType::U32, "uint32", "u32", 4, true}}};

const TypeRow& row(MmaType t) {
  return kTypes[static_cast<size_t>(t)];
}

// The SPIR-V component type of `t` (bf16 is refused by validate()).
TypeId componentType(Module& m, MmaType t) {
  switch (t) {
  case MmaType::F16:
    return m.f16();
  case MmaType::F32:
    return m.f32();
  case MmaType::S8:
    return m.intType(8, true);
  case MmaType::U8:
    return m.intType(8, false);
  case MmaType::S32:
    return m.i32();
  case MmaType::U32:
    return m.u32();
  case MmaType::BF16:
    break;
  }
  throw BuildError("peak_mma: no SPIR-V component type for " + std::string(mmaTypeName(t)));
}

// The pairs devices list: f16 -> f16 / f32, bf16 -> f32 (or bf16), int8 -> int32 of the same signedness.
bool listedPair(MmaType ab, MmaType c) {
  switch (ab) {
  case MmaType::F16:
    return c == MmaType::F16 || c == MmaType::F32;
  case MmaType::BF16:
    return c == MmaType::BF16 || c == MmaType::F32;
  case MmaType::S8:
    return c == MmaType::S32;
  case MmaType::U8:
    return c == MmaType::U32;
  default:
    return false;
  }
}

class PeakMmaBuilder {
public:
  explicit PeakMmaBuilder(const PeakMmaParams& p)
      : p_(p), m_(ModuleOptions{.coopLowerSubgroup = p.lowered ? p.subgroupSize : 0}),
        scope_(p.workgroupScope ? Scope::Workgroup : Scope::Subgroup) {}

  std::vector<uint32_t> build(uint32_t& pushBytes) {
    declare();
    pushBytes = pc_.size;
    FunctionBuilder& f = m_.entryPoint("main", {p_.invocations(), 1, 1});
    loadOperands(f);
    loop(f);
    store(f);
    f.ret();
    return m_.build();
  }

private:
  void declare() {
    const TypeId ab = componentType(m_, p_.ab), c = componentType(m_, p_.c);
    ta_ = m_.coopMatrixType(ab, p_.M, p_.K, CoopUse::MatrixAKHR, scope_);
    tb_ = m_.coopMatrixType(ab, p_.K, p_.N, CoopUse::MatrixBKHR, scope_);
    tc_ = m_.coopMatrixType(c, p_.M, p_.N, CoopUse::MatrixAccumulatorKHR, scope_);
    // 8-bit components load from uint32 words (no 8-bit storage needed); strides count the buffer's elements.
    packed_ = mmaTypeBytes(p_.ab) == 1;
    operands_ = m_.storageBuffer(0, packed_ ? m_.u32() : ab, Access::ReadOnly);
    out_ = m_.storageBuffer(1, c, Access::WriteOnly);
    pc_ = declarePush<PeakMmaPush>(m_);
  }

  // Elements of the operand buffer per `components` components.
  uint32_t elements(uint32_t components) const { return packed_ ? components / 4 : components; }

  void loadOperands(FunctionBuilder& f) {
    for (uint32_t r = 0; r < p_.rows; ++r)
      a_.push_back(f.coopLoad(ta_, f.at(operands_, f.u32(elements(r * p_.M * p_.K))), f.u32(elements(p_.K)),
                              CoopLayout::RowMajorKHR));
    const uint32_t bBase = p_.rows * p_.M * p_.K;
    for (uint32_t c = 0; c < p_.cols; ++c)
      b_.push_back(f.coopLoad(tb_, f.at(operands_, f.u32(elements(bBase + c * p_.K * p_.N))),
                              f.u32(elements(p_.N)), CoopLayout::RowMajorKHR));
    const Value zero = f.constant(m_.scalarTypeOf(tc_), 0.0);
    for (uint32_t i = 0; i < p_.accumulators(); ++i) {
      acc_.push_back(f.variable(tc_));
      f.store(acc_.back(), f.coopFill(tc_, zero));
    }
  }

  void loop(FunctionBuilder& f) {
    const uint32_t operands = p_.ab == MmaType::S8
                                  ? uint32_t(CoopOperands::MatrixASignedComponentsKHR) |
                                        uint32_t(CoopOperands::MatrixBSignedComponentsKHR) |
                                        uint32_t(CoopOperands::MatrixCSignedComponentsKHR) |
                                        uint32_t(CoopOperands::MatrixResultSignedComponentsKHR)
                                  : 0;
    f.forRange(f.u32(0), f.loadPush(pc_, 0), [&](Value) {
      for (uint32_t r = 0; r < p_.rows; ++r)
        for (uint32_t c = 0; c < p_.cols; ++c) {
          const Value acc = acc_[r * p_.cols + c];
          f.store(acc, f.coopMulAdd(a_[r], b_[c], f.load(acc), operands));
        }
    });
  }

  void store(FunctionBuilder& f) {
    Value unit = f.workgroupId(0);
    if (!p_.workgroupScope) unit = f.iadd(f.imul(unit, f.u32(p_.subgroups)), f.builtin(BuiltIn::SubgroupId));
    Value sum = f.load(acc_[0]);
    for (size_t i = 1; i < acc_.size(); ++i)
      sum = f.add(sum, f.load(acc_[i]));
    f.coopStore(f.at(out_, f.imul(unit, f.u32(p_.M * p_.N))), sum, f.u32(p_.N), CoopLayout::RowMajorKHR);
  }

  const PeakMmaParams& p_;
  Module m_;
  Scope scope_;
  TypeId ta_, tb_, tc_;
  bool packed_ = false;
  Buffer operands_, out_;
  PushConstants pc_;
  std::vector<Value> a_, b_, acc_;
};

} // namespace

const char* mmaTypeName(MmaType t) {
  return row(t).probe;
}

std::optional<MmaType> mmaTypeFromName(std::string_view probeName) {
  for (const TypeRow& r : kTypes)
    if (probeName == r.probe) return r.type;
  return std::nullopt;
}

uint32_t mmaTypeBytes(MmaType t) {
  return row(t).bytes;
}

bool mmaTypeIsInt(MmaType t) {
  return row(t).isInt;
}

std::string PeakMmaParams::cacheKey() const {
  return "peak_mma:" + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + ":" +
         mmaTypeName(ab) + ":" + mmaTypeName(c) + ":" + (workgroupScope ? "wg" : "sg") + ":s" +
         std::to_string(subgroupSize) + ":w" + std::to_string(subgroups) + ":g" + std::to_string(rows) + "x" +
         std::to_string(cols) + (lowered ? ":lowered" : "");
}

std::string PeakMmaParams::name() const {
  return "peak_mma_" + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + "_" +
         row(ab).tag + "_" + row(c).tag + (workgroupScope ? "_wg" + std::to_string(invocations()) : "_sg") +
         "_" + std::to_string(rows) + "x" + std::to_string(cols) + (lowered ? "_lowered" : "");
}

void PeakMmaParams::validate() const {
  const auto bad = [&](const std::string& why) { return std::invalid_argument(name() + ": " + why); };
  if (!M || !N || !K || !subgroupSize || !subgroups || !rows || !cols)
    throw bad("every size must be positive");
  if (!listedPair(ab, c))
    throw bad(std::string("no device lists ") + mmaTypeName(ab) + " x " + mmaTypeName(ab) + " -> " +
              mmaTypeName(c));
  if (ab == MmaType::BF16 || c == MmaType::BF16)
    throw bad("bfloat16 components need the builder's bfloat16 type (SPV_KHR_bfloat16), which it lacks");
  if (mmaTypeBytes(ab) == 1 && (K % 4 || N % 4))
    throw bad("8-bit operands load as packed words: K and N must be multiples of 4");
  if (lowered && (workgroupScope || mmaTypeIsInt(ab)))
    throw bad("the coop lowering covers subgroup-scope floating-point MulAdds only");
  if (rows * cols > 64) throw bad("at most 64 accumulators");
}

Kernel generatePeakMma(const PeakMmaParams& p) {
  p.validate();
  Kernel k;
  k.name = p.name();
  k.cacheKey = p.cacheKey();
  PeakMmaBuilder b(p);
  k.spirv = b.build(k.pushConstantBytes);
  k.numBuffers = 2;
  k.localSize = {p.invocations(), 1, 1};
  k.requiredSubgroupSize = p.subgroupSize;
  return k;
}

void registerPeakMma(KernelRegistry& registry) {
  registry.add({"peak.mma", "MMA ceiling: a grid of accumulators, MulAdds in a loop, no memory traffic",
                [] { return generatePeakMma({}); },
                [] {
                  std::vector<Kernel> out;
                  const auto add = [&](PeakMmaParams p) { out.push_back(generatePeakMma(p)); };
                  add({});
                  add({.M = 16, .N = 8, .K = 16, .c = MmaType::F16, .rows = 2, .cols = 4});
                  add({.M = 16, .N = 16, .K = 32, .ab = MmaType::S8, .c = MmaType::S32});
                  add({.M = 16, .N = 8, .K = 32, .ab = MmaType::U8, .c = MmaType::U32});
                  add({.M = 32, .N = 32, .K = 16, .workgroupScope = true, .subgroups = 8});
                  add({.M = 16,
                       .N = 16,
                       .K = 16,
                       .subgroupSize = 8,
                       .subgroups = 2,
                       .rows = 2,
                       .cols = 2,
                       .lowered = true});
                  add({.M = 16,
                       .N = 8,
                       .K = 16,
                       .c = MmaType::F16,
                       .subgroupSize = 16,
                       .subgroups = 2,
                       .rows = 1,
                       .cols = 2,
                       .lowered = true});
                  return out;
                }});
}

} // namespace helios::codegen
