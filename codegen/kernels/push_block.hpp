#pragma once
// A kernel family's push constants, declared once: its codegen header holds the C++ struct that the op fills
// (a "push block": 4-byte scalars, uint32_t, int32_t or float, and structs of them), and the generator
// declares the SPIR-V block from that same struct (declarePush<Block>), so the two cannot drift apart.
//
// Module::pushConstants lays 4-byte scalars out back to back: member i at byte 4 * i, the block 4 * N bytes.
// pushScalars<Block>() lists the struct's scalars in declaration order (nested structs flattened) and fails
// to compile unless they fill sizeof(Block) exactly; since members sit in declaration order, that proves
// scalar i is at byte 4 * i, where the generator's block has it. Each family header states it with
// static_assert(isPushBlock<Block>).
//
// Written here rather than taken from Boost.PFR: Debian 12's Boost (1.74) predates PFR, and PFR does not
// flatten nested structs (AttentionCoopPush holds AttentionPush).
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

namespace helios::spv {
class Module;
struct PushConstants;
} // namespace helios::spv

namespace helios::codegen {

enum class PushScalar : uint8_t { U32, I32, F32 };

namespace push_detail {

// Converts to any member type: counts an aggregate's members by how many initializers it accepts.
struct AnyMember {
  template <class T> constexpr operator T&() const noexcept;
};

template <class S, class... Taken> constexpr std::size_t memberCount() {
  if constexpr (requires { S{Taken{}..., AnyMember{}}; })
    return memberCount<S, Taken..., AnyMember>();
  else
    return sizeof...(Taken);
}

template <class T, std::size_t N>
constexpr void put(const T& member, std::array<PushScalar, N>& out, std::size_t& n);

// Each member of `block` in declaration order (push blocks have at most 16 members at one level).
template <class S, std::size_t N>
constexpr void putMembers(const S& s, std::array<PushScalar, N>& out, std::size_t& n) {
  constexpr std::size_t count = memberCount<S>();
  const auto each = [&](const auto&... m) { (put(m, out, n), ...); };
  // clang-format off
  if constexpr (count == 1) { const auto& [a] = s; each(a); }
  else if constexpr (count == 2) { const auto& [a, b] = s; each(a, b); }
  else if constexpr (count == 3) { const auto& [a, b, c] = s; each(a, b, c); }
  else if constexpr (count == 4) { const auto& [a, b, c, d] = s; each(a, b, c, d); }
  else if constexpr (count == 5) { const auto& [a, b, c, d, e] = s; each(a, b, c, d, e); }
  else if constexpr (count == 6) { const auto& [a, b, c, d, e, f] = s; each(a, b, c, d, e, f); }
  else if constexpr (count == 7) { const auto& [a, b, c, d, e, f, g] = s; each(a, b, c, d, e, f, g); }
  else if constexpr (count == 8) { const auto& [a, b, c, d, e, f, g, h] = s; each(a, b, c, d, e, f, g, h); }
  else if constexpr (count == 9) { const auto& [a, b, c, d, e, f, g, h, i] = s; each(a, b, c, d, e, f, g, h, i); }
  else if constexpr (count == 10) {
    const auto& [a, b, c, d, e, f, g, h, i, j] = s; each(a, b, c, d, e, f, g, h, i, j); }
  else if constexpr (count == 11) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k] = s; each(a, b, c, d, e, f, g, h, i, j, k); }
  else if constexpr (count == 12) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l] = s; each(a, b, c, d, e, f, g, h, i, j, k, l); }
  else if constexpr (count == 13) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m] = s; each(a, b, c, d, e, f, g, h, i, j, k, l, m); }
  else if constexpr (count == 14) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, o] = s; each(a, b, c, d, e, f, g, h, i, j, k, l, m, o); }
  else static_assert(count <= 14, "a push block level has at most 14 members: nest a struct");
  // clang-format on
}

template <class T, std::size_t N>
constexpr void put(const T& member, std::array<PushScalar, N>& out, std::size_t& n) {
  if constexpr (std::is_class_v<T>)
    putMembers(member, out, n);
  else if constexpr (std::is_same_v<T, uint32_t>)
    out[n++] = PushScalar::U32;
  else if constexpr (std::is_same_v<T, int32_t>)
    out[n++] = PushScalar::I32;
  else if constexpr (std::is_same_v<T, float>)
    out[n++] = PushScalar::F32;
  else
    static_assert(!sizeof(T), "push blocks hold uint32_t, int32_t and float members only");
}

} // namespace push_detail

// The block's scalars in declaration order. Not a constant expression (a compile error where it is required)
// when they do not fill sizeof(Block): padding, or a member the list does not see.
template <class Block> constexpr std::array<PushScalar, sizeof(Block) / 4> pushScalars() {
  static_assert(std::is_aggregate_v<Block> && std::is_trivially_copyable_v<Block> && alignof(Block) == 4);
  std::array<PushScalar, sizeof(Block) / 4> out{};
  std::size_t n = 0;
  push_detail::putMembers(Block{}, out, n);
  if (n != out.size() || sizeof(Block) % 4 != 0) throw "push block: members do not fill the struct";
  return out;
}

// Holds for a block whose scalar i sits at byte 4 * i (what Module::pushConstants declares).
template <class Block> inline constexpr bool isPushBlock = pushScalars<Block>().size() * 4 == sizeof(Block);

// Declares the push-constant block with these members (u32, i32, f32 in order) in `m`.
spv::PushConstants declarePush(spv::Module& m, std::span<const PushScalar> members);

// The generator's side: the block `Block` declares (returns spv::PushConstants; generators include the
// builder).
template <class Block> auto declarePush(spv::Module& m) {
  static_assert(isPushBlock<Block>);
  static constexpr auto members = pushScalars<Block>();
  return declarePush(m, std::span<const PushScalar>(members));
}

} // namespace helios::codegen
