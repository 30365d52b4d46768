#pragma once
// Run outputs: DIR/metrics.jsonl (one JSON record per step, buffered in memory and appended on flush) and
// DIR/loss.svg (train and validation loss against step, drawn here: axes, ticks, legend).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace helios::train {

class MetricsWriter {
public:
  // resumeStep > 0: keeps the records of steps <= resumeStep already in the file (a resumed run continues
  // the file; later records from an abandoned continuation are dropped). 0: starts a new file.
  MetricsWriter(std::filesystem::path path, uint64_t resumeStep);
  void add(const nlohmann::ordered_json& record); // buffered
  void flush();                                   // appends the buffer to the file
  const std::filesystem::path& path() const { return path_; }
  // Every record added or kept so far (for the loss curve).
  const std::vector<nlohmann::json>& history() const { return history_; }

private:
  std::filesystem::path path_;
  std::string buffer_;
  std::vector<nlohmann::json> history_;
};

struct CurvePoint {
  double step, loss;
};

// An SVG line chart of train (and validation) loss; writes atomically.
void writeLossSvg(const std::filesystem::path& path, const std::vector<CurvePoint>& train,
                  const std::vector<CurvePoint>& val, const std::string& title);

// Train points ("loss") and validation points ("val_loss") of metrics records.
void curvesFromHistory(const std::vector<nlohmann::json>& history, std::vector<CurvePoint>& train,
                       std::vector<CurvePoint>& val);

} // namespace helios::train
