// slice_3d (pad + crop) and scatter_slice_3d (write a window back) from engine/ops/slice3d.hpp, f32 and f16,
// against ref::slice3d: bit-exact (pure copies), every dst element written by a slice, nothing outside the
// window (nor in row-stride gaps, nor past the range) touched by either, round trips, size validation.
#include "engine/core/half.hpp"
#include "engine/ops/slice3d.hpp"
#include "support/guarded.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstring>

using namespace helios;
using Catch::Matchers::ContainsSubstring;

namespace {

using test::ctx;

bool f16Supported() {
  const auto& f = ctx().device().features();
  return f.shaderFloat16 && f.storageBuffer16BitAccess;
}

// Elements as raw bits (uint32 for f32, uint16 for f16), so that comparisons are bit-exact.
template <class Bits> struct Host {
  static constexpr bool isHalf = sizeof(Bits) == 2;
  static Bits poison() { return isHalf ? Bits(0x7e5b) : Bits(0x7fc0dead); }
  static Bits zero() { return 0; }
  static Bits fromFloat(float f) {
    if constexpr (isHalf) {
      return floatToHalf(f);
    } else {
      uint32_t u;
      std::memcpy(&u, &f, 4);
      return u;
    }
  }
  static float toFloat(Bits b) {
    if constexpr (isHalf) {
      return halfToFloat(b);
    } else {
      float f;
      std::memcpy(&f, &b, 4);
      return f;
    }
  }
};

template <class Bits> std::vector<Bits> randomBits(size_t n) {
  const auto f = test::randomFloats(n);
  std::vector<Bits> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = Host<Bits>::fromFloat(f[i]);
  return v;
}

// Buffers guarded by poison past the range the op is given.
template <class Bits> vk::Buffer deviceBuffer(std::vector<Bits> data, const char* what) {
  return test::guardedBuffer(std::move(data), Host<Bits>::poison(), what);
}

template <class Bits> vk::BufferRange head(const vk::Buffer& b, size_t elems) {
  return test::head(b, elems, sizeof(Bits));
}

template <class Bits> std::vector<Bits> download(const vk::Buffer& b, size_t n) {
  return test::readGuarded(b, n, Host<Bits>::poison());
}

template <class Bits> ops::Elem sliceType() {
  return Host<Bits>::isHalf ? ops::Elem::F16 : ops::Elem::F32;
}

struct Case {
  uint32_t batch, srcRows, srcCols, dstRows, dstCols;
  int32_t rowOffset, colOffset;
  uint32_t srcPad, dstPad; // row stride = cols + pad
};

// Slice of a strided src into a strided, poisoned dst; compares with ref::slice3d on packed copies.
template <class Bits> void checkSlice(const Case& c) {
  INFO("batch " << c.batch << " src " << c.srcRows << "x" << c.srcCols << " dst " << c.dstRows << "x"
                << c.dstCols << " offset (" << c.rowOffset << ", " << c.colOffset << ") pads " << c.srcPad
                << "/" << c.dstPad << (Host<Bits>::isHalf ? " f16" : " f32"));
  const uint32_t srcStride = c.srcCols + c.srcPad, dstStride = c.dstCols + c.dstPad;
  const size_t srcElems = size_t(c.batch) * c.srcRows * srcStride,
               dstElems = size_t(c.batch) * c.dstRows * dstStride;
  const auto srcBits = randomBits<Bits>(srcElems);
  std::vector<float> packed;
  for (size_t r = 0; r < size_t(c.batch) * c.srcRows; ++r)
    for (size_t j = 0; j < c.srcCols; ++j)
      packed.push_back(Host<Bits>::toFloat(srcBits[r * srcStride + j]));
  auto dsrc = deviceBuffer(srcBits, "src");
  auto ddst = deviceBuffer(std::vector<Bits>(dstElems, Host<Bits>::poison()), "dst");
  {
    ops::ImmediateExecutor e(ctx());
    ops::slice3d(
        e, head<Bits>(dsrc, srcElems), head<Bits>(ddst, dstElems),
        {c.batch, c.srcRows, c.srcCols, c.dstRows, c.dstCols, c.rowOffset, c.colOffset, srcStride, dstStride},
        sliceType<Bits>());
    e.flush();
  }
  const auto out = download<Bits>(ddst, dstElems);
  const auto expect =
      ref::slice3d(packed, c.batch, c.srcRows, c.srcCols, c.dstRows, c.dstCols, c.rowOffset, c.colOffset);
  size_t wrong = 0, gapsTouched = 0;
  for (size_t r = 0; r < size_t(c.batch) * c.dstRows; ++r)
    for (size_t j = 0; j < dstStride; ++j) {
      const Bits got = out[r * dstStride + j];
      if (j < c.dstCols)
        wrong += got != Host<Bits>::fromFloat(float(expect[r * c.dstCols + j])); // also catches unwritten
      else
        gapsTouched += got != Host<Bits>::poison();
    }
  CHECK(wrong == 0);
  CHECK(gapsTouched == 0);
}

const std::vector<Case>& sliceCases() {
  static const std::vector<Case> cases = {
      {1, 1, 1, 1, 1, 0, 0, 0, 0},         // trivial copy
      {3, 7, 7, 33, 127, 0, 0, 0, 0},      // pad bottom/right
      {2, 127, 127, 64, 33, 5, 7, 0, 0},   // crop
      {3, 33, 64, 64, 64, -7, -1, 0, 0},   // pad top/left and bottom
      {2, 64, 64, 33, 127, 40, -5, 3, 5},  // mixed, partly outside, strided
      {1, 513, 7, 1024, 1, 3, 6, 1, 0},    // tall
      {2, 5, 1024, 7, 513, -2, 511, 0, 7}, // wide: only a band of src inside
      {4, 16, 16, 8, 8, 100, 100, 0, 0},   // entirely outside: all zeros
  };
  return cases;
}

} // namespace

