#pragma once
// The gradient sum of ranks that share one host, through an MPI shared-memory window instead of messages:
// each rank copies its buffer into its own segment, adds up its slice over every rank's segment in rank
// order (the order the message path uses, so the same bits), and copies every rank's summed slice back.
// Message passing between processes copies each byte several times through small shared buffers; here each
// byte is copied once in and once out, on several threads. Only mpi_communicator.cpp uses this.
#include <mpi.h>

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

namespace helios::dist {

class SharedSum {
public:
  // Called collectively (by every rank of `host`, in the same order); `sync` is a deadline-bounded barrier.
  using Sync = std::function<void(const char* what)>;
  SharedSum(MPI_Comm host, size_t threads, Sync sync);
  ~SharedSum();
  SharedSum(const SharedSum&) = delete;
  SharedSum& operator=(const SharedSum&) = delete;

  // data = sum over the ranks; counts/displs: each rank's slice (sliceCounts). Collective.
  void run(std::span<float> data, const std::vector<int>& counts, const std::vector<int>& displs,
           const char* what);

private:
  void reserve(size_t floats, const char* what); // grows every segment to `floats` (collective)
  void release();
  void barrier(const char* what);

  MPI_Comm host_;
  int rank_ = 0, size_ = 1;
  size_t threads_;
  Sync sync_;
  MPI_Win win_ = MPI_WIN_NULL;
  size_t capacity_ = 0;          // floats per segment
  std::vector<float*> segments_; // every rank's segment, mapped into this process
};

// fn(begin, end) over [0, n) cut into at most `threads` contiguous ranges run at once.
void parallelRanges(size_t n, size_t threads, const std::function<void(size_t, size_t)>& fn);

} // namespace helios::dist
