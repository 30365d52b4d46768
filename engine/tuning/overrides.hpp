#pragma once
// The environment overrides of the Tuning record, read in one place: applyEnvironment() parses every
// HELIOS_* tuning variable (docs/TUNING.md lists them) and rejects a bad value with std::invalid_argument
// naming the variable and the value. Unset or empty variables change nothing.
#include <functional>
#include <string>
#include <vector>

#include "engine/tuning/tuning.hpp"

namespace helios::tuning {

// name -> value (nullptr: unset); std::getenv by default, a map in tests.
using EnvLookup = std::function<const char*(const char*)>;
EnvLookup processEnvironment();

// Sets the fields named by the variables `lookup` finds, with source Env.
void applyEnvironment(Tuning& t, const EnvLookup& lookup);

// Every variable applyEnvironment() reads.
const std::vector<std::string>& environmentNames();

} // namespace helios::tuning