TEST_CASE("slice3d pads and crops batched matrices (f32, f16)") {
  INFO("seed " << test::testSeed());
  const size_t idx = GENERATE(Catch::Generators::range<size_t>(0, 8));
  checkSlice<uint32_t>(sliceCases()[idx]);
  if (f16Supported()) checkSlice<uint16_t>(sliceCases()[idx]);
}

TEST_CASE("scatter_slice3d writes a window and leaves the rest of dst untouched (f32, f16)") {
  INFO("seed " << test::testSeed());
  struct ScatterCase {
    uint32_t batch, rows, cols, dstRows, dstCols;
    int32_t rowOffset, colOffset;
    uint32_t dstPad;
  };
  const auto c =
      GENERATE(ScatterCase{1, 1, 1, 1, 1, 0, 0, 0}, ScatterCase{3, 7, 33, 64, 64, 57, 31, 0},
               ScatterCase{2, 33, 127, 127, 513, 5, 0, 3}, ScatterCase{1, 513, 7, 1024, 7, 511, 0, 1});
  const auto run = [&]<class Bits>(Bits) {
    INFO("batch " << c.batch << " window " << c.rows << "x" << c.cols << " dst " << c.dstRows << "x"
                  << c.dstCols << " at (" << c.rowOffset << ", " << c.colOffset << ")"
                  << (Host<Bits>::isHalf ? " f16" : " f32"));
    const uint32_t dstStride = c.dstCols + c.dstPad;
    const size_t srcElems = size_t(c.batch) * c.rows * c.cols,
                 dstElems = size_t(c.batch) * c.dstRows * dstStride;
    const auto src = randomBits<Bits>(srcElems), before = randomBits<Bits>(dstElems);
    auto dsrc = deviceBuffer(src, "src"), ddst = deviceBuffer(before, "dst");
    {
      ops::ImmediateExecutor e(ctx());
      ops::scatterSlice3d(
          e, head<Bits>(dsrc, srcElems), head<Bits>(ddst, dstElems),
          {c.batch, c.rows, c.cols, c.dstRows, c.dstCols, c.rowOffset, c.colOffset, 0, dstStride},
          sliceType<Bits>());
      e.flush();
    }
    const auto out = download<Bits>(ddst, dstElems);
    size_t wrong = 0, touched = 0;
    for (size_t b = 0; b < c.batch; ++b)
      for (size_t i = 0; i < c.dstRows; ++i)
        for (size_t j = 0; j < dstStride; ++j) {
          const size_t d = (b * c.dstRows + i) * dstStride + j;
          const int64_t si = int64_t(i) - c.rowOffset, sj = int64_t(j) - c.colOffset;
          if (si >= 0 && si < c.rows && sj >= 0 && sj < c.cols)
            wrong += out[d] != src[(b * c.rows + size_t(si)) * c.cols + size_t(sj)];
          else
            touched += out[d] != before[d];
        }
    CHECK(wrong == 0);
    CHECK(touched == 0);
  };
  run(uint32_t{});
  if (f16Supported()) run(uint16_t{});
}

