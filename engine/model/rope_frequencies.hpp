#pragma once
// RoPE's inverse frequencies as transformers computes them for a configuration: theta_i = base^(-2i/D) for
// pair i < D/2 ("default"), then, for rope_type "llama3", wavelengths 2 pi / theta_i longer than
// originalContext / lowFreqFactor divided by `factor`, shorter than originalContext / highFreqFactor kept,
// and the band between blended linearly in originalContext / wavelength. Computed in double; the host table
// (ops::ropeTable) multiplies them by the position.
#include "engine/model/gpt.hpp"

#include <vector>

namespace helios::model {

std::vector<double> ropeInverseFrequencies(uint32_t headDim, double base, const RopeScaling& scaling);

} // namespace helios::model
