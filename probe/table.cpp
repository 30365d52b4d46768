#include "probe/table.hpp"

#include <algorithm>

namespace helios::probe {

TextTable::TextTable(std::vector<std::string> header, std::vector<bool> rightAligned)
    : header_(std::move(header)), right_(std::move(rightAligned)) {
  right_.resize(header_.size(), false);
}

void TextTable::addRow(std::vector<std::string> cells) {
  cells.resize(header_.size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::render(std::string_view indent) const {
  std::vector<std::size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  };
  measure(header_);
  for (const auto& row : rows_)
    measure(row);

  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line(indent);
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string pad(width[i] - row[i].size(), ' ');
      line += right_[i] ? pad + row[i] : row[i] + pad;
      if (i + 1 < row.size()) line += "  ";
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  };
  if (std::any_of(header_.begin(), header_.end(), [](const std::string& h) { return !h.empty(); }))
    emit(header_);
  for (const auto& row : rows_)
    emit(row);
  return out;
}

} // namespace helios::probe
