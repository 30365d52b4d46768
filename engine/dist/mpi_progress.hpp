#pragma once
// Where each rank of one host has got to: a counter per rank in MPI shared memory, set as the rank enters
// each collective (every rank enters the same collectives in the same order). A rank whose collective times
// out reads the others' counters to name the ranks that never arrived, instead of "the other ranks". Only
// mpi_communicator.cpp uses this.
#include <mpi.h>

#include <cstdint>
#include <vector>

namespace helios::dist {

class ProgressBoard {
public:
  explicit ProgressBoard(MPI_Comm host); // collective over `host`; throws Error when MPI refuses the window
  ~ProgressBoard();
  ProgressBoard(const ProgressBoard&) = delete;
  ProgressBoard& operator=(const ProgressBoard&) = delete;

  void arrive(uint64_t collective); // this rank has entered collective number `collective` (1, 2, ...)
  // The ranks (of `host`) that have not entered collective number `collective` yet.
  std::vector<int> behind(uint64_t collective) const;

private:
  static constexpr size_t kStride = 8; // uint64 per rank: one cache line each, no false sharing
  int rank_ = 0, size_ = 1;
  MPI_Win win_ = MPI_WIN_NULL;
  std::vector<uint64_t*> counters_; // every rank's counter, mapped into this process
};

} // namespace helios::dist
