#include "engine/ops/coop_overrides.hpp"

#include <cstdlib>
#include <stdexcept>

namespace helios::ops {

namespace {

uint32_t side(const std::string& what, const std::string& value, const std::string& text) {
  const bool digits =
      !text.empty() && text.size() <= 3 && text.find_first_not_of("0123456789") == std::string::npos;
  const uint32_t v = digits ? static_cast<uint32_t>(std::stoul(text)) : 0u;
  if (v < 8 || v > 64 || v % 8 != 0)
    throw std::invalid_argument(
        what + "=" + value + ": expected MxNxK with each side a multiple of 8 from 8 to 64 (e.g. 16x16x16)");
  return v;
}

} // namespace

CoopShape parseCoopShape(const std::string& what, const std::string& value) {
  const size_t a = value.find('x'), b = a == std::string::npos ? a : value.find('x', a + 1);
  if (b == std::string::npos || value.find('x', b + 1) != std::string::npos)
    throw std::invalid_argument(what + "=" + value + ": expected MxNxK (e.g. 16x16x16)");
  return {side(what, value, value.substr(0, a)), side(what, value, value.substr(a + 1, b - a - 1)),
          side(what, value, value.substr(b + 1))};
}

CoopOverrides parseCoopOverrides(const char* emulate, const char* shape) {
  CoopOverrides o;
  if (emulate && *emulate) o.emulate = parseCoopShape("HELIOS_COOP_EMULATE", emulate);
  if (shape && *shape) o.shape = parseCoopShape("HELIOS_COOP_SHAPE", shape);
  if (o.emulate && o.shape)
    throw std::invalid_argument("HELIOS_COOP_EMULATE and HELIOS_COOP_SHAPE are both set: the emulated shape "
                                "is HELIOS_COOP_EMULATE's");
  return o;
}

const CoopOverrides& coopOverrides() {
  static const CoopOverrides o =
      parseCoopOverrides(std::getenv("HELIOS_COOP_EMULATE"), std::getenv("HELIOS_COOP_SHAPE"));
  return o;
}

std::string toString(const CoopShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

} // namespace helios::ops
