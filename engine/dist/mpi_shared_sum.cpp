#include "engine/dist/mpi_shared_sum.hpp"

#include "engine/dist/communicator.hpp"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <thread>

namespace helios::dist {

void parallelRanges(size_t n, size_t threads, const std::function<void(size_t, size_t)>& fn) {
  constexpr size_t kMinPerThread = size_t(1) << 18; // below this a thread costs more than it saves
  const size_t t = std::clamp<size_t>(n / kMinPerThread, 1, std::max<size_t>(threads, 1));
  std::vector<std::thread> pool;
  for (size_t i = 1; i < t; ++i)
    pool.emplace_back(fn, n * i / t, n * (i + 1) / t);
  fn(0, n / t);
  for (auto& th : pool)
    th.join();
}

SharedSum::SharedSum(MPI_Comm host, size_t threads, Sync sync)
    : host_(host), threads_(threads), sync_(std::move(sync)) {
  MPI_Comm_rank(host_, &rank_);
  MPI_Comm_size(host_, &size_);
}

SharedSum::~SharedSum() {
  release();
}

void SharedSum::release() {
  if (win_ == MPI_WIN_NULL) return;
  MPI_Win_unlock_all(win_);
  MPI_Win_free(&win_);
  segments_.clear();
  capacity_ = 0;
}

void SharedSum::barrier(const char* what) {
  MPI_Win_sync(win_); // this rank's stores reach the window before the others are told to read
  sync_(what);
  MPI_Win_sync(win_);
}

void SharedSum::reserve(size_t floats, const char* what) {
  if (floats <= capacity_) return;
  release();
  constexpr size_t kPage = 4096 / sizeof(float); // whole pages per segment
  const size_t cap = (floats + kPage - 1) / kPage * kPage;
  void* base = nullptr;
  const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(cap * sizeof(float)), sizeof(float),
                                         MPI_INFO_NULL, host_, &base, &win_);
  if (rc != MPI_SUCCESS)
    throw Error(fmt::format("{}: allocating a shared-memory window of {} MiB per rank failed", what,
                            cap * sizeof(float) >> 20));
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
  segments_.assign(size_t(size_), nullptr);
  for (int r = 0; r < size_; ++r) {
    MPI_Aint bytes = 0;
    int unit = 0;
    MPI_Win_shared_query(win_, r, &bytes, &unit, &segments_[size_t(r)]);
  }
  capacity_ = cap;
}

void SharedSum::run(std::span<float> data, const std::vector<int>& counts, const std::vector<int>& displs,
                    const char* what) {
  reserve(data.size(), what);
  float* mineIn = segments_[size_t(rank_)];
  parallelRanges(data.size(), threads_, [&](size_t b, size_t e) {
    std::memcpy(mineIn + b, data.data() + b, (e - b) * sizeof(float));
  });
  barrier(what); // every rank's buffer is in its segment

  // My slice summed over the segments in rank order, into my own segment: the others read only their
  // own slices of it.
  const size_t first = size_t(displs[size_t(rank_)]), n = size_t(counts[size_t(rank_)]);
  parallelRanges(n, threads_, [&](size_t b, size_t e) {
    for (size_t i = first + b; i < first + e; ++i) {
      float s = segments_[0][i];
      for (size_t r = 1; r < size_t(size_); ++r)
        s += segments_[r][i];
      mineIn[i] = s;
    }
  });
  barrier(what); // every slice is summed

  parallelRanges(data.size(), threads_, [&](size_t b, size_t e) {
    for (int r = 0; r < size_; ++r) { // the part of [b, e) inside rank r's slice, from r's segment
      const size_t lo = std::max(b, size_t(displs[size_t(r)]));
      const size_t hi = std::min(e, size_t(displs[size_t(r)]) + size_t(counts[size_t(r)]));
      if (lo < hi) std::memcpy(data.data() + lo, segments_[size_t(r)] + lo, (hi - lo) * sizeof(float));
    }
  });
  barrier(what); // nobody overwrites its segment while another rank still reads from it
}

} // namespace helios::dist
