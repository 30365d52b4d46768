#include "engine/ops/embedding.hpp"

#include "codegen/kernels/embedding.hpp"
#include "engine/ops/column_sum.hpp"
#include "engine/ops/elementwise.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace helios::ops {

namespace {

using codegen::EmbeddingKernel;
using codegen::EmbeddingParams;
using codegen::EmbeddingPush;

void requireBytes(const char* op, const char* what, const vk::BufferRange& r, uint64_t need,
                  const std::string& shape) {
  if (r.size != 0 && r.size < need)
    throw std::invalid_argument(std::string("ops::") + op + ": " + what + " holds " + std::to_string(r.size) +
                                " bytes, needs " + std::to_string(need) + " (" + shape + ")");
}

void requireFits(const char* op, const char* what, uint64_t elements) {
  if (elements > 0xffffffffull)
    throw std::invalid_argument(std::string("ops::") + op + ": " + what + " has " + std::to_string(elements) +
                                " elements, more than 32-bit indexing allows");
}

const vk::Pipeline& pipeline(Executor& exec, EmbeddingKernel kernel, uint32_t localSize,
                             codegen::Elem table = codegen::Elem::F32) {
  return exec.pipeline(EmbeddingParams{kernel, localSize, table},
                       [](const EmbeddingParams& p) { return codegen::generateEmbedding(p); });
}

// x: columns (a few workgroups wide), y: tokens; both grid-stride in the kernel.
vk::Groups rowGroups(const vk::Context& ctx, uint32_t tokens, uint32_t dim, uint32_t localSize) {
  const auto& lim = ctx.device().limits().maxComputeWorkGroupCount;
  return {gridStrideGroups(ctx, dim, localSize), std::min<uint32_t>({tokens, lim[1], 65535u}), 1};
}

uint32_t columnLocalSize(uint32_t dim) {
  return dim <= 64 ? 64 : 256;
}

} // namespace

void embedding(Executor& exec, vk::BufferRange table, vk::BufferRange ids, vk::BufferRange out,
               uint32_t tokens, uint32_t vocab, uint32_t dim, codegen::Elem tableType) {
  requireFits("embedding", "table", uint64_t(vocab) * dim);
  requireFits("embedding", "out", uint64_t(tokens) * dim);
  const std::string tableShape =
      std::to_string(vocab) + " x " + std::to_string(dim) + " " + codegen::elemName(tableType);
  const std::string outShape = std::to_string(tokens) + " x " + std::to_string(dim) + " f32";
  requireBytes("embedding", "table", table, uint64_t(codegen::elemBytes(tableType)) * vocab * dim,
               tableShape);
  requireBytes("embedding", "ids", ids, 4ull * tokens, std::to_string(tokens) + " int32");
  requireBytes("embedding", "out", out, 4ull * tokens * dim, outShape);
  if (tokens == 0 || dim == 0) return;
  const uint32_t ls = columnLocalSize(dim);
  exec.dispatch(pipeline(exec, EmbeddingKernel::Gather, ls, tableType),
                {{table, Access::Read}, {ids, Access::Read}, {out, Access::Write}},
                EmbeddingPush{tokens, dim, vocab, 0}, rowGroups(exec.context(), tokens, dim, ls));
}

namespace {

constexpr uint32_t kSegmentLocal = 32;   // columns per workgroup of SegmentSums
constexpr uint32_t kSegmentTokens = 256; // tokens per segment (more segments: more workgroups)
constexpr uint32_t kMaxSegments = 64;    // bounds the partials and the serial sum over segments
constexpr uint64_t kMaxPartialBytes = 64ull << 20;

} // namespace

namespace {

// Where the chains' arrays start in the workspace: offsets rounded up to 256 bytes, the largest
// minStorageBufferOffsetAlignment Vulkan allows.
struct ChainOffsets {
  uint64_t heads, partials;
};
ChainOffsets chainOffsets(const EmbeddingBackwardPlan& p, uint32_t tokens, uint32_t vocab) {
  const auto up = [](uint64_t b) { return (b + 255) / 256 * 256; };
  const uint64_t heads = up(4ull * tokens);
  return {heads, up(heads + 4ull * p.segments * vocab)};
}

} // namespace

EmbeddingBackwardPlan embeddingBackwardPlan(uint32_t tokens, uint32_t vocab, uint32_t dim) {
  EmbeddingBackwardPlan p;
  if (vocab == 0 || tokens == 0 || dim == 0) return p;
  const auto cut = [&](uint32_t maxSegments) {
    p.segments = std::clamp<uint32_t>((tokens + kSegmentTokens - 1) / kSegmentTokens, 1, maxSegments);
    p.segmentTokens = (tokens + p.segments - 1) / p.segments;
    p.segments = (tokens + p.segmentTokens - 1) / p.segmentTokens; // no empty trailing segment
  };
  if (vocab <= codegen::kEmbeddingSmallVocab) {
    cut(kMaxSegments);
    p.segmented = uint64_t(p.segments) * vocab * dim * 4 <= kMaxPartialBytes;
    if (p.segmented) return p;
  }
  // Chains: the heads table (segments x vocab) within the same bound as the partials.
  cut(static_cast<uint32_t>(std::max<uint64_t>(1, kMaxPartialBytes / (4ull * vocab))));
  return p;
}

