#include "prompts_file.hpp"

#include "engine/io/input_file.hpp"

#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace helios::train_cli {

namespace {

// One line's prompt; throws std::invalid_argument with what is wrong (the caller adds file and line).
PromptLine parsePromptLine(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw std::invalid_argument("not JSON");
  if (j.is_string()) return {0, j.get<std::string>(), {}};
  if (!j.is_object()) throw std::invalid_argument("neither a string nor an object with \"prompt\"");
  const auto prompt = j.find("prompt");
  if (prompt == j.end() || !prompt->is_string()) throw std::invalid_argument("no string \"prompt\"");
  const auto system = j.find("system");
  if (system != j.end() && !system->is_string()) throw std::invalid_argument("\"system\" is not a string");
  return {0, prompt->get<std::string>(), system == j.end() ? std::string() : system->get<std::string>()};
}

} // namespace

std::vector<PromptLine> readPromptsFile(const std::filesystem::path& file) {
  io::requireRegularFile(file, "prompts file");
  std::ifstream in(file);
  if (!in) throw std::invalid_argument(fmt::format("--prompts {}: cannot be read", file.string()));
  std::vector<PromptLine> prompts;
  size_t n = 0;
  for (std::string text; std::getline(in, text);) {
    ++n;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      PromptLine p = parsePromptLine(text);
      p.line = n;
      prompts.push_back(std::move(p));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("--prompts {}: line {}: {}", file.string(), n, e.what()));
    }
  }
  if (in.bad()) throw std::invalid_argument(fmt::format("--prompts {}: read error", file.string()));
  if (prompts.empty()) throw std::invalid_argument(fmt::format("--prompts {}: no prompts", file.string()));
  return prompts;
}

} // namespace helios::train_cli
