#pragma once
// CLI11 checks shared by the command-line tools. CLI11 2.1 converts "-5" into an unsigned option by wrapping
// (to 18446744073709551611), and parses "nan" and "inf" into floats, so every count option carries Count and
// every float option one of the finite checks; the ranges that also apply to config files stay in the
// engine's own validation (engine/train/config.cpp).
#include <CLI/CLI.hpp>

#include <cmath>
#include <string>

namespace helios::cli {

namespace detail {
inline bool parseFinite(const std::string& s, double& v) {
  size_t used = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == s.size() && std::isfinite(v);
}
} // namespace detail

// A whole number written in decimal digits only: no sign, no 0x, no exponent.
inline const CLI::Validator Count(
    [](std::string& s) -> std::string {
      if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
        return "must be a non-negative whole number, got '" + s + "'";
      return {};
    },
    "COUNT", "Count");

// A whole number of at least 1.
inline const CLI::Validator PositiveCount(
    [](std::string& s) -> std::string {
      if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos ||
          s.find_first_not_of('0') == std::string::npos)
        return "must be a whole number of at least 1, got '" + s + "'";
      return {};
    },
    "COUNT>0", "PositiveCount");

// Any finite number (not nan, not inf).
inline const CLI::Validator Finite(
    [](std::string& s) -> std::string {
      double v = 0;
      return detail::parseFinite(s, v) ? std::string() : "must be a finite number, got '" + s + "'";
    },
    "FINITE", "Finite");

// A finite number >= 0.
inline const CLI::Validator FiniteNonNegative(
    [](std::string& s) -> std::string {
      double v = 0;
      return detail::parseFinite(s, v) && v >= 0 ? std::string()
                                                 : "must be a finite number >= 0, got '" + s + "'";
    },
    "FINITE>=0", "FiniteNonNegative");

} // namespace helios::cli
