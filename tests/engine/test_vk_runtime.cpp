// The Vulkan runtime on whatever device the machine has (lavapipe in CI): device creation, memory,
// transfers, a GLSL-compiled kernel, pipeline caching, timestamps and error paths.
#include "engine/vk/command_stream.hpp"
#include "engine/vk/context.hpp"
#include "engine/vk/error.hpp"
#include "engine/vk/validation.hpp"
#include "support/random.hpp"
#include "support/spirv_file.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <numeric>

using namespace helios;
using Catch::Matchers::ContainsSubstring;

namespace {
vk::Context& ctx() {
  static auto context = vk::Context::create({.persistentPipelineCache = false});
  return *context;
}
} // namespace

TEST_CASE("a Vulkan 1.3 device is created with a compute queue and push descriptors") {
  const auto& dev = ctx().device();
  INFO("device: " << dev.name());
  CHECK(dev.handle() != VK_NULL_HANDLE);
  CHECK(dev.queue() != VK_NULL_HANDLE);
  CHECK(dev.properties().apiVersion >= VK_API_VERSION_1_3);
  CHECK(dev.features().pushDescriptor);
  CHECK(dev.subgroupSize() >= 1);
  CHECK(dev.minSubgroupSize() <= dev.subgroupSize());
  CHECK(dev.subgroupSize() <= dev.maxSubgroupSize());
}

TEST_CASE("buffers of odd sizes round-trip through device-local memory") {
  auto bytes = GENERATE(1u, 7u, 33u, 127u, 513u, 4096u, (1u << 20) + 3u);
  auto& c = ctx();
  auto buf = c.buffer(bytes, "round-trip test");
  std::vector<std::byte> in(bytes), out(bytes, std::byte{0xAB});
  for (auto& b : in)
    b = static_cast<std::byte>(test::rng()() & 0xff);
  c.upload(buf, in);
  c.download(buf, out);
  CHECK(in == out);
}

TEST_CASE("staged transfers work when the buffer is not host-visible") {
  auto& c = ctx();
  // Force the staging path: copy into a device buffer from an Upload buffer via a command stream.
  auto src = c.buffer(333 * 4, "staging src", vk::MemoryKind::Upload);
  auto dst = c.buffer(333 * 4, "staging dst");
  auto back = c.buffer(333 * 4, "staging back", vk::MemoryKind::Readback);
  auto data = test::randomFloats(333);
  std::memcpy(src.mapped(), data.data(), 333 * 4);
  vk::CommandStream s(c.device());
  s.copy(src.range(), dst.range(), 333 * 4);
  s.barrier();
  s.copy(dst.range(), back.range(), 333 * 4);
  s.submitAndWait();
  CHECK(std::memcmp(back.mapped(), data.data(), 333 * 4) == 0);
}

TEST_CASE("staged copies in pieces reach every byte, at an offset, with a last piece shorter") {
  auto& c = ctx();
  using Case = std::pair<size_t, VkDeviceSize>; // bytes, piece
  const auto [bytes, chunk] =
      GENERATE(Case{1000, 256}, Case{1024, 256}, Case{77, 4096}, Case{4099, 1000}, Case{1, 1});
  const VkDeviceSize offset = 48;
  auto buf = c.buffer(offset + bytes + 16, "staged pieces");
  std::vector<std::byte> poison(offset + bytes + 16, std::byte{0xCD});
  c.upload(buf, poison);
  std::vector<std::byte> in(bytes), out(bytes, std::byte{0xAB});
  for (auto& b : in)
    b = static_cast<std::byte>(test::rng()() & 0xff);
  c.uploadStaged(buf, in, offset, chunk);
  c.downloadStaged(buf, out, offset, chunk);
  CHECK(in == out);
  std::vector<std::byte> whole(offset + bytes + 16);
  c.download(buf, whole); // the bytes around the range are untouched
  CHECK(std::all_of(whole.begin(), whole.begin() + offset, [](std::byte b) { return b == std::byte{0xCD}; }));
  CHECK(std::all_of(whole.end() - 16, whole.end(), [](std::byte b) { return b == std::byte{0xCD}; }));
  CHECK_THROWS_AS(c.uploadStaged(buf, in, offset + 17, chunk), std::out_of_range);
  CHECK_THROWS_AS(c.downloadStaged(buf, out, 0, 0), std::out_of_range);
}

