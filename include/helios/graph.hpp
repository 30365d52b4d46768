#pragma once
// The graph executor: ops recorded into a few command buffers with inferred barriers and submitted at once,
// and recordings kept under a key and replayed without calling the code that recorded them (as CUDA graphs).
#include "helios/device.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace helios {

struct GraphStats {
  uint32_t submits = 0, dispatches = 0, barriers = 0, replayedSegments = 0;
};

class HELIOS_API Graph {
public:
  explicit Graph(const Device& device);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // The first call with `key` runs `ops`, recording every op it calls into the graph; later calls replay
  // that recording without running `ops`. The tensors it names must stay alive; their contents may change
  // between runs (Tensor::write). One graph records at a time per device.
  void record(const std::string& key, const std::function<void()>& ops);
  // Submits what was recorded or replayed since the last run and waits for the GPU.
  GraphStats run();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace helios
