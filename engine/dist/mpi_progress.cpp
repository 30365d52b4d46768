#include "engine/dist/mpi_progress.hpp"

#include "engine/dist/communicator.hpp"

#include <atomic>

namespace helios::dist {

ProgressBoard::ProgressBoard(MPI_Comm host) {
  MPI_Comm_rank(host, &rank_);
  MPI_Comm_size(host, &size_);
  void* base = nullptr;
  if (MPI_Win_allocate_shared(static_cast<MPI_Aint>(kStride * sizeof(uint64_t)), sizeof(uint64_t),
                              MPI_INFO_NULL, host, &base, &win_) != MPI_SUCCESS)
    throw Error("allocating the ranks' progress board in shared memory failed");
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
  *static_cast<uint64_t*>(base) = 0;
  counters_.assign(size_t(size_), nullptr);
  for (int r = 0; r < size_; ++r) {
    MPI_Aint bytes = 0;
    int unit = 0;
    MPI_Win_shared_query(win_, r, &bytes, &unit, &counters_[size_t(r)]);
  }
  MPI_Win_sync(win_);
  MPI_Barrier(host); // every counter is zero before anyone reads one
}

ProgressBoard::~ProgressBoard() {
  MPI_Win_unlock_all(win_);
  MPI_Win_free(&win_);
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
