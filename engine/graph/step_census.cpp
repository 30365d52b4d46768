#include "engine/graph/step_census.hpp"

#include "engine/graph/hazards.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace helios::graph {

std::string kernelFamily(std::string_view name) {
  std::string family;
  size_t at = 0;
  while (at <= name.size()) {
    const size_t end = std::min(name.find('_', at), name.size());
    const std::string_view word = name.substr(at, end - at);
    if (std::any_of(word.begin(), word.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      break;
    family += (family.empty() ? "" : "_") + std::string(word);
    at = end + 1;
  }
  return family.empty() ? std::string(name) : family;
}

StepCensus takeCensus(const std::vector<DispatchRecord>& dispatches) {
  HazardTracker hazards;
  std::map<std::string, FamilyCount> byFamily;
  std::map<std::string, std::set<std::string>> kernels;
  StepCensus c;
  for (const DispatchRecord& d : dispatches) {
    const std::string family = kernelFamily(d.name);
    FamilyCount& f = byFamily[family];
    f.family = family;
    kernels[family].insert(d.name);
    if (hazards.needsBarrier(d.bindings)) {
      hazards.barrier();
      ++f.barriers;
      ++c.barriers;
    }
    hazards.record(d.bindings);
    ++f.dispatches;
    ++c.dispatches;
    for (const auto& b : d.bindings) {
      f.boundBytes += b.range.size;
      c.boundBytes += b.range.size;
    }
  }
  for (auto& [name, f] : byFamily) {
    f.kernels = kernels[name].size();
    c.families.push_back(f);
  }
  std::stable_sort(c.families.begin(), c.families.end(),
                   [](const FamilyCount& a, const FamilyCount& b) { return a.dispatches > b.dispatches; });
  return c;
}

} // namespace helios::graph
