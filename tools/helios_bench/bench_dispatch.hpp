#pragma once
#include "bench_common.hpp"

namespace helios::bench {
nlohmann::json benchDispatch(vk::Context& ctx, const CommonOptions& options, uint32_t count,
                             uint32_t elements);
}
