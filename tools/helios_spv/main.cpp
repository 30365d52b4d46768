// helios-spv: inspect kernels built with the SPIR-V builder.
//   helios-spv demo [--dis] [--validate] [--out FILE]   built-in sample kernel (sample.vadd_f32)
//   helios-spv list                                     registered kernel generators
//   helios-spv dump NAME [--sweep] [--out FILE]         disassemble a generator's default (or every) kernel
//   helios-spv validate [NAME...] [--all]               spirv-val (Vulkan 1.3) over default or sweep kernels
//   helios-spv hashes [--lowered]                       a fingerprint of every sweep kernel's words (and of
//                                                       the coop GEMM sweep lowered at 8 lanes), to compare
//                                                       the emitted SPIR-V before and after a change
#include <cstdio>
#include <fstream>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "codegen/kernels/all.hpp"
#include "codegen/kernels/gemm_coop.hpp"
#include "codegen/registry.hpp"
#include "codegen/spirv/ids.hpp"
#include "codegen/spirv/samples.hpp"
#include "codegen/spirv/tools.hpp"
#include "engine/core/fnv1a.hpp"
#include "engine/io/atomic_file.hpp"

namespace {

using helios::codegen::Kernel;
using helios::codegen::KernelGenerator;
using helios::codegen::KernelRegistry;

// The builder's samples plus every kernel family (codegen/kernels/all.cpp).
KernelRegistry buildRegistry() {
  KernelRegistry r;
  helios::spv::samples::registerSamples(r);
  helios::codegen::registerAllKernels(r);
  return r;
}

void printHeader(const Kernel& k) {
  std::cout << "; kernel " << k.name << "  key=" << k.cacheKey << "  words=" << k.spirv.size()
            << "  buffers=" << k.numBuffers << "  push=" << k.pushConstantBytes
            << "B  local=" << k.localSize[0] << "x" << k.localSize[1] << "x" << k.localSize[2];
  if (k.requiredSubgroupSize) std::cout << "  subgroup=" << k.requiredSubgroupSize;
  std::cout << "\n";
}

bool writeBinary(const std::string& path, const std::vector<uint32_t>& words) {
  try {
    helios::io::writeFileAtomically(path, std::as_bytes(std::span<const uint32_t>(words)));
    return true;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return false;
  }
}

// Validates each kernel; prints one line per kernel and the validator's message on failure.
int validateKernels(const std::vector<Kernel>& kernels) {
  int failures = 0;
  for (const Kernel& k : kernels) {
    const auto r = helios::spv::validate(k.spirv);
    std::cout << (r.ok ? "PASS " : "FAIL ") << k.name << "\n";
    if (!r.ok) {
      ++failures;
      std::cout << r.message;
    }
  }
  return failures;
}

void printHash(const Kernel& k) {
  const std::string_view bytes(reinterpret_cast<const char*>(k.spirv.data()), k.spirv.size() * 4);
  std::printf("%016llx %s\n", static_cast<unsigned long long>(helios::fnv1a64(bytes)), k.cacheKey.c_str());
}

// The coop GEMM sweep's subgroup-scope kernels lowered at 8 lanes (lavapipe's), those that validate.
void printLoweredGemmHashes() {
  for (helios::codegen::GemmCoopParams p : helios::codegen::gemmCoopSweep()) {
    if (p.workgroupScope) continue;
    p.lowered = true;
    p.subgroupSize = 8;
    p.maxSharedBytes = 65536;
    try {
      p.validate();
    } catch (const std::invalid_argument&) {
      continue;
    }
    printHash(helios::codegen::generateGemmCoop(p));
  }
}

std::vector<Kernel> generate(const KernelGenerator& g, bool sweep) {
  try {
    return sweep ? g.all() : std::vector<Kernel>{g.makeDefault()};
  } catch (const helios::spv::BuildError& e) {
    std::cerr << "helios-spv: generator '" << g.name << "' failed: " << e.what() << "\n";
    return {};
  }
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"helios-spv: dump and validate SPIR-V kernels built by Helios' code generators"};
  app.require_subcommand(1);

