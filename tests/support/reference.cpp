#include "support/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace helios::ref {

void gemm(const GemmShape& s, const std::vector<float>& a, const std::vector<float>& b,
          const std::vector<float>& bias, Vec& c) {
  const size_t M = s.M, N = s.N, K = s.K;
  for (size_t p = 0; p < s.batch; ++p) {
    const float* A = a.data() + p * M * K;
    const float* B = b.data() + p * K * N;
    double* C = c.data() + p * M * N;
    for (size_t i = 0; i < M; ++i)
      for (size_t j = 0; j < N; ++j) {
        double acc = 0;
        for (size_t k = 0; k < K; ++k) {
          double av = s.transA ? A[k * M + i] : A[i * K + k];
          double bv = s.transB ? B[j * K + k] : B[k * N + j];
          acc += av * bv;
        }
        double v = s.alpha * acc + (s.beta != 0.0 ? s.beta * C[i * N + j] : 0.0);
        if (s.bias) v += bias[j];
        if (s.gelu) v = gelu(v);
        C[i * N + j] = v;
      }
  }
}

double gelu(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

double geluGrad(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  double u = k * (x + 0.044715 * x * x * x);
  double t = std::tanh(u);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

double silu(double x) {
  return x / (1.0 + std::exp(-x));
}

double siluGrad(double x) {
  double s = 1.0 / (1.0 + std::exp(-x));
  return s * (1.0 + x * (1.0 - s));
}

Vec softmax(const std::vector<float>& x, uint32_t rows, uint32_t cols) {
  Vec y(size_t(rows) * cols);
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * cols;
    double m = -std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < cols; ++j)
      m = std::max(m, double(xr[j]));
    double sum = 0;
    for (size_t j = 0; j < cols; ++j)
      sum += std::exp(xr[j] - m);
    for (size_t j = 0; j < cols; ++j)
      y[r * cols + j] = std::exp(xr[j] - m) / sum;
  }
  return y;
}

Vec softmaxBackward(const std::vector<float>& y, const std::vector<float>& dy, uint32_t rows, uint32_t cols) {
  Vec dx(size_t(rows) * cols);
  for (size_t r = 0; r < rows; ++r) {
    double dot = 0;
    for (size_t j = 0; j < cols; ++j)
      dot += double(y[r * cols + j]) * dy[r * cols + j];
    for (size_t j = 0; j < cols; ++j)
      dx[r * cols + j] = y[r * cols + j] * (dy[r * cols + j] - dot);
  }
  return dx;
}

NormOut layerNorm(const std::vector<float>& x, const std::vector<float>& gamma,
                  const std::vector<float>& beta, uint32_t rows, uint32_t cols, double eps) {
  NormOut o{Vec(size_t(rows) * cols), Vec(rows), Vec(rows)};
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * cols;
    double mean = 0, var = 0;
    for (size_t j = 0; j < cols; ++j)
      mean += xr[j];
    mean /= cols;
    for (size_t j = 0; j < cols; ++j)
      var += (xr[j] - mean) * (xr[j] - mean);
    var /= cols;
    double rstd = 1.0 / std::sqrt(var + eps);
    o.mean[r] = mean;
    o.rstd[r] = rstd;
    for (size_t j = 0; j < cols; ++j)
      o.y[r * cols + j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
  }
  return o;
}

NormGrads layerNormBackward(const std::vector<float>& x, const std::vector<float>& gamma,
                            const std::vector<float>& dy, uint32_t rows, uint32_t cols, double eps) {
  NormGrads g{Vec(size_t(rows) * cols), Vec(cols, 0.0), Vec(cols, 0.0)};
  auto fwd = layerNorm(x, gamma, std::vector<float>(cols, 0.0f), rows, cols, eps);
  for (size_t r = 0; r < rows; ++r) {
    double rstd = fwd.rstd[r], mean = fwd.mean[r];
    double sumDyG = 0, sumDyGXhat = 0;
    for (size_t j = 0; j < cols; ++j) {
      double xhat = (x[r * cols + j] - mean) * rstd;
      double dyg = double(dy[r * cols + j]) * gamma[j];
      sumDyG += dyg;
      sumDyGXhat += dyg * xhat;
      g.dgamma[j] += dy[r * cols + j] * xhat;
      g.dbeta[j] += dy[r * cols + j];
    }
    for (size_t j = 0; j < cols; ++j) {
      double xhat = (x[r * cols + j] - mean) * rstd;
      double dyg = double(dy[r * cols + j]) * gamma[j];
      g.dx[r * cols + j] = rstd * (dyg - sumDyG / cols - xhat * sumDyGXhat / cols);
    }
  }
  return g;
}

NormOut rmsNorm(const std::vector<float>& x, const std::vector<float>& gamma, uint32_t rows, uint32_t cols,
                double eps) {
  NormOut o{Vec(size_t(rows) * cols), Vec(rows, 0.0), Vec(rows)};
  for (size_t r = 0; r < rows; ++r) {
    double ms = 0;
    for (size_t j = 0; j < cols; ++j)
      ms += double(x[r * cols + j]) * x[r * cols + j];
    double rstd = 1.0 / std::sqrt(ms / cols + eps);
    o.rstd[r] = rstd;
    for (size_t j = 0; j < cols; ++j)
      o.y[r * cols + j] = x[r * cols + j] * rstd * gamma[j];
  }
  return o;
}

