// Barrier inference on made-up buffer ranges: exactly the hazards need a barrier, nothing else.
#include "engine/graph/hazards.hpp"

#include <catch2/catch_test_macros.hpp>

using namespace helios;
using ops::Access;

namespace {
VkBuffer buf(uintptr_t id) {
  return reinterpret_cast<VkBuffer>(id);
}
ops::Binding bind(uintptr_t b, VkDeviceSize offset, VkDeviceSize size, Access a) {
  return {{buf(b), offset, size}, a};
}
} // namespace

TEST_CASE("independent dispatches need no barrier; RAW, WAR and WAW do") {
  graph::HazardTracker h;
  std::vector<ops::Binding> d1{bind(1, 0, 100, Access::Read), bind(2, 0, 100, Access::Write)};
  std::vector<ops::Binding> d2{bind(1, 0, 100, Access::Read),
                               bind(3, 0, 100, Access::Write)}; // shares a read
  CHECK_FALSE(h.needsBarrier(d1));
  h.record(d1);
  CHECK_FALSE(h.needsBarrier(d2));
  h.record(d2);

  std::vector<ops::Binding> raw{bind(2, 50, 10, Access::Read), bind(4, 0, 8, Access::Write)};
  std::vector<ops::Binding> war{bind(1, 90, 20, Access::Write)};
  std::vector<ops::Binding> waw{bind(3, 0, 1, Access::ReadWrite)};
  CHECK(h.needsBarrier(raw));
  CHECK(h.needsBarrier(war));
  CHECK(h.needsBarrier(waw));
  h.barrier();
  CHECK_FALSE(h.needsBarrier(raw));
  CHECK_FALSE(h.needsBarrier(war));
}

TEST_CASE("disjoint ranges of one buffer do not conflict; touching ranges do not overlap") {
  graph::HazardTracker h;
  h.record(std::vector<ops::Binding>{bind(7, 0, 256, Access::Write)});
  CHECK_FALSE(h.needsBarrier(std::vector<ops::Binding>{bind(7, 256, 256, Access::Read)}));
  CHECK(h.needsBarrier(std::vector<ops::Binding>{bind(7, 255, 2, Access::Read)}));
  CHECK_FALSE(h.needsBarrier(std::vector<ops::Binding>{bind(8, 0, 256, Access::Read)}));
}
