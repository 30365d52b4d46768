#pragma once
// How the global batch is shared out over data-parallel ranks. A rank's share is a contiguous run of rows
// (sequences) of every micro-batch: rank r trains on rows [first, first + count) of each of the step's
// micro-batches, so the ranks together train on exactly the rows one process would, and each rank's gradient
// is weighted by count / batch (its tokens' part of the step). Pure functions over plain data.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace helios::dist {

// Even: as equal as whole rows allow. Hand: in proportion to --share weights. Measured: set from each rank's
// measured step time and re-balanced when the ratio drifts (balance.hpp).
enum class ShareMode { Even, Hand, Measured };
const char* shareModeName(ShareMode mode); // "even", "by hand", "measured"

// --share as given: "auto" (Measured), "even", or one positive weight per rank ("7,1").
struct ShareSpec {
  std::optional<ShareMode> mode; // empty: not given (resolveMode picks)
  std::vector<double> weights;   // Hand only
  std::string text;              // as given, for messages
};
// Throws std::invalid_argument naming the bad entry (not a number, zero, negative, not finite).
ShareSpec parseShareSpec(std::string_view text);

// The mode a job uses: the one given, else Measured where the ranks' devices differ and Even where alike.
ShareMode resolveMode(const ShareSpec& spec, bool alikeDevices);

// `batch` rows split in proportion to `weights` (one per rank, all positive), each rank at least one row:
// whole rows by largest remainder. Throws std::invalid_argument when a rank's exact part is below one row.
std::vector<uint32_t> rowsFromWeights(uint32_t batch, std::span<const double> weights);

// The first split of a job of `ranks` ranks: Even and Measured start even, Hand follows the weights. Throws
// std::invalid_argument, naming --share or --batch, when the weights are not one per rank or a rank would get
// less than one row.
std::vector<uint32_t> initialRows(const ShareSpec& spec, ShareMode mode, uint32_t ranks, uint32_t batch);

// Where measured shares start (rows from initialRows' even split are refined from there): where ranks on
// CPU devices (lavapipe, a last resort) train beside GPUs, each CPU rank starts at one row, so that the first
// measured steps do not wait for an even share on the CPU, and the GPU ranks share the rest evenly;
// otherwise even. `cpu`: one flag per rank.
std::vector<uint32_t> measuredStart(uint32_t batch, const std::vector<bool>& cpu);

// Rank r's rows of each micro-batch under `rows` (one count per rank; 0: the rank trains on none).
struct RowRange {
  uint32_t first = 0, count = 0;
};
RowRange rowsOf(std::span<const uint32_t> rows, size_t rank);

// "5+2+1" (0 for a rank left out).
std::string describeRows(std::span<const uint32_t> rows);

} // namespace helios::dist
