#pragma once
// Data-parallel training talks to its peer processes only through this interface. SingleProcess is the
// trainer's default and does nothing; the MPI communicator (mpi_communicator.cpp, built where CMake finds
// MPI) serves `mpirun -np N helios-train ...`. Every collective is called by every rank in the same order;
// `what` names the caller's purpose in errors ("averaging gradients").
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace helios::dist {

// A collective failed or timed out; the message names the rank and the purpose.
class Error : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The part [first, first + count) of n elements that `rank` of `ranks` sums: contiguous, in rank order, cut
// at multiples of `granule` (descriptor offsets stay aligned), sizes as even as that allows.
struct Slice {
  uint64_t first = 0, count = 0;
};
Slice sliceOf(uint64_t n, int rank, int ranks, uint64_t granule = 1);

// Memory every rank of one host maps: size() segments of segmentFloats() floats, rank r's at
// r * segmentFloats() of memory(). A rank writes only its own segment and the slices it sums.
class SharedWindow {
public:
  virtual ~SharedWindow() = default;
  virtual std::span<float> memory() = 0;
  virtual uint64_t segmentFloats() const = 0;
  // Collective, once every rank has written its segment: for each range (segment coordinates), this rank's
  // slice (sliceOf(range.count, rank, ranks, granule)) summed over the segments in rank order into its own
  // segment. Returns when every rank has summed its slices, so each summed slice of every range is read from
  // its owner's segment afterwards.
  virtual void sumSlices(std::span<const Slice> ranges, uint64_t granule, const char* what) = 0;
};

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int localRank() const = 0; // among the ranks on this host (picks the device)
  virtual int localSize() const = 0;
  // Replaces `data` by its sum over the ranks, bit-identical on every rank and reproducible: each rank adds
  // up one slice of the buffer over the ranks in rank order, then the slices are gathered (so the result does
  // not depend on the MPI library's choice of reduction algorithm).
  virtual void allreduceSum(std::span<float> data, const char* what) = 0;
  void allreduceMean(std::span<float> data, const char* what);             // the sum, divided by size()
  virtual void broadcast(std::span<std::byte> data, const char* what) = 0; // rank 0's bytes to every rank
  virtual std::vector<uint64_t> allgather(uint64_t value, const char* what) = 0;
  // Every rank's `mine` (the same size on every rank), in rank order. The default serves one rank only.
  virtual std::vector<std::byte> allgatherBytes(std::span<const std::byte> mine, const char* what);
  // Collective: the ranks passing `member` as a communicator of their own (in rank order), null for the
  // others. This communicator's shared windows are released first (every rank takes part), so whoever holds
  // one (an imported buffer) must have let it go. The default serves one rank only.
  virtual std::unique_ptr<Communicator> split(bool member, const char* what);
  // What to call each rank in messages, e.g. its device: "rank 1 (llvmpipe)". Empty: the number alone.
  void setRankLabels(std::vector<std::string> labels) { labels_ = std::move(labels); }
  std::string rankName(int rank) const;
  // A shared window of at least `floats` per rank when every rank shares this host and the communicator
  // offers one, else null. Collective; the communicator owns it, and a later call replaces it.
  virtual SharedWindow* sharedWindow(uint64_t floats, const char* what) {
    (void)floats, (void)what;
    return nullptr;
  }
  // Ends every rank of the job with `code` (after this rank printed why).
  [[noreturn]] virtual void abort(int code) = 0;
  virtual std::string describe() const = 0; // "MPI rank 1 of 4 (local 1 of 2)"

protected:
  std::vector<std::string> labels_;
};

// allgatherBytes for doubles (`mine`: the same count on every rank) and for text of any length.
std::vector<double> allgatherValues(Communicator& comm, std::span<const double> mine, const char* what);
std::vector<std::string> allgatherText(Communicator& comm, const std::string& mine, const char* what);

class SingleProcess final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int localRank() const override { return 0; }
  int localSize() const override { return 1; }
  void allreduceSum(std::span<float>, const char*) override {}
  void broadcast(std::span<std::byte>, const char*) override {}
  std::vector<uint64_t> allgather(uint64_t value, const char*) override { return {value}; }
  [[noreturn]] void abort(int code) override;
  std::string describe() const override { return "single process"; }
};

struct Options {
  double timeoutS = 900; // a collective waiting longer than this ends the job (a rank hangs or is gone)
  // When every rank shares one host, gradients are summed through a shared-memory window (mpi_shared_sum)
  // instead of MPI messages; both give the same bits.
  bool sharedMemory = true;
};

// The MPI communicator when this process was started by mpirun (mpiLaunchSize() says so), else
// SingleProcess. Throws Error when mpirun started several ranks but this build has no MPI.
std::unique_ptr<Communicator> connect(const Options& options = {});

// The world size announced by the launcher's environment (OMPI_COMM_WORLD_SIZE, or PMI_SIZE for MPICH's
// Hydra); 0 when not launched by mpirun. Throws Error on a malformed value.
uint32_t mpiLaunchSize();
bool mpiBuiltIn();

// Implemented by mpi_communicator.cpp, or by no_mpi.cpp (which throws) where MPI was not found.
std::unique_ptr<Communicator> connectMpi(const Options& options);

} // namespace helios::dist
