#include "engine/tuning/overrides.hpp"

#include <cstdlib>
#include <stdexcept>

#include "engine/tuning/values.hpp"

namespace helios::tuning {

namespace {

// One variable: its name and what it does to the record (given its non-empty value).
struct Override {
  const char* name;
  void (*apply)(Tuning& t, const std::string& name, const std::string& value);
};

constexpr Source kEnv = Source::Env;

// "0"/"1" for a field that is on by default and may only be turned off (the variables' documented form).
template <Field<bool> GemmTuning::*F> void offSwitch(Tuning& t, const std::string& n, const std::string& v) {
  if (v != "0") throw std::invalid_argument(n + "='" + v + "': expected 0 (the only value it takes)");
  (t.gemm.*F).set(false, kEnv);
}
template <Field<bool> GemmTuning::*F> void bit(Tuning& t, const std::string& n, const std::string& v) {
  (t.gemm.*F).set(parseBit(n, v), kEnv);
}
template <Field<bool> AttentionTuning::*F>
void attentionOff(Tuning& t, const std::string& n, const std::string& v) {
  if (v != "0") throw std::invalid_argument(n + "='" + v + "': expected 0 (the only value it takes)");
  (t.attention.*F).set(false, kEnv);
}
template <Field<std::optional<uint32_t>> AttentionTuning::*F>
void attentionWhole(Tuning& t, const std::string& n, const std::string& v) {
  (t.attention.*F).set(parseWhole(n, v), kEnv);
}
template <Field<std::optional<CoopTile>> GemmTuning::*F>
void tile(Tuning& t, const std::string& n, const std::string& v) {
  (t.gemm.*F).set(parseCoopTile(n, v), kEnv);
}

void coopSubgroup(Tuning& t, const std::string& n, const std::string& v) {
  if (v != "8" && v != "16" && v != "32" && v != "64")
    throw std::invalid_argument(n + "='" + v + "': expected 8, 16, 32 or 64");
  t.gemm.coopSubgroup.set(parseWhole(n, v), kEnv);
}

void bounded(Tuning& t, const std::string& n, const std::string& v) {
  if (v == "0")
    t.gemm.bounded.set(BoundedMode::Never, kEnv);
  else if (v == "1")
    t.gemm.bounded.set(BoundedMode::Always, kEnv);
  else if (v == "all" || v == "all-vectors")
    t.gemm.bounded.set(parseBoundedMode(n, v), kEnv);
  else
    throw std::invalid_argument(n + "='" + v + "': expected 0, 1, all or all-vectors");
}

void crosswise(Tuning& t, const std::string& n, const std::string& v) {
  if (v != "0" && v != "a" && v != "b" && v != "ab")
    throw std::invalid_argument(n + "='" + v + "': expected a, b, ab or 0");
  t.gemm.crosswiseA.set(v.find('a') != std::string::npos, kEnv);
  t.gemm.crosswiseB.set(v.find('b') != std::string::npos, kEnv);
}

void smallTileBK(Tuning& t, const std::string& n, const std::string& v) {
  if (v != "32" && v != "64") throw std::invalid_argument(n + "='" + v + "': expected 32 or 64");
  t.gemm.smallTileBK.set(parseWhole(n, v), kEnv);
}

void kSlices(Tuning& t, const std::string& n, const std::string& v) {
  const uint32_t s = parseWhole(n, v);
  if (s < 1 || s > 64) throw std::invalid_argument(n + "='" + v + "': expected a whole number from 1 to 64");
  t.gemm.kSlices.set(s, kEnv);
}

const Override kOverrides[] = {
    {"HELIOS_COOP", [](Tuning& t, const std::string& n,
                       const std::string& v) { t.gemm.coop.set(parseCoopMode(n, v), kEnv); }},
    {"HELIOS_COOP_SHAPE", [](Tuning& t, const std::string& n,
                             const std::string& v) { t.gemm.coopShape.set(parseMatShape(n, v), kEnv); }},
    {"HELIOS_COOP_EMULATE", [](Tuning& t, const std::string& n,
                               const std::string& v) { t.gemm.coopEmulate.set(parseMatShape(n, v), kEnv); }},
    {"HELIOS_COOP_SUBGROUP", coopSubgroup},
    {"HELIOS_COOP2", bit<&GemmTuning::coop2>},
    {"HELIOS_COOP_BOUNDED", bounded},
    {"HELIOS_COOP_BOUNDED_VECTORS", offSwitch<&GemmTuning::boundedVectors>},
    {"HELIOS_COOP_CROSSWISE", crosswise},
    {"HELIOS_COOP_UNDER_WAVE_SUBGROUPS", offSwitch<&GemmTuning::underWaveSubgroups>},
    {"HELIOS_COOP_SMALL_TILE_BK", smallTileBK},
    {"HELIOS_COOP_EDGE_SHIFT", bit<&GemmTuning::edgeShift>},
    {"HELIOS_COOP_EDGE_SHIFT_SCALAR", bit<&GemmTuning::edgeShiftScalar>},
    {"HELIOS_GEMM_STAGED_STORE", offSwitch<&GemmTuning::stagedStore>},
    {"HELIOS_COOP_DIRECT_TILE", tile<&GemmTuning::directTile>},
    {"HELIOS_COOP_BOUNDED_TILE", tile<&GemmTuning::boundedTile>},
    {"HELIOS_COOP_GROUP_M", [](Tuning& t, const std::string& n,
                               const std::string& v) { t.gemm.groupM.set(parseWhole(n, v), kEnv); }},
    {"HELIOS_COOP_KSLICES", kSlices},
    {"HELIOS_COOP_PAD", [](Tuning& t, const std::string& n,
                           const std::string& v) { t.gemm.pad.set(parseSharedPad(n, v), kEnv); }},
    {"HELIOS_ATTENTION_ROWOPS", attentionOff<&AttentionTuning::rowOps>},
    {"HELIOS_ATTENTION_TILE", attentionWhole<&AttentionTuning::tile>},
    {"HELIOS_ATTENTION_SUBGROUPS", attentionWhole<&AttentionTuning::subgroups>},
    {"HELIOS_ATTENTION_PREFETCH", attentionOff<&AttentionTuning::prefetch>},
    {"HELIOS_ATTENTION_PAD", attentionOff<&AttentionTuning::pad>},
    {"HELIOS_ATTENTION_KEY_SPLITS", attentionWhole<&AttentionTuning::keySplits>},
    {"HELIOS_ATTENTION_DELTA",
     [](Tuning& t, const std::string& n, const std::string& v) {
       t.attention.delta.set(parseDeltaMode(n, v), kEnv);
     }},
};

} // namespace

EnvLookup processEnvironment() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

void applyEnvironment(Tuning& t, const EnvLookup& lookup) {
  for (const Override& o : kOverrides) {
    const char* v = lookup(o.name);
    if (v && *v) o.apply(t, o.name, v);
  }
  if (t.gemm.coopEmulate.value && t.gemm.coopShape.source == Source::Env && t.gemm.coopShape.value)
    throw std::invalid_argument("HELIOS_COOP_EMULATE and HELIOS_COOP_SHAPE are both set: the emulated shape "
                                "is HELIOS_COOP_EMULATE's");
}

const std::vector<std::string>& environmentNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Override& o : kOverrides)
      v.push_back(o.name);
    return v;
  }();
  return names;
}

} // namespace helios::tuning
