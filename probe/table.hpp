#pragma once
// Plain-text tables with aligned columns (numbers right-aligned, text left-aligned).
#include <string>
#include <string_view>
#include <vector>

namespace helios::probe {

class TextTable {
public:
  // `rightAligned[i]` right-aligns column i; missing entries mean left-aligned.
  explicit TextTable(std::vector<std::string> header, std::vector<bool> rightAligned = {});
  void addRow(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }
  // Every line starts with `indent`; no trailing spaces.
  std::string render(std::string_view indent) const;

private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

} // namespace helios::probe
