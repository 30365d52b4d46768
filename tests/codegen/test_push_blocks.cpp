// Each non-GEMM family's push-constant block: the struct its header declares (and its op fills) is what the
// generated SPIR-V declares, member by member: the same scalar kinds at bytes 4 * i, and the same size.
#include <catch2/catch_test_macros.hpp>

#include <map>
#include <vector>

#include "codegen/kernels/adamw.hpp"
#include "codegen/kernels/attention_coop.hpp"
#include "codegen/kernels/column_sum.hpp"
#include "codegen/kernels/cross_entropy.hpp"
#include "codegen/kernels/document_positions.hpp"
#include "codegen/kernels/dropout.hpp"
#include "codegen/kernels/elementwise.hpp"
#include "codegen/kernels/embedding.hpp"
#include "codegen/kernels/norm.hpp"
#include "codegen/kernels/optim_step.hpp"
#include "codegen/kernels/peak_copy.hpp"
#include "codegen/kernels/peak_mma.hpp"
#include "codegen/kernels/permute.hpp"
#include "codegen/kernels/reduce.hpp"
#include "codegen/kernels/rope.hpp"
#include "codegen/kernels/slice3d.hpp"
#include "codegen/kernels/softmax.hpp"
#include "spirv_test_util.hpp"

using namespace helios::codegen;
using helios::spv::Op;
using helios::spv::test::decode;

namespace {

struct DeclaredMember {
  PushScalar kind;
  uint32_t offset;
};

// The members of the module's push-constant block, read back from its words.
std::vector<DeclaredMember> declaredBlock(const std::vector<uint32_t>& words) {
  constexpr uint32_t kPushConstant = 9, kOffset = 35; // StorageClass PushConstant, Decoration Offset
  std::map<uint32_t, PushScalar> scalars;
  std::map<uint32_t, std::vector<uint32_t>> structs;
  std::map<uint32_t, uint32_t> pointee;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> offsets;
  uint32_t block = 0;
  for (const auto& i : decode(words)) {
    const auto& o = i.operands;
    if (i.op == Op::OpTypeInt && o[1] == 32) scalars[o[0]] = o[2] ? PushScalar::I32 : PushScalar::U32;
    if (i.op == Op::OpTypeFloat && o[1] == 32) scalars[o[0]] = PushScalar::F32;
    if (i.op == Op::OpTypeStruct) structs[o[0]] = {o.begin() + 1, o.end()};
    if (i.op == Op::OpTypePointer && o[1] == kPushConstant) pointee[o[0]] = o[2];
    if (i.op == Op::OpMemberDecorate && o[2] == kOffset) offsets[{o[0], o[1]}] = o[3];
    if (i.op == Op::OpVariable && o[2] == kPushConstant) block = pointee.at(o[0]);
  }
  std::vector<DeclaredMember> out;
  if (block == 0) return out;
  const auto& members = structs.at(block);
  for (uint32_t m = 0; m < members.size(); ++m)
    out.push_back({scalars.at(members[m]), offsets.at({block, m})});
  return out;
}

template <class Block> void requireDeclares(const Kernel& k) {
  INFO(k.name);
  constexpr auto expected = pushScalars<Block>();
  const auto declared = declaredBlock(k.spirv);
  REQUIRE(declared.size() == expected.size());
  for (uint32_t i = 0; i < declared.size(); ++i) {
    INFO("member " << i);
    CHECK(declared[i].kind == expected[i]);
    CHECK(declared[i].offset == 4 * i);
  }
  CHECK(k.pushConstantBytes == sizeof(Block));
}

} // namespace

TEST_CASE("pushScalars lists a block's scalars in order, nested structs flattened", "[codegen][push]") {
  constexpr auto s = pushScalars<AttentionCoopPush>();
  STATIC_REQUIRE(s.size() == 14);
  CHECK(s[3] == PushScalar::U32);
  CHECK(s[4] == PushScalar::F32); // AttentionPush::scale
  for (size_t i = 5; i < s.size(); ++i)
    CHECK(s[i] == PushScalar::U32);
  constexpr auto slice = pushScalars<Slice3dPush>();
  CHECK(slice[8] == PushScalar::U32);
  CHECK(slice[9] == PushScalar::I32);
  CHECK(slice[10] == PushScalar::I32);
}

TEST_CASE("every non-GEMM family's kernels declare their header's push block", "[codegen][push]") {
  requireDeclares<SoftmaxForwardPush>(generateSoftmax({}));
  requireDeclares<SoftmaxBackwardPush>(generateSoftmax({.pass = SoftmaxPass::Backward}));
  requireDeclares<NormPush>(generateNorm({.kind = NormKind::RmsNorm}));
  requireDeclares<NormBackwardPush>(generateNorm({.pass = NormPass::BackwardRows}));
  requireDeclares<ElementwisePush>(generateElementwise({.op = EwOp::Axpy}));
  requireDeclares<ElementwisePush>(generateElementwise({.op = EwOp::Cast, .type = Elem::F16}));
  requireDeclares<ReducePush>(generateReduceRows({}));
  requireDeclares<ColumnSumPush>(generateColumnSum({.pass = ColumnSumPass::Finish}));
  requireDeclares<CrossEntropyPush>(generateCrossEntropy({}));
  requireDeclares<EmbeddingPush>(
      generateEmbedding({.kernel = EmbeddingKernel::SegmentSums, .localSize = 32}));
  requireDeclares<AdamWPush>(generateAdamW({}));
  requireDeclares<GradSumsqPush>(generateOptimStep({}));
  requireDeclares<OptimControlPush>(generateOptimStep({.kernel = OptimKernel::Control}));
  requireDeclares<AdamWCtrlPush>(generateOptimStep({.kernel = OptimKernel::AdamW}));
  requireDeclares<AdamWCtrlRoundPush>(generateOptimStep({.kernel = OptimKernel::AdamW, .param = Elem::BF16}));
  requireDeclares<RopePush>(generateRope({}));
  requireDeclares<PermutePush>(generatePermute({}));
  requireDeclares<Slice3dPush>(generateSlice3d({}));
  requireDeclares<DropoutPush>(generateDropout({}));
  requireDeclares<DocumentPositionsPush>(generateDocumentPositions({}));
  requireDeclares<AttentionPush>(generateAttention(attentionParams(AttentionPass::QueryGrad, 64, true)));
  requireDeclares<AttentionCoopPush>(
      generateAttentionCoop(attentionCoopParams(AttentionPass::Forward, 64, true)));
  requireDeclares<PeakCopyPush>(generatePeakCopy({}));
  requireDeclares<PeakMmaPush>(generatePeakMma({}));
}
