#pragma once
// `helios-train sample --prompts FILE`: many prompts in one run (one model load, one device), e.g. to score a
// held-out set. JSONL, one prompt per line: a JSON string, or an object with "prompt" (a string) and, for
// --chat, an optional "system" (other keys, such as an id or the expected answer, are ignored). Blank lines
// are skipped; any other line is an error naming the file and the line.
#include <filesystem>
#include <string>
#include <vector>

namespace helios::train_cli {

struct PromptLine {
  size_t line = 0; // 1-based, in the file
  std::string prompt, system;
};

// Throws std::invalid_argument naming the file (and the line) for a file that cannot be read, a bad line or
// a file without prompts.
std::vector<PromptLine> readPromptsFile(const std::filesystem::path& file);

} // namespace helios::train_cli
