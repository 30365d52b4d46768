#include "bench_peak.hpp"

#include "engine/core/half.hpp"
#include "engine/ops/compute_units.hpp"
#include "engine/ops/peak.hpp"
#include "peak_plan.hpp"
#include "timing_executor.hpp"
#include "tools/cli_checks.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <random>

namespace helios::bench {

namespace {

using codegen::MmaType;
using codegen::PeakMmaParams;

// Trips of the loop the float64 check runs: small enough that f16 accumulators stay well inside their range.
constexpr uint32_t kCheckIterations = 3;

void logLine(const PeakBenchOptions& o, const std::string& line) {
  if (o.log) fmt::print(o.log, "{}\n", line);
}

// Random operands as the kernel reads them (bytes) and as numbers (values): f16 in [-1/8, 1/8] (a call's sum
// stays far from f16's range), 8-bit integers in [-8, 7] or [0, 15].
struct Operands {
  std::vector<std::byte> bytes;
  std::vector<double> values;
};
Operands randomOperands(const PeakMmaParams& p, std::mt19937_64& gen) {
  const size_t n = size_t(p.rows) * p.M * p.K + size_t(p.cols) * p.K * p.N;
  Operands o;
  o.values.resize(n);
  o.bytes.resize(n * codegen::mmaTypeBytes(p.ab));
  std::uniform_real_distribution<float> real(-0.125f, 0.125f);
  std::uniform_int_distribution<int> small(p.ab == MmaType::S8 ? -8 : 0, p.ab == MmaType::S8 ? 7 : 15);
  for (size_t i = 0; i < n; ++i) {
    if (p.ab == MmaType::F16) {
      const uint16_t h = floatToHalf(real(gen));
      std::memcpy(o.bytes.data() + 2 * i, &h, 2);
      o.values[i] = halfToFloat(h);
    } else {
      const int v = small(gen);
      o.bytes[i] = static_cast<std::byte>(static_cast<uint8_t>(v));
      o.values[i] = v;
    }
  }
  return o;
}

// Component i of `bytes` holding components of type t, as a number.
double component(const std::vector<std::byte>& bytes, MmaType t, size_t i) {
  if (t == MmaType::F16) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    return halfToFloat(h);
  }
  uint32_t w;
  std::memcpy(&w, bytes.data() + 4 * i, 4);
  if (t == MmaType::F32) return std::bit_cast<float>(w);
  return t == MmaType::S32 ? double(int32_t(w)) : double(w);
}

struct MmaBuffers {
  vk::Buffer operands, out;
  uint32_t workgroups;
};

// The largest error of the first and the last unit's sums after kCheckIterations trips, each relative to the
// sum of its products' magnitudes (what each rounding scales with); infinity for a non-finite component.
double checkMma(vk::Context& ctx, const PeakMmaParams& p, const Operands& ops, const MmaBuffers& b) {
  ops::ImmediateExecutor exec(ctx);
  ops::peakMma(exec, b.operands.range(), b.out.range(), p, b.workgroups, kCheckIterations);
  exec.flush();
  std::vector<double> magnitude;
  const std::vector<double> expected = ops::peakMmaExpected(p, ops.values, kCheckIterations, &magnitude);
  const uint64_t unitBytes = ops::peakMmaOutBytesPerWorkgroup(p) / p.unitsPerWorkgroup();
  const uint64_t units = uint64_t(b.workgroups) * p.unitsPerWorkgroup();
  double worst = 0;
  for (uint64_t unit : {uint64_t(0), units - 1}) {
    std::vector<std::byte> got(unitBytes);
    ctx.download(b.out, got, unit * unitBytes);
    for (size_t i = 0; i < expected.size(); ++i) {
      const double v = component(got, p.c, i), err = std::abs(v - expected[i]);
      worst = std::max(worst, std::isfinite(v) ? err / std::max(magnitude[i], 1e-30) : INFINITY);
    }
  }
  return worst;
}

// Integers add exactly; a float sum rounds at most once per addition (K x iterations into each accumulator,
// then one per accumulator summed), each time by at most the unit roundoff of the magnitudes summed so far.
double tolerance(const PeakMmaParams& p) {
  if (codegen::mmaTypeIsInt(p.c)) return 0.0;
  return double(p.K * kCheckIterations + p.accumulators()) * (p.c == MmaType::F16 ? 0x1p-11 : 0x1p-24);
}

// Trips per call so that one call lasts about targetMs, from one call at a few trips.
uint32_t calibrate(vk::Context& ctx, const CommonOptions& common, const PeakBenchOptions& o,
                   const PeakMmaParams& p, const MmaBuffers& b) {
  const uint32_t probeTrips = p.lowered ? 4 : 256;
  CommonOptions quick = common;
  quick.windows = 1, quick.repeat = 1, quick.warmupMs = 0;
  const double us = timeMedianUs(ctx, quick, [&](ops::Executor& e) {
    ops::peakMma(e, b.operands.range(), b.out.range(), p, b.workgroups, probeTrips);
  });
  const double trips = probeTrips * o.targetMs * 1e3 / std::max(us, 1e-3);
  return static_cast<uint32_t>(std::clamp(trips, 1.0, double(1u << 24)));
}

nlohmann::json registerStats(vk::Context& ctx, const PeakMmaParams& p) {
  nlohmann::json stats = nlohmann::json::object();
  const vk::Pipeline& pipe = ctx.pipelines().get(p.cacheKey(), [&] { return codegen::generatePeakMma(p); });
  for (const auto& st : ctx.pipelines().executableStats(pipe))
    if (st.name.find("Register") != std::string::npos || st.name.find("Spill") != std::string::npos)
      stats[st.name] = st.value;
  return stats;
}

nlohmann::json caseRow(const PeakCase& c) {
  const PeakMmaParams& p = c.params;
  return {{"source", c.source},
          {"M", p.M},
          {"N", p.N},
          {"K", p.K},
          {"A", codegen::mmaTypeName(p.ab)},
          {"C", codegen::mmaTypeName(p.c)},
          {"scope", p.workgroupScope ? "workgroup" : "subgroup"},
          {"invocations", p.invocations()},
          {"grid", fmt::format("{}x{}", p.rows, p.cols)},
          {"kernel", p.name()}};
}

std::string rowLine(const nlohmann::json& r) {
  const std::string what = fmt::format(
      "{:>3}x{:<3}x{:<3} {:>8} x {:<8} -> {:<8} {:9} {:>4} {}", r["M"].get<int>(), r["N"].get<int>(),
      r["K"].get<int>(), r["A"].get<std::string>(), r["A"].get<std::string>(), r["C"].get<std::string>(),
      r["scope"].get<std::string>(), r["invocations"].get<int>(), r["grid"].get<std::string>());
  if (r.contains("skip")) return "peak mma " + what + "  skipped: " + r["skip"].get<std::string>();
  if (r.contains("error")) return "peak mma " + what + "  error: " + r["error"].get<std::string>();
  return fmt::format("peak mma {}  {:9.2f} T{}OP/s  err {:.1e}{}", what, r["tflops"].get<double>(),
                     r["integer"].get<bool>() ? "" : "FL", r["max_rel_error"].get<double>(),
                     r["ok"].get<bool>() ? "" : "  WRONG");
}

nlohmann::json measureMma(vk::Context& ctx, const CommonOptions& common, const PeakBenchOptions& o,
                          const PeakCase& c, uint32_t workgroups, std::mt19937_64& gen) {
  nlohmann::json row = caseRow(c);
  if (!c.skip.empty()) {
    row["skip"] = c.skip;
    return row;
  }
  const PeakMmaParams& p = c.params;
  try {
    const Operands ops = randomOperands(p, gen);
    MmaBuffers b{ctx.buffer(ops.bytes.size(), "peak operands"),
                 ctx.buffer(ops::peakMmaOutBytesPerWorkgroup(p) * workgroups, "peak accumulators"),
                 workgroups};
    ctx.upload(b.operands, ops.bytes);
    const double err = checkMma(ctx, p, ops, b);
    const uint32_t trips = o.iterations ? o.iterations : calibrate(ctx, common, o, p, b);
    const double us = timeMedianUs(ctx, common, [&](ops::Executor& e) {
      ops::peakMma(e, b.operands.range(), b.out.range(), p, workgroups, trips);
    });
    row.update({{"workgroups", workgroups},
                {"iterations", trips},
                {"us", us},
                {"tflops", p.opsPerIteration() * workgroups * trips / (us * 1e-6) / 1e12},
                {"integer", codegen::mmaTypeIsInt(p.ab)},
                {"max_rel_error", err},
                {"ok", err <= tolerance(p)},
                {"kernel_stats", registerStats(ctx, p)}});
  } catch (const std::exception& e) {
    row["error"] = e.what();
  }
  return row;
}

// The copy's source words: a pattern no two vectors share within 2^32 words.
uint32_t pattern(uint64_t word) {
  return static_cast<uint32_t>(word * 2654435761u) ^ 0x5bd1e995u;
}

// Whether dst's first and last MiB (or all of it) hold src's pattern.
bool copyChecks(vk::Context& ctx, const vk::Buffer& dst, uint64_t bytes) {
  const uint64_t piece = std::min<uint64_t>(bytes, 1 << 20);
  for (uint64_t offset : {uint64_t(0), bytes - piece}) {
    std::vector<uint32_t> got(piece / 4);
    ctx.download(dst, std::as_writable_bytes(std::span(got)), offset);
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != pattern(offset / 4 + i)) return false;
  }
  return true;
}

