#include "codegen/kernels/all.hpp"
#include "codegen/kernels/adamw.hpp"
#include "codegen/kernels/attention.hpp"
#include "codegen/kernels/attention_coop.hpp"
#include "codegen/kernels/column_sum.hpp"
#include "codegen/kernels/cross_entropy.hpp"
#include "codegen/kernels/document_positions.hpp"
#include "codegen/kernels/dropout.hpp"
#include "codegen/kernels/elementwise.hpp"
#include "codegen/kernels/embedding.hpp"
#include "codegen/kernels/gemm_coop.hpp"
#include "codegen/kernels/gemm_tiled.hpp"
#include "codegen/kernels/norm.hpp"
#include "codegen/kernels/optim_step.hpp"
#include "codegen/kernels/peak_copy.hpp"
#include "codegen/kernels/peak_mma.hpp"
#include "codegen/kernels/permute.hpp"
#include "codegen/kernels/reduce.hpp"
#include "codegen/kernels/rope.hpp"
#include "codegen/kernels/slice3d.hpp"
#include "codegen/kernels/softmax.hpp"

// Each family adds one include and one call, in alphabetical order.

namespace helios::codegen {

void registerAllKernels(KernelRegistry& registry) {
  (void)registry;
  registerAdamW(registry);
  registerAttention(registry);
  registerAttentionCoop(registry);
  registerColumnSum(registry);
  registerCrossEntropy(registry);
  registerDocumentPositions(registry);
  registerDropout(registry);
  registerElementwise(registry);
  registerEmbedding(registry);
  registerGemmCoop(registry);
  registerGemmTiled(registry);
  registerNorm(registry);
  registerOptimStep(registry);
  registerPeakCopy(registry);
  registerPeakMma(registry);
  registerPermute(registry);
  registerReduce(registry);
  registerRope(registry);
  registerSlice3d(registry);
  registerSoftmax(registry);
}

} // namespace helios::codegen
