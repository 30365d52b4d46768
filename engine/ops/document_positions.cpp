#include "engine/ops/document_positions.hpp"

#include "codegen/kernels/document_positions.hpp"
#include "engine/ops/elementwise.hpp"

#include <stdexcept>
#include <string>

namespace helios::ops {

void documentPositions(Executor& exec, vk::BufferRange ids, vk::BufferRange pos, uint32_t sequences,
                       uint32_t T, int32_t eot) {
  const uint64_t tokens = uint64_t(sequences) * T;
  if (tokens > 0xffffffffull)
    throw std::invalid_argument("ops::documentPositions: " + std::to_string(tokens) +
                                " tokens, more than 32-bit indexing allows");
  for (const auto& [name, r] : {std::pair{"ids", ids}, {"pos", pos}})
    if (r.size != 0 && r.size < tokens * 4)
      throw std::invalid_argument(std::string("ops::documentPositions: ") + name + " holds " +
                                  std::to_string(r.size) + " bytes, needs " + std::to_string(tokens * 4) +
                                  " (" + std::to_string(sequences) + " x " + std::to_string(T) + " int32)");
  if (tokens == 0) return;
  const codegen::DocumentPositionsParams params{256};
  const codegen::DocumentPositionsPush push{static_cast<uint32_t>(tokens), T, eot};
  exec.dispatch(exec.pipeline(params, codegen::generateDocumentPositions),
                {{ids, Access::Read}, {pos, Access::Write}}, push,
                {gridStrideGroups(exec.context(), tokens, params.localSize), 1, 1});
}

} // namespace helios::ops
