#pragma once
// helios-train's per-rank options under mpirun: --device and --dist-delay hold one value for every rank or a
// comma-separated list of one per rank (in rank order); --share is engine/dist/shares.hpp's.
#include <string>

namespace helios::train_cli {

// This rank's entry of `text`: the whole of it when it lists one value, else entry `rank` of a list of
// exactly `ranks` entries. Throws std::invalid_argument naming `flag` for a list of another length or an
// empty entry.
std::string rankEntry(const std::string& text, int rank, int ranks, const char* flag);

// --dist-delay's entry for this rank in ms per sequence (0 when not given); throws std::invalid_argument for
// a negative, non-finite or malformed entry.
double rankDelay(const std::string& text, int rank, int ranks);

} // namespace helios::train_cli