uint64_t deviceHeapBytes(const vk::Device& device) {
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(device.physical(), &mp);
  uint64_t best = 0;
  for (uint32_t i = 0; i < mp.memoryHeapCount; ++i)
    if (mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      best = std::max(best, mp.memoryHeaps[i].size);
  return best ? best : mp.memoryHeaps[0].size;
}

nlohmann::json measureCopy(vk::Context& ctx, const CommonOptions& common, const PeakBenchOptions& o,
                           uint32_t units) {
  const uint64_t bytes =
      o.copyBytes ? o.copyBytes / 16 * 16
                  : peakCopyBytes(ctx.device().limits().maxStorageBufferRange, deviceHeapBytes(ctx.device()));
  const uint64_t vectors = bytes / 16;
  const uint32_t workgroups = peakCopyWorkgroups(vectors, units);
  nlohmann::json row = {{"bytes_per_buffer", bytes}, {"vector_bytes", 16}, {"workgroups", workgroups}};
  try {
    if (!vectors || vectors > UINT32_MAX)
      throw std::invalid_argument(fmt::format("{} bytes cannot be copied", bytes));
    std::vector<uint32_t> words(bytes / 4);
    for (size_t i = 0; i < words.size(); ++i)
      words[i] = pattern(i);
    vk::Buffer src = ctx.buffer(bytes, "peak copy source"), dst = ctx.buffer(bytes, "peak copy destination");
    ctx.uploadVector(src, words);
    const auto run = [&](ops::Executor& e) {
      ops::peakCopy(e, src.range(), dst.range(), static_cast<uint32_t>(vectors), workgroups);
    };
    const double us = timeMedianUs(ctx, common, run);
    row.update(
        {{"us", us}, {"gbps", 2.0 * double(bytes) / (us * 1e-6) / 1e9}, {"ok", copyChecks(ctx, dst, bytes)}});
  } catch (const std::exception& e) {
    row["error"] = e.what();
  }
  return row;
}

// The fastest correct row per (A, C) pair.
nlohmann::json best(const nlohmann::json& rows) {
  std::map<std::string, nlohmann::json> top;
  for (const auto& r : rows)
    if (r.value("ok", false)) {
      const std::string key = r["A"].get<std::string>() + " -> " + r["C"].get<std::string>();
      if (!top.count(key) || r["tflops"].get<double>() > top[key]["tflops"].get<double>())
        top[key] = {
            {"types", key}, {"tflops", r["tflops"]}, {"kernel", r["kernel"]}, {"source", r["source"]}};
    }
  nlohmann::json out = nlohmann::json::array();
  for (auto& [key, r] : top)
    out.push_back(r);
  return out;
}

std::pair<uint32_t, uint32_t> parseGrid(const std::string& text) {
  uint32_t r = 0, c = 0;
  if (std::sscanf(text.c_str(), "%ux%u", &r, &c) != 2 || !r || !c)
    throw std::invalid_argument("grid '" + text + "' is not RxC");
  return {r, c};
}

bool wants(const PeakBenchOptions& o, const char* part) {
  return std::find(o.parts.begin(), o.parts.end(), part) != o.parts.end();
}

} // namespace