TEST_CASE("staging is counted only where device-local memory is not host-visible") {
  auto& c = ctx();
  auto buf = c.buffer(64, "mapped or not");
  CHECK(c.allocator().hostVisible(vk::MemoryKind::Upload));
  CHECK(c.stagingBytes() == (buf.mapped() ? 0 : vk::Context::kStagingChunk));
}

TEST_CASE("a zeroed buffer starts at zero, is kept per name and refuses to grow") {
  auto& c = ctx();
  {
    // Leave garbage where the allocator is likely to place the next buffer.
    auto dirty = c.buffer(4096, "garbage");
    c.upload(dirty, std::vector<std::byte>(4096, std::byte{0xAB}));
  }
  const vk::Buffer& z = c.zeroed("test counters", 4096);
  std::vector<std::byte> out(4096, std::byte{0xCD});
  c.download(z, out);
  CHECK(out == std::vector<std::byte>(4096));
  CHECK(&c.zeroed("test counters", 1024) == &z);
  CHECK(&c.zeroed("other test counters", 64) != &z);
  CHECK_THROWS_WITH(c.zeroed("test counters", 8192), ContainsSubstring("has 4096 bytes, 8192 asked for"));
}

TEST_CASE("the allocator sub-allocates from blocks and coalesces freed ranges") {
  auto& c = ctx();
  vk::Allocator alloc(c.device(), 1 << 20);
  auto a = alloc.allocate(1000, vk::MemoryKind::DeviceLocal, "a");
  auto b = alloc.allocate(1000, vk::MemoryKind::DeviceLocal, "b");
  auto d = alloc.allocate(1000, vk::MemoryKind::DeviceLocal, "d");
  CHECK(alloc.stats().blocks == 1);
  CHECK(a.buffer == b.buffer);
  CHECK(b.offset >= a.offset + a.size);
  CHECK(a.offset % alloc.alignment() == 0);
  CHECK(b.offset % alloc.alignment() == 0);
  alloc.free(a);
  alloc.free(b);
  // a and b coalesced: a 2000-byte request fits where they were.
  auto e = alloc.allocate(2000, vk::MemoryKind::DeviceLocal, "e");
  CHECK(e.offset == a.offset);
  auto big = alloc.allocate(3 << 20, vk::MemoryKind::DeviceLocal, "big");
  CHECK(alloc.stats().blocks == 2);
  CHECK(alloc.stats().peakBytesInUse >= (3u << 20));
  alloc.free(d);
  alloc.free(e);
  alloc.free(big);
  CHECK(alloc.stats().bytesInUse == 0);
}

TEST_CASE("a GLSL-compiled kernel dispatches and computes c = a + b") {
  auto n = GENERATE(1u, 7u, 33u, 127u, 513u, 65536u);
  auto& c = ctx();
  const auto& pipe = c.pipelines().get(test::glslOracle("add", 3, 4, {64, 1, 1}));
  auto a = test::randomFloats(n), b = test::randomFloats(n);
  auto ba = c.buffer(n * 4, "a"), bb = c.buffer(n * 4, "b"), bc = c.buffer(n * 4 + 4, "c");
  c.uploadVector(ba, a);
  c.uploadVector(bb, b);
  std::vector<float> poison(n + 1, test::poisonF32());
  c.uploadVector(bc, poison);
  vk::CommandStream s(c.device());
  uint32_t count = n;
  s.dispatch(pipe, {ba.range(), bb.range(), bc.range()}, count, {(n + 63) / 64});
  s.submitAndWait();
  auto out = c.downloadVector<float>(bc, n + 1);
  for (uint32_t i = 0; i < n; ++i)
    REQUIRE(out[i] == a[i] + b[i]);
  CHECK(std::isnan(out[n])); // the element past the end was not written
}

