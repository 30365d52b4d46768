// Graph: graph::GraphExecutor behind the public handle; ops called inside record() go to it.
#include "helios/graph.hpp"

#include "api/internal.hpp"
#include "engine/graph/graph_executor.hpp"

#include <stdexcept>

namespace helios {

struct Graph::Impl {
  Device device;
  graph::GraphExecutor exec;
  bool inStep = false;
  explicit Impl(const Device& d) : device(d), exec(*d.impl()->ctx) {}
};

Graph::Graph(const Device& device) : impl_(std::make_unique<Impl>(device)) {}

Graph::~Graph() = default;

void Graph::record(const std::string& key, const std::function<void()>& ops) {
  Device::Impl& device = *impl_->device.impl();
  if (device.recording)
    throw std::logic_error("helios::Graph::record: another recording runs on this device");
  if (!impl_->inStep) {
    impl_->exec.beginStep();
    impl_->inStep = true;
  }
  device.recording = &impl_->exec;
  try {
    impl_->exec.replayable(key, ops);
  } catch (...) {
    device.recording = nullptr;
    throw;
  }
  device.recording = nullptr;
}

GraphStats Graph::run() {
  graph::StepStats s;
  if (impl_->inStep) s = impl_->exec.endStep();
  impl_->inStep = false;
  impl_->exec.flush();
  return {s.submits, s.dispatches, s.barriers, s.replayedSegments};
}

} // namespace helios