void addPeakOptions(CLI::App& cmd, PeakBenchOptions& o) {
  cmd.add_option("--workgroups", o.workgroups, "MMA loop workgroups (0: 24 per compute unit)")
      ->check(cli::Count)
      ->capture_default_str();
  cmd.add_option("--iterations", o.iterations, "MMA loop trips per call (0: a call lasts --target-ms)")
      ->check(cli::Count)
      ->capture_default_str();
  cmd.add_option("--target-ms", o.targetMs, "GPU time of one MMA call when --iterations is 0")
      ->check(cli::FiniteNonNegative)
      ->capture_default_str();
  cmd.add_option("--copy-bytes", o.copyBytes, "Bytes per copy buffer (0: 256 MiB within the device's limits)")
      ->check(cli::Count)
      ->capture_default_str();
  cmd.add_option("--grid", o.grid, "Accumulator grid RxC for every MMA case (default: per case)")
      ->check([](const std::string& text) -> std::string {
        try {
          parseGrid(text);
          return {};
        } catch (const std::invalid_argument& e) {
          return e.what();
        }
      });
  cmd.add_option("--parts", o.parts, "mma, copy")
      ->delimiter(',')
      ->check(CLI::IsMember({"mma", "copy"}))
      ->capture_default_str();
}

nlohmann::json benchPeak(vk::Context& ctx, const CommonOptions& common, const PeakBenchOptions& options) {
  nlohmann::json result = header(ctx, common, "peak");
  const uint32_t units = ops::deviceComputeUnits(ctx.device());
  const uint32_t workgroups = options.workgroups ? options.workgroups : peakMmaWorkgroups(units);
  result["compute_units"] = units;
  nlohmann::json rows = nlohmann::json::array();
  std::mt19937_64 gen(4242);
  const std::pair<uint32_t, uint32_t> grid =
      options.grid.empty() ? std::pair(0u, 0u) : parseGrid(options.grid);
  if (wants(options, "mma"))
    for (PeakCase c : planPeakMma(peakDevice(ctx))) {
      if (grid.first) std::tie(c.params.rows, c.params.cols) = grid;
      rows.push_back(measureMma(ctx, common, options, c, workgroups, gen));
      logLine(options, rowLine(rows.back()));
    }
  result["results"] = rows;
  result["best"] = best(rows);
  if (wants(options, "copy")) {
    const nlohmann::json copy = measureCopy(ctx, common, options, units);
    logLine(options, copy.contains("error")
                         ? "peak copy error: " + copy["error"].get<std::string>()
                         : fmt::format("peak copy {:.0f} MiB -> {:.0f} MiB  {:9.1f} GB/s (read + written){}",
                                       copy["bytes_per_buffer"].get<double>() / (1 << 20),
                                       copy["bytes_per_buffer"].get<double>() / (1 << 20),
                                       copy["gbps"].get<double>(), copy["ok"].get<bool>() ? "" : "  WRONG"));
    result["bandwidth"] = nlohmann::json::array({copy});
  }
  if (rows.empty() && wants(options, "mma"))
    logLine(options, "peak mma: the device lists no cooperative matrices");
  return result;
}

} // namespace helios::bench
