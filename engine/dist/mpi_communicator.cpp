// The communicator over MPI (OpenMPI from Debian's libopenmpi-dev in CI). Every collective is non-blocking
// and waited for with a deadline, so a rank that hangs turns into an error on the others instead of a hang;
// a rank that dies is reported by mpirun, which then ends the job. Errors return (MPI_ERRORS_RETURN) so that
// they are reported with the rank and purpose before MPI_Abort ends the job.
#include "engine/dist/communicator.hpp"
#include "engine/dist/mpi_progress.hpp"
#include "engine/dist/mpi_shared_sum.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <fmt/format.h>
#include <thread>

namespace helios::dist {

bool mpiBuiltIn() {
  return true;
}

namespace {

using Clock = std::chrono::steady_clock;

// Slices of n elements for `ranks` ranks: sizes differ by at most one, in rank order.
void sliceCounts(size_t n, int ranks, std::vector<int>& counts, std::vector<int>& displs) {
  counts.assign(size_t(ranks), 0);
  displs.assign(size_t(ranks), 0);
  for (int r = 0; r < ranks; ++r) { // the slices the shared-memory sums use too (sliceOf)
    const Slice s = sliceOf(n, r, ranks);
    counts[size_t(r)] = static_cast<int>(s.count);
    displs[size_t(r)] = static_cast<int>(s.first);
  }
}

class MpiCommunicator final : public Communicator {
public:
  // The job's communicator: starts MPI (and finalizes it when destroyed).
  explicit MpiCommunicator(const Options& options) : options_(options), ownsMpi_(true) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &world_), "duplicating MPI_COMM_WORLD");
    setUp();
  }
  // Some of another communicator's ranks (split()): owns `comm`.
  MpiCommunicator(MPI_Comm comm, const Options& options) : options_(options), world_(comm) {
    MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN);
    setUp();
  }
  ~MpiCommunicator() override {
    window_.reset(); // the windows live on host_
    shared_.reset();
    board_.reset();
    MPI_Comm_free(&host_);
    MPI_Comm_free(&world_);
    if (ownsMpi_) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localRank() const override { return localRank_; }
  int localSize() const override { return localSize_; }

  void allreduceSum(std::span<float> data, const char* what) override {
    if (data.size() > size_t(INT_MAX))
      throw Error(fmt::format("{}: a buffer of {} floats is too large for one exchange", what, data.size()));
    if (shared_) return shared_->run(data, what);
    std::vector<int> counts, displs;
    sliceCounts(data.size(), size_, counts, displs);
    const int mine = counts[size_t(rank_)];
    // Every rank's copy of my slice, in rank order.
    std::vector<int> recvCounts(static_cast<size_t>(size_), mine), recvDispls(static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r)
      recvDispls[size_t(r)] = r * mine;
    copies_.resize(size_t(mine) * size_t(size_));
    MPI_Request req;
    check(MPI_Ialltoallv(data.data(), counts.data(), displs.data(), MPI_FLOAT, copies_.data(),
                         recvCounts.data(), recvDispls.data(), MPI_FLOAT, world_, &req),
          what);
    wait(req, what);
    sumInRankOrder(data.data() + displs[size_t(rank_)], size_t(mine));
    check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data.data(), counts.data(), displs.data(),
                          MPI_FLOAT, world_, &req),
          what);
    wait(req, what);
  }

  void broadcast(std::span<std::byte> data, const char* what) override {
    constexpr size_t kChunk = size_t(1) << 30; // MPI counts are ints
    for (size_t off = 0; off < data.size(); off += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, data.size() - off));
      MPI_Request req;
      check(MPI_Ibcast(data.data() + off, n, MPI_BYTE, 0, world_, &req), what);
      wait(req, what);
    }
  }

  std::vector<std::byte> allgatherBytes(std::span<const std::byte> mine, const char* what) override {
    if (mine.size() > size_t(INT_MAX))
      throw Error(fmt::format("{}: {} bytes are too many", what, mine.size()));
    std::vector<std::byte> all(mine.size() * size_t(size_));
    MPI_Request req;
    check(MPI_Iallgather(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                         static_cast<int>(mine.size()), MPI_BYTE, world_, &req),
          what);
    wait(req, what);
    return all;
  }

  std::unique_ptr<Communicator> split(bool member, const char* what) override {
    barrier(what);   // a rank that hangs shows here, within the deadline, not in the blocking split below
    window_.reset(); // collective frees, on every rank alike
    shared_.reset();
    board_.reset();
    MPI_Comm sub = MPI_COMM_NULL;
    check(MPI_Comm_split(world_, member ? 0 : MPI_UNDEFINED, rank_, &sub), what);
    if (!member) return nullptr;
    return std::make_unique<MpiCommunicator>(sub, options_);
  }

  std::vector<uint64_t> allgather(uint64_t value, const char* what) override {
    std::vector<uint64_t> all(size_t(size_), 0);
    MPI_Request req;
    check(MPI_Iallgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, world_, &req), what);
    wait(req, what);
    return all;
  }

  SharedWindow* sharedWindow(uint64_t floats, const char* what) override {
    if (!shared_) return nullptr;
    window_.reset();
    window_ = std::make_unique<HostWindow>(
        host_, floats, sumThreads_, [this](const char* w) { barrier(w); }, what);
    return window_.get();
  }

  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code); // MPI_Abort does not return; in case it does
  }

  std::string describe() const override {
    return fmt::format("MPI rank {} of {} (local {} of {})", rank_, size_, localRank_, localSize_);
  }

