#include "engine/dist/communicator.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <string_view>

namespace helios::dist {

void Communicator::allreduceMean(std::span<float> data, const char* what) {
  allreduceSum(data, what);
  const auto n = static_cast<float>(size());
  for (float& v : data)
    v /= n;
}

std::vector<std::byte> Communicator::allgatherBytes(std::span<const std::byte> mine, const char* what) {
  if (size() != 1) throw Error(fmt::format("{}: {} cannot gather bytes", what, describe()));
  return {mine.begin(), mine.end()};
}

std::unique_ptr<Communicator> Communicator::split(bool member, const char* what) {
  if (size() != 1) throw Error(fmt::format("{}: {} cannot be split", what, describe()));
  return member ? std::make_unique<SingleProcess>() : nullptr;
}

std::string Communicator::rankName(int rank) const {
  if (size_t(rank) < labels_.size() && !labels_[size_t(rank)].empty())
    return fmt::format("rank {} ({})", rank, labels_[size_t(rank)]);
  return fmt::format("rank {}", rank);
}

std::vector<double> allgatherValues(Communicator& comm, std::span<const double> mine, const char* what) {
  const std::vector<std::byte> all = comm.allgatherBytes(std::as_bytes(mine), what);
  std::vector<double> out(all.size() / sizeof(double));
  std::memcpy(out.data(), all.data(), out.size() * sizeof(double));
  return out;
}

std::vector<std::string> allgatherText(Communicator& comm, const std::string& mine, const char* what) {
  const std::vector<uint64_t> lengths = comm.allgather(mine.size(), what);
  const uint64_t longest = *std::max_element(lengths.begin(), lengths.end());
  std::string padded = mine;
  padded.resize(longest, '\0');
  const std::vector<std::byte> all = comm.allgatherBytes(std::as_bytes(std::span<const char>(padded)), what);
  std::vector<std::string> out;
  for (size_t r = 0; r < lengths.size(); ++r)
    out.emplace_back(reinterpret_cast<const char*>(all.data()) + r * longest, lengths[r]);
  return out;
}

Slice sliceOf(uint64_t n, int rank, int ranks, uint64_t granule) {
  const auto cut = [&](int r) { // rank r's start: its even share, rounded down to the granule
    const uint64_t even =
        n / uint64_t(ranks) * uint64_t(r) + std::min<uint64_t>(uint64_t(r), n % uint64_t(ranks));
    return r == ranks ? n : even / granule * granule;
  };
  const uint64_t first = cut(rank);
  return {first, cut(rank + 1) - first};
}

void SingleProcess::abort(int code) {
  std::exit(code);
}

uint32_t mpiLaunchSize() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* v = std::getenv(name);
    if (!v) continue;
    const std::string_view s(v);
    uint32_t n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || end != s.data() + s.size() || n == 0)
      throw Error(fmt::format("{}='{}' is not a positive rank count", name, s));
    return n;
  }
  return 0;
}

std::unique_ptr<Communicator> connect(const Options& options) {
  const uint32_t launched = mpiLaunchSize();
  if (launched == 0) return std::make_unique<SingleProcess>();
  if (!mpiBuiltIn()) {
    if (launched == 1) return std::make_unique<SingleProcess>();
    throw Error(fmt::format("mpirun started {} ranks, but this build has no MPI (CMake did not find it: "
                            "install libopenmpi-dev and reconfigure)",
                            launched));
  }
  return connectMpi(options);
}

} // namespace helios::dist
