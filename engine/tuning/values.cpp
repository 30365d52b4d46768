#include "engine/tuning/values.hpp"

#include <stdexcept>
#include <vector>

namespace helios::tuning {

namespace {

[[noreturn]] void bad(const std::string& what, const std::string& value, const std::string& expected) {
  throw std::invalid_argument(what + "='" + value + "': expected " + expected);
}

bool digits(const std::string& s) {
  return !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
}

// `value` split at `sep` into exactly `parts` whole numbers, or nothing.
bool numbers(const std::string& value, char sep, size_t parts, std::vector<uint32_t>& out) {
  out.clear();
  size_t at = 0;
  while (true) {
    const size_t next = value.find(sep, at);
    const std::string part = value.substr(at, next == std::string::npos ? std::string::npos : next - at);
    if (!digits(part)) return false;
    out.push_back(static_cast<uint32_t>(std::stoul(part)));
    if (next == std::string::npos) break;
    at = next + 1;
  }
  return out.size() == parts;
}

template <class E, size_t N>
E byName(const std::string& what, const std::string& value, const char* const (&names)[N], const char* list) {
  for (size_t i = 0; i < N; ++i)
    if (value == names[i]) return static_cast<E>(i);
  bad(what, value, list);
}

const char* const kCoopModes[] = {"auto", "on", "off"};
const char* const kBoundedModes[] = {"policy", "never", "always", "all", "all-vectors"};
const char* const kDeltaModes[] = {"policy", "read", "recompute"};
const char* const kGemmKernels[] = {"coop", "tiled"};
const char* const kPasses[] = {"forward", "dq", "dkv"};

} // namespace

const char* sourceName(Source s) {
  static const char* const names[] = {"default", "file", "--tuning", "env"};
  return names[static_cast<size_t>(s)];
}

std::string text(const MatShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

std::string text(const CoopTile& t) {
  return std::to_string(t.bm) + "x" + std::to_string(t.bn) + "x" + std::to_string(t.bk) + "_sg" +
         std::to_string(t.rows) + "x" + std::to_string(t.cols) + "_s" + std::to_string(t.stages);
}

std::string text(const SharedPad& p) {
  return std::to_string(p.a) + "x" + std::to_string(p.b);
}

std::string text(const GemmShape& s) {
  std::string t = std::string(s.transA ? "t" : "n") + (s.transB ? "t" : "n") + ":" + std::to_string(s.m) +
                  "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
  if (s.batch != 1) t += "_b" + std::to_string(s.batch);
  if (s.f16Out) t += "_f16";
  return t;
}

const char* name(CoopMode m) {
  return kCoopModes[static_cast<size_t>(m)];
}
const char* name(BoundedMode m) {
  return kBoundedModes[static_cast<size_t>(m)];
}
const char* name(DeltaMode m) {
  return kDeltaModes[static_cast<size_t>(m)];
}
const char* name(GemmKernel k) {
  return kGemmKernels[static_cast<size_t>(k)];
}
const char* name(AttentionPassId p) {
  return kPasses[static_cast<size_t>(p)];
}

MatShape parseMatShape(const std::string& what, const std::string& value) {
  std::vector<uint32_t> v;
  const auto side = [](uint32_t s) { return s >= 8 && s <= 64 && s % 8 == 0; };
  if (!numbers(value, 'x', 3, v) || !side(v[0]) || !side(v[1]) || !side(v[2]))
    bad(what, value, "MxNxK with each side a multiple of 8 from 8 to 64 (e.g. 16x16x16)");
  return {v[0], v[1], v[2]};
}

CoopTile parseCoopTile(const std::string& what, const std::string& value) {
  const size_t sg = value.find("_sg"), st = value.find("_s", sg == std::string::npos ? 0 : sg + 3);
  std::vector<uint32_t> bmnk, grid, stages;
  const bool ok = sg != std::string::npos && st != std::string::npos &&
                  numbers(value.substr(0, sg), 'x', 3, bmnk) &&
                  numbers(value.substr(sg + 3, st - sg - 3), 'x', 2, grid) &&
                  numbers(value.substr(st + 2), 'x', 1, stages);
  if (!ok || !bmnk[0] || !bmnk[1] || !bmnk[2] || bmnk[0] % 8 || bmnk[1] % 8 || !grid[0] || !grid[1] ||
      stages[0] < 1 || stages[0] > 2)
    bad(what, value, "BMxBNxBK_sgRxC_sS with BM, BN multiples of 8 and S 1 or 2 (e.g. 64x64x32_sg2x2_s2)");
  return {bmnk[0], bmnk[1], bmnk[2], grid[0], grid[1], stages[0]};
}

SharedPad parseSharedPad(const std::string& what, const std::string& value) {
  std::vector<uint32_t> v;
  if (!numbers(value, 'x', 2, v) || v[0] > 64 || v[1] > 64 || v[0] % 8 || v[1] % 8)
    bad(what, value, "AxB halves, multiples of 8 up to 64 (e.g. 8x8)");
  return {v[0], v[1]};
}

GemmShape parseGemmShape(const std::string& what, const std::string& value) {
  GemmShape s;
  const size_t colon = value.find(':');
  const std::string layout = value.substr(0, colon);
  if (colon == std::string::npos || layout.size() != 2 || (layout[0] != 'n' && layout[0] != 't') ||
      (layout[1] != 'n' && layout[1] != 't'))
    bad(what, value, "nn|nt|tn|tt:MxNxK[_bB][_f16]");
  s.transA = layout[0] == 't';
  s.transB = layout[1] == 't';
  std::string rest = value.substr(colon + 1);
  if (rest.size() > 4 && rest.ends_with("_f16")) s.f16Out = true, rest.resize(rest.size() - 4);
  if (const size_t b = rest.find("_b"); b != std::string::npos) {
    s.batch = parseWhole(what, rest.substr(b + 2));
    rest.resize(b);
  }
  std::vector<uint32_t> v;
  if (!numbers(rest, 'x', 3, v) || !v[0] || !v[1] || !v[2] || !s.batch)
    bad(what, value, "nn|nt|tn|tt:MxNxK[_bB][_f16] with positive sizes");
  s.m = v[0], s.n = v[1], s.k = v[2];
  return s;
}

CoopMode parseCoopMode(const std::string& what, const std::string& value) {
  return byName<CoopMode>(what, value, kCoopModes, "auto, on or off");
}
BoundedMode parseBoundedMode(const std::string& what, const std::string& value) {
  return byName<BoundedMode>(what, value, kBoundedModes, "policy, never, always, all or all-vectors");
}
DeltaMode parseDeltaMode(const std::string& what, const std::string& value) {
  return byName<DeltaMode>(what, value, kDeltaModes, "policy, read or recompute");
}
GemmKernel parseGemmKernel(const std::string& what, const std::string& value) {
  return byName<GemmKernel>(what, value, kGemmKernels, "coop or tiled");
}
AttentionPassId parseAttentionPass(const std::string& what, const std::string& value) {
  return byName<AttentionPassId>(what, value, kPasses, "forward, dq or dkv");
}

uint32_t parseWhole(const std::string& what, const std::string& value) {
  if (!digits(value)) bad(what, value, "a whole number");
  return static_cast<uint32_t>(std::stoul(value));
}

bool parseBit(const std::string& what, const std::string& value) {
  if (value != "0" && value != "1") bad(what, value, "0 or 1");
  return value == "1";
}

} // namespace helios::tuning