  auto* demo = app.add_subcommand("demo", "Build the sample vector-add kernel");
  bool demoDis = false, demoValidate = false;
  std::string demoOut;
  demo->add_flag("--dis", demoDis, "Print the disassembly");
  demo->add_flag("--validate", demoValidate, "Validate with spirv-val rules (Vulkan 1.3)");
  demo->add_option("--out", demoOut, "Write the binary module to this file");

  auto* list = app.add_subcommand("list", "List registered kernel generators");

  auto* dump = app.add_subcommand("dump", "Disassemble a generator's kernel(s)");
  std::string dumpName, dumpOut;
  bool dumpSweep = false;
  dump->add_option("name", dumpName, "Generator name (see `list`)")->required();
  dump->add_flag("--sweep", dumpSweep, "Dump every kernel of the parameter sweep, not only the default");
  dump->add_option("--out", dumpOut, "Write the (default) binary module to this file");

  auto* val = app.add_subcommand("validate", "Validate kernels (default parameter sets, or --sweep)");
  std::vector<std::string> valNames;
  bool valAll = false, valSweep = false;
  val->add_option("names", valNames, "Generator names");
  val->add_flag("--all", valAll, "Every registered generator");
  val->add_flag("--sweep", valSweep, "Every parameter set of the sweep, not only the default");

  auto* hashes = app.add_subcommand("hashes", "Print a fingerprint of every sweep kernel's SPIR-V words");
  bool hashLowered = false;
  hashes->add_flag("--lowered", hashLowered, "Also the coop GEMM sweep lowered at 8 lanes");

  CLI11_PARSE(app, argc, argv);
  const KernelRegistry registry = buildRegistry();

  try {
    if (*demo) {
      const Kernel k = helios::spv::samples::vectorAdd();
      if (!demoOut.empty() && !writeBinary(demoOut, k.spirv)) {
        std::cerr << "helios-spv: cannot write " << demoOut << "\n";
        return 1;
      }
      if (demoDis || !demoValidate) {
        printHeader(k);
        std::cout << helios::spv::disassemble(k.spirv);
      }
      if (demoValidate) return validateKernels({k}) == 0 ? 0 : 1;
      return 0;
    }
    if (*list) {
      for (const auto& g : registry.all())
        std::printf("%-28s %s\n", g.name.c_str(), g.description.c_str());
      return 0;
    }
    if (*dump) {
      const KernelGenerator* g = registry.find(dumpName);
      if (!g) {
        std::cerr << "helios-spv: no generator named '" << dumpName << "' (try `helios-spv list`)\n";
        return 1;
      }
      const auto kernels = generate(*g, dumpSweep);
      if (kernels.empty()) return 1;
      if (!dumpOut.empty() && !writeBinary(dumpOut, kernels.front().spirv)) return 1;
      for (const Kernel& k : kernels) {
        printHeader(k);
        std::cout << helios::spv::disassemble(k.spirv) << "\n";
      }
      return 0;
    }
    if (*hashes) {
      for (const auto& g : registry.all())
        for (const Kernel& k : generate(g, true))
          printHash(k);
      if (hashLowered) printLoweredGemmHashes();
      return 0;
    }
    if (*val) {
      std::vector<const KernelGenerator*> gens;
      if (valAll || valNames.empty()) {
        for (const auto& g : registry.all())
          gens.push_back(&g);
      } else {
        for (const auto& n : valNames) {
          const KernelGenerator* g = registry.find(n);
          if (!g) {
            std::cerr << "helios-spv: no generator named '" << n << "'\n";
            return 1;
          }
          gens.push_back(g);
        }
      }
      int failures = 0, total = 0;
      for (const KernelGenerator* g : gens) {
        const auto kernels = generate(*g, valSweep);
        if (kernels.empty()) ++failures;
        total += static_cast<int>(kernels.size());
        failures += validateKernels(kernels);
      }
      std::cout << total - failures << "/" << total << " kernels valid\n";
      return failures == 0 ? 0 : 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "helios-spv: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