TEST_CASE("round trips: pad then crop, scatter then slice return the original") {
  INFO("seed " << test::testSeed());
  const uint32_t batch = 3, rows = 33, cols = 127, padRows = 64, padCols = 128;
  const int32_t top = 9, left = 1;
  const auto roundTrip = [&]<class Bits>(Bits) {
    const size_t n = size_t(batch) * rows * cols, np = size_t(batch) * padRows * padCols;
    const auto x = randomBits<Bits>(n);
    auto dx = deviceBuffer(x, "x"),
         dpad = deviceBuffer(std::vector<Bits>(np, Host<Bits>::poison()), "padded");
    auto dback = deviceBuffer(std::vector<Bits>(n, Host<Bits>::poison()), "back");
    auto dwin = deviceBuffer(randomBits<Bits>(np), "big");
    auto dback2 = deviceBuffer(std::vector<Bits>(n, Host<Bits>::poison()), "back2");
    {
      ops::ImmediateExecutor e(ctx());
      const auto T = sliceType<Bits>();
      // Pad with zeros above/left (negative offsets) and below/right, then crop the original back out.
      ops::slice3d(e, head<Bits>(dx, n), head<Bits>(dpad, np),
                   {batch, rows, cols, padRows, padCols, -top, -left}, T);
      ops::slice3d(e, head<Bits>(dpad, np), head<Bits>(dback, n),
                   {batch, padRows, padCols, rows, cols, top, left}, T);
      // Write into a window of a larger matrix, then read the window back.
      ops::scatterSlice3d(e, head<Bits>(dx, n), head<Bits>(dwin, np),
                          {batch, rows, cols, padRows, padCols, top, left}, T);
      ops::slice3d(e, head<Bits>(dwin, np), head<Bits>(dback2, n),
                   {batch, padRows, padCols, rows, cols, top, left}, T);
      e.flush();
    }
    CHECK(download<Bits>(dback, n) == x);
    CHECK(download<Bits>(dback2, n) == x);
    // The padding is zeros: every padded element outside the window.
    const auto padded = download<Bits>(dpad, np);
    size_t nonzero = 0;
    for (size_t b = 0; b < batch; ++b)
      for (size_t i = 0; i < padRows; ++i)
        for (size_t j = 0; j < padCols; ++j) {
          const bool inside =
              i >= size_t(top) && i < size_t(top) + rows && j >= size_t(left) && j < size_t(left) + cols;
          if (!inside) nonzero += padded[(b * padRows + i) * padCols + j] != Host<Bits>::zero();
        }
    CHECK(nonzero == 0);
  };
  roundTrip(uint32_t{});
  if (f16Supported()) roundTrip(uint16_t{});
}

TEST_CASE("slice3d ops reject inconsistent shapes and short buffers") {
  auto a = ctx().buffer(4 * 2 * 8 * 8, "a"), b = ctx().buffer(4 * 2 * 8 * 8, "b");
  ops::ImmediateExecutor e(ctx());
  CHECK_THROWS_WITH(ops::slice3d(e, a.range(), b.range(), {2, 8, 8, 8, 9, 0, 0}),
                    ContainsSubstring("dst holds"));
  CHECK_THROWS_WITH(ops::slice3d(e, a.range(), b.range(), {3, 8, 8, 4, 4, 0, 0}),
                    ContainsSubstring("src holds"));
  CHECK_THROWS_WITH(ops::slice3d(e, a.range(), b.range(), {1, 8, 8, 4, 4, 0, 0, 7, 0}),
                    ContainsSubstring("srcRowStride 7 < srcCols 8"));
  CHECK_THROWS_WITH(ops::scatterSlice3d(e, a.range(), b.range(), {1, 4, 4, 8, 8, 5, 0}),
                    ContainsSubstring("does not fit"));
  CHECK_THROWS_WITH(ops::scatterSlice3d(e, a.range(), b.range(), {1, 4, 4, 8, 8, -1, 0}),
                    ContainsSubstring("offsets must be >= 0"));
  CHECK(e.dispatches() == 0);
}
