#include "engine/ops/peak.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace helios::ops {

namespace {

void checkRange(const char* op, const char* name, const vk::BufferRange& range, uint64_t bytes) {
  if (range.size < bytes)
    throw std::invalid_argument(std::string(op) + ": " + name + " holds " + std::to_string(range.size) +
                                " bytes but needs " + std::to_string(bytes));
}

} // namespace

uint64_t peakMmaOperandBytes(const codegen::PeakMmaParams& p) {
  return uint64_t(p.rows * p.M * p.K + p.cols * p.K * p.N) * codegen::mmaTypeBytes(p.ab);
}

uint64_t peakMmaOutBytesPerWorkgroup(const codegen::PeakMmaParams& p) {
  return uint64_t(p.unitsPerWorkgroup()) * p.M * p.N * codegen::mmaTypeBytes(p.c);
}

void peakMma(Executor& exec, const vk::BufferRange& operands, const vk::BufferRange& out,
             const codegen::PeakMmaParams& p, uint32_t workgroups, uint32_t iterations) {
  p.validate();
  if (!workgroups) throw std::invalid_argument("peakMma: no workgroups");
  checkRange("peakMma", "operands", operands, peakMmaOperandBytes(p));
  checkRange("peakMma", "out", out, peakMmaOutBytesPerWorkgroup(p) * workgroups);
  const vk::Pipeline& pipe = exec.pipeline(p, codegen::generatePeakMma);
  exec.dispatch(pipe, {{operands, Access::Read}, {out, Access::Write}}, codegen::PeakMmaPush{iterations},
                {workgroups, 1, 1});
}

std::vector<double> peakMmaExpected(const codegen::PeakMmaParams& p, std::span<const double> operands,
                                    uint32_t iterations, std::vector<double>* magnitude) {
  const size_t aSize = size_t(p.M) * p.K, bSize = size_t(p.K) * p.N;
  if (operands.size() < p.rows * aSize + p.cols * bSize)
    throw std::invalid_argument("peakMmaExpected: too few operand values");
  std::vector<double> out(size_t(p.M) * p.N, 0.0), abs(out.size(), 0.0);
  for (uint32_t r = 0; r < p.rows; ++r)
    for (uint32_t c = 0; c < p.cols; ++c) {
      const double* a = operands.data() + r * aSize;
      const double* b = operands.data() + p.rows * aSize + c * bSize;
      for (uint32_t i = 0; i < p.M; ++i)
        for (uint32_t j = 0; j < p.N; ++j)
          for (uint32_t k = 0; k < p.K; ++k) {
            const double prod = a[i * p.K + k] * b[k * p.N + j];
            out[i * p.N + j] += prod * iterations;
            abs[i * p.N + j] += std::abs(prod) * iterations;
          }
    }
  if (magnitude) *magnitude = std::move(abs);
  return out;
}

void peakCopy(Executor& exec, const vk::BufferRange& src, const vk::BufferRange& dst, uint32_t vectors,
              uint32_t workgroups) {
  if (!workgroups) throw std::invalid_argument("peakCopy: no workgroups");
  checkRange("peakCopy", "src", src, uint64_t(vectors) * 16);
  checkRange("peakCopy", "dst", dst, uint64_t(vectors) * 16);
  const codegen::PeakCopyParams p;
  const vk::Pipeline& pipe = exec.pipeline(p, codegen::generatePeakCopy);
  exec.dispatch(pipe, {{src, Access::Read}, {dst, Access::Write}}, codegen::PeakCopyPush{vectors},
                {workgroups, 1, 1});
}

} // namespace helios::ops
