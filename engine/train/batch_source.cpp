#include "engine/train/batch_source.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace helios::train {

ShardDraws::ShardDraws(uint32_t rows, Shard shard, const char* who)
    : rows_(rows), shard_(shard.batch == 0 ? Shard{0, rows, rows} : shard) {
  if (shard_.count == 0 || rows_ % shard_.count || shard_.first + shard_.count > shard_.batch)
    throw std::invalid_argument(fmt::format("{}: {} rows as rows [{}, {}) of micro-batches of {}", who, rows_,
                                            shard_.first, shard_.first + shard_.count, shard_.batch));
}

int64_t ShardDraws::row(uint64_t i) const {
  const uint64_t m = i / shard_.batch, j = i % shard_.batch;
  if (j < shard_.first || j >= shard_.first + shard_.count) return -1;
  return int64_t(m * shard_.count + j - shard_.first);
}

} // namespace helios::train