private:
  void setUp() {
    MPI_Comm_rank(world_, &rank_);
    MPI_Comm_size(world_, &size_);
    check(MPI_Comm_split_type(world_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &host_),
          "grouping the ranks by host");
    MPI_Comm_rank(host_, &localRank_);
    MPI_Comm_size(host_, &localSize_);
    // The host's cores shared by its ranks, at most 8 per rank.
    sumThreads_ = std::clamp<size_t>(std::thread::hardware_concurrency() / size_t(localSize_), 1, 8);
    if (size_ > 1 && localSize_ == size_) board_ = std::make_unique<ProgressBoard>(host_);
    if (options_.sharedMemory && size_ > 1 && localSize_ == size_)
      shared_ = std::make_unique<SharedSum>(host_, sumThreads_, [this](const char* what) { barrier(what); });
  }

  // Who a timed-out collective waits for: the ranks that never entered it, where the board shows them.
  std::string missing() const {
    if (!board_) return "the other ranks";
    std::string names;
    for (int r : board_->behind(collectives_))
      names += (names.empty() ? "" : ", ") + rankName(r);
    return names.empty() ? "the other ranks" : names;
  }

  void check(int rc, const char* what) const {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw Error(fmt::format("MPI failed while {}: {}", what, std::string(text, size_t(len))));
  }

  // out[i] = the ranks' copies of element i summed in rank order (the same bits whatever the thread count).
  void sumInRankOrder(float* out, size_t n) const {
    parallelRanges(n, sumThreads_, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        float s = copies_[i];
        for (size_t r = 1; r < size_t(size_); ++r)
          s += copies_[r * n + i];
        out[i] = s;
      }
    });
  }

  void barrier(const char* what) {
    MPI_Request req;
    check(MPI_Ibarrier(world_, &req), what);
    wait(req, what);
  }

  // Polls until the request completes; past the deadline the peers are taken to be hung or gone. A
  // non-blocking collective moves data only inside MPI_Test, so the loop never sleeps: a 50 us nap between
  // tests made a 500 MB exchange take most of a second (bench/results/2026-11-26-h200x2-mpi.json).
  void wait(MPI_Request& req, const char* what) {
    if (board_) board_->arrive(++collectives_);
    const Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                          std::chrono::duration<double>(options_.timeoutS));
    for (uint32_t spins = 1;; ++spins) {
      int done = 0;
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
      if (done) return;
      if (spins % 4096) continue;
      if (Clock::now() > deadline)
        throw Error(fmt::format("no answer from {} for {:g} s while {}: hung or dead (--dist-timeout)",
                                missing(), options_.timeoutS, what));
      std::this_thread::yield();
    }
  }

  Options options_;
  bool ownsMpi_ = false;
  MPI_Comm world_ = MPI_COMM_NULL, host_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, localRank_ = 0, localSize_ = 1;
  size_t sumThreads_ = 1;
  std::unique_ptr<SharedSum> shared_;    // every rank on this host: sums through shared memory
  std::unique_ptr<HostWindow> window_;   // sharedWindow()'s
  std::unique_ptr<ProgressBoard> board_; // every rank on this host: who reached which collective
  uint64_t collectives_ = 0;             // entered so far (wait() calls)
  std::vector<float> copies_;
};

} // namespace

std::unique_ptr<Communicator> connectMpi(const Options& options) {
  return std::make_unique<MpiCommunicator>(options);
}

} // namespace helios::dist
