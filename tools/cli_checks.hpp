#pragma once
// CLI11 checks shared by the command-line tools. CLI11 2.1 converts "-5" into an unsigned option by wrapping
// (to 18446744073709551611), and parses "nan" and "inf" into floats, so every count option carries Count and
// every float option one of the finite checks; the ranges that also apply to config files stay in the
// engine's own validation (engine/train/config.cpp).
#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>

namespace helios::cli {

namespace detail {
// Decimal digits only (no sign, no 0x, no exponent), and a value that fits 64 bits: CLI11 2.1 reads
// "99999999999999999999999" into a uint64_t option as 2^64 - 1 (strtoull clamps); narrower options it
// refuses itself when the value does not fit.
inline std::string countError(const std::string& s, bool positive) {
  const char* want = positive ? "a whole number of at least 1" : "a non-negative whole number";
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
    return std::string("must be ") + want + ", got '" + s + "'";
  uint64_t v = 0;
  if (std::from_chars(s.data(), s.data() + s.size(), v).ec == std::errc::result_out_of_range)
    return std::string("must be ") + want + " no larger than 18446744073709551615 (2^64 - 1), got '" + s +
           "'";
  if (positive && v == 0) return std::string("must be ") + want + ", got '" + s + "'";
  return {};
}

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

// A whole number written in decimal digits only: no sign, no 0x, no exponent, at most 2^64 - 1.
inline const CLI::Validator Count([](std::string& s) { return detail::countError(s, false); }, "COUNT",
                                  "Count");

// A whole number of at least 1 (and at most 2^64 - 1).
inline const CLI::Validator PositiveCount([](std::string& s) { return detail::countError(s, true); },
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

// An empty value is refused: "--data ''" would otherwise mean the default corpus, "--max-memory ''" no
// budget.
inline const CLI::Validator
    NonEmpty([](std::string& s) -> std::string { return s.empty() ? "must not be empty" : ""; }, "",
             "NonEmpty");

// Adds NonEmpty to every option of `app` and its subcommands that takes a value (paths, sizes, names), but
// those named in `emptyAllowed` (e.g. "--prompt"). Call it once the options are defined.
inline void refuseEmptyValues(CLI::App& app, const std::set<std::string>& emptyAllowed = {}) {
  for (CLI::Option* o : app.get_options())
    if (o->get_type_size_max() > 0 && !emptyAllowed.count(o->get_name())) o->check(NonEmpty);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    refuseEmptyValues(*sub, emptyAllowed);
}

} // namespace helios::cli
