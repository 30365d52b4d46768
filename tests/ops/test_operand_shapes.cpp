// The sizes of a matmul and an attention from their operands' shapes (engine/ops/operand_shapes), which the
// library's tensors and helios-run's arrays share: random odd and aligned shapes, transposes and batches
// against sizes worked out here, and every refusal with the shapes it names.
#include "engine/ops/operand_shapes.hpp"
#include "support/random.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>

using namespace helios;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::Equals;

namespace {

uint64_t pick(std::initializer_list<uint64_t> sizes) {
  const std::vector<uint64_t> v(sizes);
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(test::rng())];
}

uint64_t randomSize() {
  return std::uniform_int_distribution<uint64_t>(0, 1)(test::rng()) ? pick({16, 64, 128})
                                                                    : pick({1, 3, 17, 33, 127});
}

} // namespace

TEST_CASE("operand shapes: matmul sizes, transposes and batches from the shapes", "[ops][shapes]") {
  INFO("HELIOS_TEST_SEED=" << test::testSeed());
  for (int trial = 0; trial < 200; ++trial) {
    const uint64_t M = randomSize(), N = randomSize(), K = randomSize(), batch = pick({1, 2, 5});
    const bool ta = trial % 2, tb = trial / 2 % 2;
    // Which sides carry the batch: 0 both, 1 only A (B shared), 2 only B; batch 1 also as plain matrices.
    const int sides = trial / 4 % 3;
    std::vector<uint64_t> a = ta ? std::vector{K, M} : std::vector{M, K};
    std::vector<uint64_t> b = tb ? std::vector{N, K} : std::vector{K, N};
    const bool batched = batch > 1 || trial % 5 == 0;
    if (batched && sides != 2) a.insert(a.begin(), batch);
    if (batched && sides != 1) b.insert(b.begin(), batch);
    INFO("A " << a.size() << "-D, B " << b.size() << "-D, M " << M << " N " << N << " K " << K << " batch "
              << batch << " ta " << ta << " tb " << tb);
    const ops::MatmulSizes s = ops::matmulSizes(a, b, ta, tb);
    CHECK((s.args.M == M && s.args.N == N && s.args.K == K && s.args.transA == ta && s.args.transB == tb));
    CHECK(s.args.batch == (batched ? batch : 1));
    CHECK(s.outShape == (batched ? std::vector<uint64_t>{batch, M, N} : std::vector<uint64_t>{M, N}));
    if (batched && batch > 1) {
      REQUIRE((s.args.strideA && s.args.strideB));
      CHECK(*s.args.strideA == (sides == 2 ? 0 : M * K));
      CHECK(*s.args.strideB == (sides == 1 ? 0 : K * N));
    } else {
      CHECK_FALSE((s.args.strideA || s.args.strideB));
    }
    // Nothing but the sizes: the rest stays as MatmulArgs has it.
    CHECK((s.args.alpha == 1.0f && s.args.beta == 0.0f && !s.args.gelu && !s.args.bias.buffer));
  }
}

TEST_CASE("operand shapes: a matmul's refusals name the shapes", "[ops][shapes]") {
  using V = std::vector<uint64_t>;
  CHECK_THROWS_WITH(ops::matmulSizes({4, 6}, {5, 3}, false, false),
                    Equals("inner dimensions differ: op(A) is 4x6, op(B) is 5x3 (A [4, 6], B [5, 3])"));
  CHECK_THROWS_WITH(ops::matmulSizes({6, 4}, {5, 3}, true, false, "helios::matmul"),
                    Equals("helios::matmul: inner dimensions differ: op(A) is 4x6, op(B) is 5x3 (A [6, 4] "
                           "transposed, B [5, 3])"));
  CHECK_THROWS_WITH(ops::matmulSizes({2, 4, 6}, {3, 6, 5}, false, false),
                    Equals("batch sizes differ: A [2, 4, 6], B [3, 6, 5]"));
  for (const auto& [a, b] : {std::pair{V{4}, V{4, 5}}, {V{4, 5}, V{1, 2, 5, 3}}, {V{}, V{}}})
    CHECK_THROWS_WITH(ops::matmulSizes(a, b, false, false),
                      ContainsSubstring("must be matrices or batches of matrices (2 or 3 dimensions)"));
  CHECK_THROWS_WITH(ops::matmulSizes({0, 6}, {6, 3}, false, false),
                    Equals("M = 0 is out of range (1 .. 2^31-1)"));
  CHECK_THROWS_WITH(ops::matmulSizes({4, 6}, {6, uint64_t{1} << 31}, false, false),
                    Equals("N = 2147483648 is out of range (1 .. 2^31-1)"));
  CHECK_NOTHROW(ops::matmulSizes({4, 6}, {6, (uint64_t{1} << 31) - 1}, false, false));
}