TEST_CASE("a reusable command stream runs its recorded work as many times as it is submitted") {
  const uint32_t n = GENERATE(1u, 127u, 513u);
  const uint32_t times = GENERATE(1u, 3u);
  auto& c = ctx();
  const auto& pipe = c.pipelines().get(test::glslOracle("add", 3, 4, {64, 1, 1}));
  auto x = test::randomFloats(n);
  std::vector<float> ones(n, 1.0f);
  auto bx = c.buffer(n * 4, "x"), bone = c.buffer(n * 4, "ones");
  c.uploadVector(bx, x);
  c.uploadVector(bone, ones);
  vk::CommandStream s(c.device(), 0, true);
  uint32_t count = n;
  s.dispatch(pipe, {bx.range(), bone.range(), bx.range()}, count, {(n + 63) / 64}); // x += 1
  s.barrier();
  s.submit(times);
  s.wait();
  CHECK_THROWS_WITH(s.barrier(), Catch::Matchers::ContainsSubstring("call reset() first"));
  auto out = c.downloadVector<float>(bx, n);
  for (uint32_t i = 0; i < n; ++i)
    REQUIRE(out[i] == x[i] + static_cast<float>(times));
  vk::CommandStream once(c.device());
  once.barrier();
  CHECK_THROWS_WITH(once.submit(2), Catch::Matchers::ContainsSubstring("needs a reusable stream"));
}

TEST_CASE("pipelines are cached by key and timestamps measure GPU time") {
  auto& c = ctx();
  auto k = test::glslOracle("add", 3, 4, {64, 1, 1});
  const auto& p1 = c.pipelines().get(k);
  auto hits = c.pipelines().stats().hits;
  const auto& p2 = c.pipelines().get(k);
  CHECK(&p1 == &p2);
  CHECK(c.pipelines().stats().hits == hits + 1);

  if (c.device().timestampPeriodNs() > 0) {
    const uint32_t n = 1 << 18;
    auto ba = c.buffer(n * 4, "a"), bc = c.buffer(n * 4, "c");
    vk::CommandStream s(c.device(), 4);
    s.timestamp();
    s.dispatch(p1, {ba.range(), ba.range(), bc.range()}, n, {n / 64});
    s.timestamp();
    s.submitAndWait();
    auto ts = s.timestampsNs();
    REQUIRE(ts.size() == 2);
    CHECK(ts[1] > 0.0);
  }
}

TEST_CASE("precompile creates the pipelines a recording asks for on several threads") {
  auto c = vk::Context::create({.persistentPipelineCache = false});
  auto& cache = c->pipelines();
  const auto variant = [](int i) {
    codegen::Kernel k = test::glslOracle("add", 3, 4, {64, 1, 1});
    k.cacheKey += "#" + std::to_string(i);
    return k;
  };
  std::vector<const vk::Pipeline*> asked;
  const auto stats = cache.precompile(
      [&] {
        for (int i = 0; i < 5; ++i)
          asked.push_back(&cache.get(variant(i)));
        asked.push_back(&cache.get(variant(0))); // asked twice, created once
        CHECK(asked.front()->pipeline == VK_NULL_HANDLE);
        vk::CommandStream early(c->device());
        uint32_t n = 1;
        auto buf = c->buffer(64, "x");
        CHECK_THROWS_WITH(early.dispatch(*asked.front(), {buf.range(), buf.range(), buf.range()}, n, {1}),
                          ContainsSubstring("before PipelineCache::precompile created it"));
      },
      3);
  CHECK(stats.pipelines == 5);
  CHECK(stats.threads == 3);
  CHECK(asked[5] == asked[0]);
  for (const auto* p : asked)
    CHECK(p->pipeline != VK_NULL_HANDLE);
  CHECK(&cache.get(variant(3)) == asked[3]);

  const uint32_t n = 77;
  auto a = test::randomFloats(n), b = test::randomFloats(n);
  auto ba = c->buffer(n * 4, "a"), bb = c->buffer(n * 4, "b"), bc = c->buffer(n * 4, "c");
  c->uploadVector(ba, a);
  c->uploadVector(bb, b);
  vk::CommandStream s(c->device());
  uint32_t count = n;
  s.dispatch(*asked[4], {ba.range(), bb.range(), bc.range()}, count, {2});
  s.submitAndWait();
  auto out = c->downloadVector<float>(bc, n);
  for (uint32_t i = 0; i < n; ++i)
    REQUIRE(out[i] == a[i] + b[i]);
}

