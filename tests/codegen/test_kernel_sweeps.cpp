// Every kernel family registered in codegen/kernels/all.cpp: each kernel of each family's parameter sweep
// passes spirv-val for Vulkan 1.3, and no two kernels share a cache key. Families with their own sweep test
// check more (names, interfaces); this one makes sure no family, and no variant added later, goes unchecked.
#include <catch2/catch_test_macros.hpp>

#include <set>
#include <string>

#include "codegen/kernels/all.hpp"
#include "codegen/spirv/tools.hpp"

TEST_CASE("every registered kernel family's sweep passes spirv-val", "[spirv][registry]") {
  helios::codegen::KernelRegistry registry;
  helios::codegen::registerAllKernels(registry);
  REQUIRE(registry.all().size() >= 16); // the families in all.cpp
  size_t kernels = 0, failures = 0;
  for (const auto& family : registry.all()) {
    std::set<std::string> keys;
    const auto sweep = family.all();
    CHECK(!sweep.empty());
    for (const auto& k : sweep) {
      ++kernels;
      keys.insert(k.cacheKey);
      const auto r = helios::spv::validate(k.spirv, helios::spv::TargetEnv::Vulkan1_3);
      if (!r.ok) {
        ++failures;
        UNSCOPED_INFO(family.name << " / " << k.name << ":\n" << r.message);
      }
    }
    INFO(family.name);
    CHECK(keys.size() == sweep.size());
  }
  INFO(kernels << " kernels");
  CHECK(failures == 0);
}