uint64_t embeddingBackwardWorkspaceBytes(uint32_t tokens, uint32_t vocab, uint32_t dim) {
  const EmbeddingBackwardPlan p = embeddingBackwardPlan(tokens, vocab, dim);
  if (!p.segmented) // next, heads, partials
    return chainOffsets(p, tokens, vocab).partials + 4ull * tokens * dim;
  return uint64_t(p.segments) * vocab * dim * 4;
}

void embeddingBackward(Executor& exec, vk::BufferRange ids, vk::BufferRange dOut, vk::BufferRange dTable,
                       vk::BufferRange workspace, uint32_t tokens, uint32_t vocab, uint32_t dim,
                       bool accumulate) {
  requireFits("embeddingBackward", "dTable", uint64_t(vocab) * dim);
  requireFits("embeddingBackward", "dOut", uint64_t(tokens) * dim);
  if (tokens >= 0x7fffffffu)
    throw std::invalid_argument("ops::embeddingBackward: " + std::to_string(tokens) + " tokens are too many");
  requireBytes("embeddingBackward", "ids", ids, 4ull * tokens, std::to_string(tokens) + " int32");
  requireBytes("embeddingBackward", "dOut", dOut, 4ull * tokens * dim,
               std::to_string(tokens) + " x " + std::to_string(dim) + " f32");
  requireBytes("embeddingBackward", "dTable", dTable, 4ull * vocab * dim,
               std::to_string(vocab) + " x " + std::to_string(dim) + " f32");
  requireBytes("embeddingBackward", "workspace", workspace,
               embeddingBackwardWorkspaceBytes(tokens, vocab, dim), "embeddingBackwardWorkspaceBytes");
  const EmbeddingBackwardPlan plan = embeddingBackwardPlan(tokens, vocab, dim);
  if (plan.segmented) {
    // Segment partials [segments, vocab * dim], then their column sums (in segment order) into dTable: the
    // column sum's finish pass alone, as the partials already are block sums.
    const vk::BufferRange partials = vk::subrange(workspace, 0, uint64_t(plan.segments) * vocab * dim * 4);
    exec.dispatch(pipeline(exec, EmbeddingKernel::SegmentSums, kSegmentLocal),
                  {{dOut, Access::Read}, {ids, Access::Read}, {partials, Access::Write}},
                  EmbeddingPush{tokens, dim, vocab, plan.segmentTokens},
                  vk::Groups{(dim + kSegmentLocal - 1) / kSegmentLocal, plan.segments, 1});
    columnSumRows(exec, partials, dTable, plan.segments, vocab * dim, accumulate ? 1.0f : 0.0f);
    return;
  }
  if (!accumulate && vocab != 0 && dim != 0) fill(exec, dTable, vocab * dim, 0.0f);
  if (tokens == 0 || dim == 0) return;
  const EmbeddingPush push{tokens, dim, vocab, plan.segmentTokens};
  const ChainOffsets at = chainOffsets(plan, tokens, vocab);
  const vk::BufferRange next = vk::subrange(workspace, 0, 4ull * tokens),
                        heads = vk::subrange(workspace, at.heads, 4ull * plan.segments * vocab),
                        partials = vk::subrange(workspace, at.partials, 4ull * tokens * dim);
  fill(exec, heads, plan.segments * vocab, 0.0f); // 0: no head (all-zero bits are 0.0f)
  constexpr uint32_t linkLs = 64;
  exec.dispatch(pipeline(exec, EmbeddingKernel::Link, linkLs),
                {{ids, Access::Read}, {next, Access::Write}, {heads, Access::Write}}, push,
                vk::Groups{gridStrideGroups(exec.context(), tokens, linkLs), 1, 1});
  const uint32_t ls = columnLocalSize(dim);
  exec.dispatch(pipeline(exec, EmbeddingKernel::Accumulate, ls),
                {{dOut, Access::Read},
                 {ids, Access::Read},
                 {next, Access::Read},
                 {heads, Access::Read},
                 {partials, Access::Write}},
                push, rowGroups(exec.context(), tokens, dim, ls));
  exec.dispatch(
      pipeline(exec, EmbeddingKernel::Combine, ls),
      {{ids, Access::Read}, {heads, Access::Read}, {partials, Access::Read}, {dTable, Access::ReadWrite}},
      push, rowGroups(exec.context(), tokens, dim, ls));
}

} // namespace helios::ops
