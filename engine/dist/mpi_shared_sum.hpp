#pragma once
// Sums over the ranks of one host through MPI shared memory instead of messages. HostWindow is a window
// every rank maps (MPI_Win_allocate_shared), with the rank-ordered slice sum between two barriers; SharedSum
// is allreduceSum through one: each rank copies its buffer into its own segment, sums its slice over every
// segment in rank order (the order the message path uses, so the same bits) and copies every rank's summed
// slice back. Message passing between processes copies each byte several times through small shared
// buffers; here each byte is copied once in and once out, on several threads. Only mpi_communicator.cpp
// uses this.
#include "engine/dist/communicator.hpp"

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace helios::dist {

// A deadline-bounded barrier over the host's ranks (the communicator's).
using Barrier = std::function<void(const char* what)>;

// MPI_Win_allocate_shared of `bytes` per rank over `host`, open for access from every rank
// (MPI_Win_lock_all), and every rank's part as mapped into this process. Collective; throws Error naming
// `what`. freeShared undoes it (collective too).
struct SharedSegments {
  MPI_Win win = MPI_WIN_NULL;
  std::vector<void*> base; // per rank of `host`
};
SharedSegments allocateShared(MPI_Comm host, uint64_t bytes, int unit, const std::string& what);
void freeShared(MPI_Win& win);

class HostWindow final : public SharedWindow {
public:
  // Collective over `host`. Segments hold at least `floats`, rounded up to whole 64 KiB.
  HostWindow(MPI_Comm host, uint64_t floats, size_t threads, Barrier barrier, const char* what);
  ~HostWindow() override;
  HostWindow(const HostWindow&) = delete;
  HostWindow& operator=(const HostWindow&) = delete;

  std::span<float> memory() override;
  uint64_t segmentFloats() const override { return capacity_; }
  void sumSlices(std::span<const Slice> ranges, uint64_t granule, const char* what) override;

  float* segment(int rank) const { return segments_[size_t(rank)]; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  void barrier(const char* what); // with the window's memory synchronised on both sides

private:
  int rank_ = 0, size_ = 1;
  size_t threads_;
  Barrier barrier_;
  MPI_Win win_ = MPI_WIN_NULL;
  uint64_t capacity_ = 0;        // floats per segment
  std::vector<float*> segments_; // every rank's segment, mapped into this process
};

class SharedSum {
public:
  SharedSum(MPI_Comm host, size_t threads, Barrier barrier);
  // data = its sum over the ranks (collective; the window grows to the largest buffer seen).
  void run(std::span<float> data, const char* what);

private:
  MPI_Comm host_;
  size_t threads_;
  Barrier barrier_;
  std::unique_ptr<HostWindow> window_;
};

// fn(begin, end) over [0, n) cut into at most `threads` contiguous ranges run at once.
void parallelRanges(size_t n, size_t threads, const std::function<void(size_t, size_t)>& fn);

} // namespace helios::dist
