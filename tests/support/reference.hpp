#pragma once
// Float64 CPU references, one per op, shared by every kernel variant of that op. Inputs are float (what the
// GPU sees); all arithmetic is double. Layouts are row-major; "rows x cols" ops work along the last axis.
#include <cstdint>
#include <vector>

namespace helios::ref {

using Vec = std::vector<double>;

struct GemmShape {
  uint32_t M = 0, N = 0, K = 0, batch = 1;
  bool transA = false, transB = false; // A stored KxM when transA; B stored NxK when transB
  double alpha = 1.0, beta = 0.0;
  bool bias = false; // + bias[n]
  bool gelu = false; // GELU (tanh form) applied last
};
// c (batch*M*N) holds C on entry (used when beta != 0) and the result on return.
void gemm(const GemmShape& s, const std::vector<float>& a, const std::vector<float>& b,
          const std::vector<float>& bias, Vec& c);

double gelu(double x);
double geluGrad(double x);
double silu(double x);
double siluGrad(double x);

Vec softmax(const std::vector<float>& x, uint32_t rows, uint32_t cols);
Vec softmaxBackward(const std::vector<float>& y, const std::vector<float>& dy, uint32_t rows, uint32_t cols);

struct NormOut {
  Vec y, mean, rstd;
};
NormOut layerNorm(const std::vector<float>& x, const std::vector<float>& gamma,
                  const std::vector<float>& beta, uint32_t rows, uint32_t cols, double eps);
struct NormGrads {
  Vec dx, dgamma, dbeta;
};
NormGrads layerNormBackward(const std::vector<float>& x, const std::vector<float>& gamma,
                            const std::vector<float>& dy, uint32_t rows, uint32_t cols, double eps);
NormOut rmsNorm(const std::vector<float>& x, const std::vector<float>& gamma, uint32_t rows, uint32_t cols,
                double eps);
NormGrads rmsNormBackward(const std::vector<float>& x, const std::vector<float>& gamma,
                          const std::vector<float>& dy, uint32_t rows, uint32_t cols, double eps);

enum class Reduce { Sum, Max, Mean };
Vec reduceRows(const std::vector<float>& x, uint32_t rows, uint32_t cols, Reduce op);

struct CrossEntropyOut {
  Vec loss;    // per row: logsumexp(logits) - logits[target]
  Vec dlogits; // (softmax - onehot) * gradScale
};
CrossEntropyOut crossEntropy(const std::vector<float>& logits, const std::vector<int32_t>& targets,
                             uint32_t rows, uint32_t vocab, double gradScale);

struct AdamW {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.0;
  uint32_t step = 1; // 1-based, for bias correction
};
// Updates p, m, v in place (double copies).
void adamw(const AdamW& h, Vec& p, Vec& m, Vec& v, const std::vector<float>& g);

Vec embedding(const std::vector<float>& table, const std::vector<int32_t>& ids, uint32_t dim);
Vec embeddingBackward(const std::vector<float>& dout, const std::vector<int32_t>& ids, uint32_t vocab,
                      uint32_t dim);

// dst[b][i][j] = src[b][i + rowOffset][j + colOffset] where inside src, else 0 (pad and crop in one).
Vec slice3d(const std::vector<float>& src, uint32_t batch, uint32_t srcRows, uint32_t srcCols,
            uint32_t dstRows, uint32_t dstCols, int64_t rowOffset, int64_t colOffset);

// Relative Frobenius error ||out - ref|| / ||ref|| (||ref|| floored at 1e-30). NaN in out gives +inf.
double relError(const std::vector<float>& out, const Vec& ref);
// Largest |out - ref|; NaN gives +inf.
double maxAbsError(const std::vector<float>& out, const Vec& ref);

} // namespace helios::ref
