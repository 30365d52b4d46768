#include "engine/dist/mpi_progress.hpp"

#include "engine/dist/mpi_shared_sum.hpp"

#include <atomic>

namespace helios::dist {

ProgressBoard::ProgressBoard(MPI_Comm host) {
  MPI_Comm_rank(host, &rank_);
  MPI_Comm_size(host, &size_);
  SharedSegments s = allocateShared(host, kStride * sizeof(uint64_t), sizeof(uint64_t), "the progress board");
  win_ = s.win;
  for (void* base : s.base)
    counters_.push_back(static_cast<uint64_t*>(base));
  *counters_[size_t(rank_)] = 0;
  MPI_Win_sync(win_);
  MPI_Barrier(host); // every counter is zero before anyone reads one
}

ProgressBoard::~ProgressBoard() {
  freeShared(win_);
}

void ProgressBoard::arrive(uint64_t collective) {
  std::atomic_ref<uint64_t>(*counters_[size_t(rank_)]).store(collective, std::memory_order_release);
}

std::vector<int> ProgressBoard::behind(uint64_t collective) const {
  std::vector<int> late;
  for (int r = 0; r < size_; ++r)
    if (std::atomic_ref<uint64_t>(*counters_[size_t(r)]).load(std::memory_order_acquire) < collective)
      late.push_back(r);
  return late;
}

} // namespace helios::dist
