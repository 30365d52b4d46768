#include "engine/model/rope_frequencies.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace helios::model {

namespace {

// Llama 3's rescaling of one inverse frequency (rope_type "llama3").
double llama3(double freq, const RopeScaling& s) {
  const double wavelength = 2 * std::numbers::pi / freq;
  const double context = s.originalContext;
  if (wavelength < context / s.highFreqFactor) return freq;           // high frequencies: kept
  if (wavelength > context / s.lowFreqFactor) return freq / s.factor; // low frequencies: interpolated
  const double smooth = (context / wavelength - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
  return (1 - smooth) * freq / s.factor + smooth * freq;
}

} // namespace

std::vector<double> ropeInverseFrequencies(uint32_t headDim, double base, const RopeScaling& scaling) {
  if (headDim == 0 || headDim % 2 != 0)
    throw std::invalid_argument("ropeInverseFrequencies: head dim must be even and positive, got " +
                                std::to_string(headDim));
  std::vector<double> freqs(headDim / 2);
  for (uint32_t i = 0; i < freqs.size(); ++i) {
    freqs[i] = std::pow(base, -2.0 * double(i) / double(headDim));
    if (scaling.kind == RopeScalingKind::Llama3) freqs[i] = llama3(freqs[i], scaling);
  }
  return freqs;
}

} // namespace helios::model
