#pragma once
// Float64 CPU reference of the GPT in engine/model (same math, same parameter names and layouts; a bias the
// parameters lack is none, lm_head.weight is the head where the configuration unties it), for the
// model's gradient checks: the loss as a function of the parameters, differentiated by finite differences.
#include "engine/model/gpt.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace helios::test {

using ParamMap = std::map<std::string, std::vector<double>>;

// logits [batch*T, vocab]. `positions`: each token's position inside its packed document (the model's
// given positions); without them documents follow GptConfig::pack.
std::vector<double> gptReferenceLogits(const model::GptConfig& config, const ParamMap& params,
                                       const std::vector<int32_t>& tokens, uint32_t batch, uint32_t T,
                                       const std::vector<int32_t>& positions = {});
// Mean cross-entropy over the batch*T tokens (a target outside [0, vocab) counts as 0).
double gptReferenceLoss(const model::GptConfig& config, const ParamMap& params,
                        const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets,
                        uint32_t batch, uint32_t T, const std::vector<int32_t>& positions = {});

// Rotate-half RoPE of one row of D elements at position t (inverse: the transposed rotation), with the
// frequencies base^(-2i/D), base 10000, or the given D/2 inverse frequencies.
void ropeReference(double* row, uint32_t D, uint32_t t, bool inverse = false);
void ropeReference(double* row, const std::vector<double>& inverseFrequencies, uint32_t t,
                   bool inverse = false);

} // namespace helios::test