TEST_CASE("a precompile whose recording throws leaves no half-made pipelines behind") {
  auto c = vk::Context::create({.persistentPipelineCache = false});
  auto& cache = c->pipelines();
  codegen::Kernel good = test::glslOracle("add", 3, 4, {64, 1, 1});
  good.cacheKey += "#good";
  CHECK_THROWS_WITH(cache.precompile([&] {
    cache.get(good);
    throw std::runtime_error("the model failed to record");
  }),
                    ContainsSubstring("failed to record"));
  CHECK_FALSE(cache.contains(good.cacheKey));
  const auto& p = cache.get(good); // created at once outside a precompile
  CHECK(p.pipeline != VK_NULL_HANDLE);
  CHECK_THROWS_WITH(cache.precompile([&] { cache.precompile([] {}); }), ContainsSubstring("does not nest"));
  codegen::Kernel now = test::glslOracle("add", 3, 4, {64, 1, 1});
  now.cacheKey += "#immediate";
  cache.precompile([&] {
    vk::PipelineCache::Immediate immediate(cache);
    CHECK(cache.get(now).pipeline != VK_NULL_HANDLE);
  });
}

TEST_CASE("dispatch errors name the kernel and what is wrong") {
  auto& c = ctx();
  const auto& pipe = c.pipelines().get(test::glslOracle("add", 3, 4, {64, 1, 1}));
  auto buf = c.buffer(64, "x");
  vk::CommandStream s(c.device());
  uint32_t n = 1;
  CHECK_THROWS_WITH(s.dispatch(pipe, {buf.range()}, n, {1}),
                    ContainsSubstring("glsl_add") && ContainsSubstring("takes 3 buffers, 1 given"));
  CHECK_THROWS_WITH(s.dispatch(pipe, {buf.range(), buf.range(), buf.range()}, nullptr, 0, {1}),
                    ContainsSubstring("takes 4 bytes of push constants, 0 given"));
}

TEST_CASE("bad device selectors fail with one clear sentence") {
  CHECK_THROWS_AS(vk::Context::create({.device = "99"}), vk::NoDevice);
  CHECK_THROWS_WITH(vk::Context::create({.device = "no-such-gpu-name"}),
                    ContainsSubstring("No Vulkan device name contains"));
}

TEST_CASE("Vulkan errors carry the call's context and the VkResult name") {
  vk::VulkanError e(VK_ERROR_OUT_OF_DEVICE_MEMORY, "allocating 512 MiB device-local buffer");
  CHECK(std::string(e.what()) ==
        "allocating 512 MiB device-local buffer: VK_ERROR_OUT_OF_DEVICE_MEMORY (-2)");
  CHECK(e.result() == VK_ERROR_OUT_OF_DEVICE_MEMORY);
  CHECK(std::string(vk::resultName(VK_ERROR_DEVICE_LOST)) == "VK_ERROR_DEVICE_LOST");
}

TEST_CASE(
    "a buffer larger than its memory heap is refused before the driver is asked, naming size and heap") {
  auto& c = ctx();
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(c.device().physical(), &mp);
  VkDeviceSize largest = 0;
  for (uint32_t i = 0; i < mp.memoryHeapCount; ++i)
    largest = std::max(largest, mp.memoryHeaps[i].size);
  const auto before = c.allocator().stats();
  const VkDeviceSize ask = largest + 4096;
  CHECK_THROWS_WITH(
      c.buffer(ask, "a too-large tensor"),
      ContainsSubstring(std::to_string(ask) + " bytes") && ContainsSubstring("a too-large tensor") &&
          ContainsSubstring("larger than the whole memory heap") && ContainsSubstring("cannot succeed"));
  // Sizes that would wrap when aligned are refused the same way.
  CHECK_THROWS_AS(c.buffer(~VkDeviceSize(0), "a wrapping size"), std::length_error);
  CHECK(c.allocator().stats().blocks == before.blocks);
  CHECK(c.allocator().stats().bytesReserved == before.bytesReserved);
  // The allocator still works afterwards.
  auto ok = c.buffer(64, "after the refusal");
  CHECK(ok.size() == 64);
}

