#pragma once
// A tiny registry of kernel generators: name -> { default Kernel, sweep of Kernels over parameter sets }.
// Tools (helios-spv list/dump/validate) and tests iterate it. Registration is explicit (call your family's
// registerXxx(KernelRegistry&) from the tool), so nothing depends on static-initialisation order or on the
// linker keeping unreferenced objects of static libraries.
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel.hpp"

namespace helios::codegen {

struct KernelGenerator {
  std::string name;                           // unique, e.g. "sample.vadd_f32" or "gemm.tiled_f32"
  std::string description;                    // one line for `helios-spv list`
  std::function<Kernel()> makeDefault;        // the default parameter set
  std::function<std::vector<Kernel>()> sweep; // every parameter set worth validating (may be empty)

  // sweep() if given, else just the default.
  std::vector<Kernel> all() const { return sweep ? sweep() : std::vector<Kernel>{makeDefault()}; }
};

class KernelRegistry {
public:
  void add(KernelGenerator g) {
    if (!g.makeDefault)
      throw std::invalid_argument("KernelRegistry: generator '" + g.name + "' has no makeDefault");
    if (find(g.name)) throw std::invalid_argument("KernelRegistry: duplicate generator '" + g.name + "'");
    gens_.push_back(std::move(g));
  }
  const std::vector<KernelGenerator>& all() const { return gens_; }
  const KernelGenerator* find(std::string_view name) const {
    for (const auto& g : gens_)
      if (g.name == name) return &g;
    return nullptr;
  }

private:
  std::vector<KernelGenerator> gens_;
};

} // namespace helios::codegen