TEST_CASE("operand shapes: attention sizes, grouped heads and the default scale", "[ops][shapes]") {
  INFO("HELIOS_TEST_SEED=" << test::testSeed());
  for (int trial = 0; trial < 50; ++trial) {
    const uint64_t batch = pick({1, 2, 3}), kvHeads = pick({1, 2, 4}), group = pick({1, 3, 4});
    const uint64_t Tq = randomSize(), Tk = randomSize(), D = pick({16, 32, 64, 96, 128});
    const std::vector<uint64_t> q{batch, kvHeads * group, Tq, D}, k{batch, kvHeads, Tk, D};
    const bool causal = trial % 2;
    const float scale = trial % 3 == 0 ? 0.25f : 0.0f;
    const ops::AttentionShape s = ops::attentionSizes(q, k, k, causal, scale);
    CHECK((s.batch == batch && s.heads == kvHeads * group && s.kvHeads == kvHeads));
    CHECK((s.Tq == Tq && s.Tk == Tk && s.headDim == D && s.causal == causal));
    CHECK(s.scale == (scale != 0 ? scale : static_cast<float>(1.0 / std::sqrt(double(D)))));
    CHECK(s.kernel == ops::AttentionShape{}.kernel);
  }
}

TEST_CASE("operand shapes: an attention's refusals name the shapes", "[ops][shapes]") {
  const std::vector<uint64_t> q{1, 6, 8, 16}, k{1, 4, 8, 16};
  CHECK_THROWS_WITH(ops::attentionSizes(q, k, k, false, 0),
                    Equals("q's 6 heads are not a multiple of k's 4 (grouped-query attention)"));
  CHECK_THROWS_WITH(ops::attentionSizes({2, 4, 8, 16}, k, k, false, 0),
                    Equals("q [2, 4, 8, 16] and k [1, 4, 8, 16] differ in batch or head dim"));
  CHECK_THROWS_WITH(ops::attentionSizes({1, 4, 8, 32}, k, k, false, 0, "helios::attention"),
                    ContainsSubstring("helios::attention: q [1, 4, 8, 32] and k"));
  CHECK_THROWS_WITH(ops::attentionSizes(k, k, {1, 4, 9, 16}, false, 0),
                    Equals("q [1, 4, 8, 16], k [1, 4, 8, 16], v [1, 4, 9, 16] must be [batch, heads, tokens, "
                           "headDim], with v shaped as k"));
  CHECK_THROWS_WITH(ops::attentionSizes({4, 8, 16}, {4, 8, 16}, {4, 8, 16}, false, 0),
                    ContainsSubstring("must be [batch, heads, tokens, headDim]"));
  CHECK_THROWS_WITH(ops::attentionSizes({1, 4, 0, 16}, k, k, false, 0),
                    Equals("query tokens = 0 is out of range (1 .. 2^31-1)"));
  CHECK_THROWS_WITH(ops::attentionSizes({1, 0, 8, 16}, {1, 0, 8, 16}, {1, 0, 8, 16}, false, 0),
                    ContainsSubstring("k's 0"));
}
