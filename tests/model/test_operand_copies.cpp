// The plan of the 16-bit operand copies (engine/model/operand_copies.hpp): one span per parameter group from
// its first to its last wanted slice, each slice a view at half its distance from the span's start, slices
// whose view would start off the binding alignment cast alone. Pure logic; the copies' values are checked by
// the model's fused-step test (test_gpt.cpp: bit-identical to per-tensor casts).
#include "engine/model/operand_copies.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>

using namespace helios::model::detail;

TEST_CASE("operand copies: one span per group, views at half offsets", "[model][fused]") {
  // Group 1 is seen first; group 0's slices come out of order; a 64-byte gap of padding between slices.
  const std::vector<CopySlice> slices = {
      {5, 1, 1024, 4096}, {2, 0, 8192, 256}, {1, 0, 0, 4096}, {6, 1, 5184, 1024}};
  const OperandCopyPlan plan = planOperandCopies(slices, 32);
  REQUIRE(plan.spans.size() == 2);
  CHECK(plan.spans[0].group == 1);
  CHECK(plan.spans[0].offset == 1024);
  CHECK(plan.spans[0].bytes == 5184 + 1024 - 1024);
  CHECK(plan.spans[1].group == 0);
  CHECK(plan.spans[1].offset == 0);
  CHECK(plan.spans[1].bytes == 8192 + 256);
  CHECK(plan.alone.empty());
  REQUIRE(plan.views.size() == 4);
  const auto view = [&](int p) {
    return *std::find_if(plan.views.begin(), plan.views.end(),
                         [p](const CopyView& v) { return v.param == p; });
  };
  CHECK((view(5).span == 0 && view(5).offset == 0 && view(5).bytes == 2048));
  CHECK((view(6).span == 0 && view(6).offset == (5184 - 1024) / 2 && view(6).bytes == 512));
  CHECK((view(1).span == 1 && view(1).offset == 0 && view(1).bytes == 2048));
  CHECK((view(2).span == 1 && view(2).offset == 4096 && view(2).bytes == 128));
}

TEST_CASE("operand copies: a view off the alignment is cast alone; a group of only those makes no span",
          "[model][fused]") {
  // 64-byte alignment: slice 3 sits 96 bytes after the span's start (a 48-byte view offset); group 2 holds
  // one slice off f32 alignment.
  const std::vector<CopySlice> slices = {{1, 0, 0, 96}, {3, 0, 96, 128}, {4, 0, 256, 64}, {7, 2, 6, 8}};
  const OperandCopyPlan plan = planOperandCopies(slices, 64);
  CHECK(plan.alone == std::vector<int>{3, 7});
  REQUIRE(plan.spans.size() == 1);
  CHECK((plan.spans[0].group == 0 && plan.spans[0].offset == 0 && plan.spans[0].bytes == 320));
  REQUIRE(plan.views.size() == 2);
  CHECK((plan.views[0].param == 1 && plan.views[0].offset == 0));
  CHECK((plan.views[1].param == 4 && plan.views[1].offset == 128));
  CHECK(planOperandCopies({}, 64).spans.empty());
}
