#include "engine/dist/mpi_shared_sum.hpp"

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

SharedSegments allocateShared(MPI_Comm host, uint64_t bytes, int unit, const std::string& what) {
  int size = 0;
  MPI_Comm_size(host, &size);
  SharedSegments s;
  void* mine = nullptr;
  if (MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), unit, MPI_INFO_NULL, host, &mine, &s.win) !=
      MPI_SUCCESS)
    throw Error(
        fmt::format("{}: allocating a shared-memory window of {} KiB per rank failed", what, bytes >> 10));
  MPI_Win_lock_all(MPI_MODE_NOCHECK, s.win);
  s.base.assign(size_t(size), nullptr);
  for (int r = 0; r < size; ++r) {
    MPI_Aint got = 0;
    int gotUnit = 0;
    MPI_Win_shared_query(s.win, r, &got, &gotUnit, &s.base[size_t(r)]);
  }
  return s;
}

void freeShared(MPI_Win& win) {
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
}

HostWindow::HostWindow(MPI_Comm host, uint64_t floats, size_t threads, Barrier barrier, const char* what)
    : threads_(threads), barrier_(std::move(barrier)) {
  MPI_Comm_rank(host, &rank_);
  MPI_Comm_size(host, &size_);
  constexpr uint64_t kGranule = (64u << 10) / sizeof(float); // segments stay 64 KiB aligned to each other
  capacity_ = std::max<uint64_t>((floats + kGranule - 1) / kGranule, 1) * kGranule;
  SharedSegments s = allocateShared(host, capacity_ * sizeof(float), sizeof(float), what);
  win_ = s.win;
  for (void* base : s.base)
    segments_.push_back(static_cast<float*>(base));
}

HostWindow::~HostWindow() {
  freeShared(win_);
}

std::span<float> HostWindow::memory() {
  for (int r = 1; r < size_; ++r) // MPI places the segments back to back unless told otherwise
    if (segments_[size_t(r)] != segments_[0] + uint64_t(r) * capacity_) return {};
  return {segments_[0], uint64_t(size_) * capacity_};
}

void HostWindow::barrier(const char* what) {
  MPI_Win_sync(win_); // this rank's stores reach the window before the others are told to read
  barrier_(what);
  MPI_Win_sync(win_);
}

void HostWindow::sumSlices(std::span<const Slice> ranges, uint64_t granule, const char* what) {
  barrier(what); // every rank's segment is written
  float* mine = segment(rank_);
  for (const Slice& range : ranges) {
    const Slice s = sliceOf(range.count, rank_, size_, granule);
    const uint64_t first = range.first + s.first;
    parallelRanges(s.count, threads_, [&](size_t b, size_t e) {
      for (uint64_t i = first + b; i < first + e; ++i) {
        float sum = segments_[0][i];
        for (size_t r = 1; r < size_t(size_); ++r)
          sum += segments_[r][i];
        mine[i] = sum; // the others read only their own slices of my segment
      }
    });
  }
  barrier(what); // every slice is summed
}

SharedSum::SharedSum(MPI_Comm host, size_t threads, Barrier barrier)
    : host_(host), threads_(threads), barrier_(std::move(barrier)) {}

void SharedSum::run(std::span<float> data, const char* what) {
  if (!window_ || window_->segmentFloats() < data.size()) {
    window_.reset(); // collective on every rank alike: all see the same sizes in the same order
    window_ = std::make_unique<HostWindow>(host_, data.size(), threads_, barrier_, what);
  }
  HostWindow& w = *window_;
  parallelRanges(data.size(), threads_, [&](size_t b, size_t e) {
    std::memcpy(w.segment(w.rank()) + b, data.data() + b, (e - b) * sizeof(float));
  });
  const Slice all{0, data.size()};
  w.sumSlices({&all, 1}, 1, what);
  parallelRanges(data.size(), threads_, [&](size_t b, size_t e) {
    for (int r = 0; r < w.size(); ++r) { // the part of [b, e) in rank r's slice, from r's segment
      const Slice s = sliceOf(data.size(), r, w.size());
      const size_t lo = std::max<size_t>(b, s.first), hi = std::min<size_t>(e, s.first + s.count);
      if (lo < hi) std::memcpy(data.data() + lo, w.segment(r) + lo, (hi - lo) * sizeof(float));
    }
  });
  w.barrier(what); // nobody overwrites its segment while another rank still reads from it
}

} // namespace helios::dist