TEST_CASE("a buffer beyond maxStorageBufferRange is refused naming the limit") {
  auto& c = ctx();
  const VkDeviceSize limit = c.device().limits().maxStorageBufferRange;
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(c.device().physical(), &mp);
  VkDeviceSize largest = 0;
  for (uint32_t i = 0; i < mp.memoryHeapCount; ++i)
    largest = std::max(largest, mp.memoryHeaps[i].size);
  if (limit + 4096 > largest) SKIP("maxStorageBufferRange " << limit << " is not below the heap " << largest);
  CHECK_THROWS_WITH(c.buffer(limit + 1, "logits"),
                    ContainsSubstring("maxStorageBufferRange of " + std::to_string(limit) + " bytes") &&
                        ContainsSubstring("logits"));
}

TEST_CASE("maxMemoryAllocationSize is the driver's, and a planning context's limit caps every allocation") {
  // Vulkan guarantees at least 2^30 bytes; the default (no limit read) would be ~0.
  const VkDeviceSize driver = ctx().device().maxMemoryAllocationSize();
  CHECK(driver >= (VkDeviceSize(1) << 30));
  CHECK(driver < ~VkDeviceSize(0));
  const uint32_t limit = 1u << 20;
  auto c = vk::Context::create({.persistentPipelineCache = false, .planBindingLimit = limit});
  CHECK(c->device().maxMemoryAllocationSize() == limit);
  CHECK(c->device().limits().maxStorageBufferRange == limit);
  auto small = c->buffer(4096 + test::rng()() % 4096, "a small tensor");
  CHECK(c->allocator().stats().largestBlock > 0);
  CHECK(c->allocator().stats().largestBlock <= limit);
  CHECK_THROWS_WITH(c->buffer(limit + 16, "an embedding"),
                    ContainsSubstring("maxMemoryAllocationSize of " + std::to_string(limit) + " bytes") &&
                        ContainsSubstring("an embedding"));
  CHECK(c->allocator().stats().largestBlock <= limit);
}

TEST_CASE("HELIOS_VALIDATION accepts 0 and 1 only") {
  CHECK_FALSE(vk::parseValidationSetting(nullptr));
  CHECK_FALSE(vk::parseValidationSetting(""));
  CHECK_FALSE(vk::parseValidationSetting("0"));
  CHECK(vk::parseValidationSetting("1"));
  CHECK_THROWS_WITH(vk::parseValidationSetting("yes"), ContainsSubstring("HELIOS_VALIDATION='yes'"));
}

// Run only by the ctest entry validation/reports-a-misuse (HELIOS_VALIDATION=1): an invalid call must reach
// Helios' messenger, be counted, and turn the exit status non-zero at the end.
TEST_CASE("a misuse is reported by the validation layer", "[.validation-misuse]") {
  auto& c = ctx();
  const uint64_t before = vk::validationMessageCount();
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = 256;
  info.usage = 0; // VUID-VkBufferCreateInfo-usage-requiredbitmask
  VkBuffer b = VK_NULL_HANDLE;
  if (vkCreateBuffer(c.device().handle(), &info, nullptr, &b) == VK_SUCCESS)
    vkDestroyBuffer(c.device().handle(), b, nullptr);
  CHECK(vk::validationMessageCount() > before);
}

// Run only by the ctest entry validation/reports-a-sync-hazard: two copies into one buffer with no barrier
// between them are a write-after-write hazard that only synchronization validation reports, so this proves
// the layer settings file switched it on.
TEST_CASE("a missing barrier is reported by synchronization validation", "[.validation-sync-hazard]") {
  auto& c = ctx();
  auto src = c.buffer(256, "hazard src", vk::MemoryKind::Upload);
  auto dst = c.buffer(256, "hazard dst");
  const uint64_t before = vk::validationMessageCount();
  vk::CommandStream s(c.device());
  s.copy(src.range(), dst.range(), 256);
  s.copy(src.range(), dst.range(), 256); // no barrier: WRITE_AFTER_WRITE
  s.submitAndWait();
  CHECK(vk::validationMessageCount() > before);
}