NormGrads rmsNormBackward(const std::vector<float>& x, const std::vector<float>& gamma,
                          const std::vector<float>& dy, uint32_t rows, uint32_t cols, double eps) {
  NormGrads g{Vec(size_t(rows) * cols), Vec(cols, 0.0), Vec()};
  auto fwd = rmsNorm(x, gamma, rows, cols, eps);
  for (size_t r = 0; r < rows; ++r) {
    double rstd = fwd.rstd[r], dot = 0;
    for (size_t j = 0; j < cols; ++j) {
      dot += double(dy[r * cols + j]) * gamma[j] * x[r * cols + j];
      g.dgamma[j] += dy[r * cols + j] * x[r * cols + j] * rstd;
    }
    for (size_t j = 0; j < cols; ++j)
      g.dx[r * cols + j] =
          rstd * (double(dy[r * cols + j]) * gamma[j] - x[r * cols + j] * rstd * rstd * dot / cols);
  }
  return g;
}

Vec reduceRows(const std::vector<float>& x, uint32_t rows, uint32_t cols, Reduce op) {
  Vec out(rows);
  for (size_t r = 0; r < rows; ++r) {
    double acc = op == Reduce::Max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (size_t j = 0; j < cols; ++j)
      acc = op == Reduce::Max ? std::max(acc, double(x[r * cols + j])) : acc + x[r * cols + j];
    out[r] = op == Reduce::Mean ? acc / cols : acc;
  }
  return out;
}

CrossEntropyOut crossEntropy(const std::vector<float>& logits, const std::vector<int32_t>& targets,
                             uint32_t rows, uint32_t vocab, double gradScale) {
  CrossEntropyOut o{Vec(rows), softmax(logits, rows, vocab)};
  for (size_t r = 0; r < rows; ++r) {
    double m = -std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < vocab; ++j)
      m = std::max(m, double(logits[r * vocab + j]));
    double sum = 0;
    for (size_t j = 0; j < vocab; ++j)
      sum += std::exp(logits[r * vocab + j] - m);
    o.loss[r] = m + std::log(sum) - logits[r * vocab + size_t(targets[r])];
    for (size_t j = 0; j < vocab; ++j)
      o.dlogits[r * vocab + j] =
          (o.dlogits[r * vocab + j] - (int32_t(j) == targets[r] ? 1.0 : 0.0)) * gradScale;
  }
  return o;
}

void adamw(const AdamW& h, Vec& p, Vec& m, Vec& v, const std::vector<float>& g) {
  double bc1 = 1.0 - std::pow(h.beta1, h.step), bc2 = 1.0 - std::pow(h.beta2, h.step);
  for (size_t i = 0; i < p.size(); ++i) {
    m[i] = h.beta1 * m[i] + (1 - h.beta1) * g[i];
    v[i] = h.beta2 * v[i] + (1 - h.beta2) * double(g[i]) * g[i];
    double mhat = m[i] / bc1, vhat = v[i] / bc2;
    p[i] -= h.lr * (mhat / (std::sqrt(vhat) + h.eps) + h.weightDecay * p[i]);
  }
}

Vec embedding(const std::vector<float>& table, const std::vector<int32_t>& ids, uint32_t dim) {
  Vec out(ids.size() * dim);
  for (size_t t = 0; t < ids.size(); ++t)
    for (size_t j = 0; j < dim; ++j)
      out[t * dim + j] = table[size_t(ids[t]) * dim + j];
  return out;
}

Vec embeddingBackward(const std::vector<float>& dout, const std::vector<int32_t>& ids, uint32_t vocab,
                      uint32_t dim) {
  Vec d(size_t(vocab) * dim, 0.0);
  for (size_t t = 0; t < ids.size(); ++t)
    for (size_t j = 0; j < dim; ++j)
      d[size_t(ids[t]) * dim + j] += dout[t * dim + j];
  return d;
}

Vec slice3d(const std::vector<float>& src, uint32_t batch, uint32_t srcRows, uint32_t srcCols,
            uint32_t dstRows, uint32_t dstCols, int64_t rowOffset, int64_t colOffset) {
  Vec dst(size_t(batch) * dstRows * dstCols, 0.0);
  for (size_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < dstRows; ++i)
      for (int64_t j = 0; j < dstCols; ++j) {
        int64_t si = i + rowOffset, sj = j + colOffset;
        if (si >= 0 && si < srcRows && sj >= 0 && sj < srcCols)
          dst[(b * dstRows + size_t(i)) * dstCols + size_t(j)] =
              src[(b * srcRows + size_t(si)) * srcCols + size_t(sj)];
      }
  return dst;
}

double relError(const std::vector<float>& out, const Vec& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(out[i])) return std::numeric_limits<double>::infinity();
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

double maxAbsError(const std::vector<float>& out, const Vec& ref) {
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(out[i])) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::abs(out[i] - ref[i]));
  }
  return worst;
}

} // namespace helios::ref
