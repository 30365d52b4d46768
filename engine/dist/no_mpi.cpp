// Linked where CMake found no MPI: the trainer runs as a single process.
#include "engine/dist/communicator.hpp"

namespace helios::dist {

bool mpiBuiltIn() {
  return false;
}

std::unique_ptr<Communicator> connectMpi(const Options&) {
  throw Error("this build has no MPI");
}

} // namespace helios::dist
