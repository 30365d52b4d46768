#include "engine/train/durable_file.hpp"

#include "engine/io/atomic_file.hpp"

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdexcept>
#include <thread>
#include <unistd.h>
#include <utility>

namespace helios::train {

void writeFileDurably(const std::filesystem::path& path, std::string_view bytes) {
  savePause();
  io::writeFileAtomically(path, bytes);
  savePause(); // a crash test's kill may land here: the file is in place, the save not yet complete
}

std::optional<uint32_t> parseSavePauseMs(const char* text) {
  if (!text) return std::nullopt;
  const std::string_view s(text);
  uint32_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v > 10000)
    throw std::invalid_argument(
        fmt::format("HELIOS_TEST_SAVE_PAUSE_MS='{}': expected milliseconds, an integer 0..10000", s));
  return v;
}

void savePause() {
  static const std::optional<uint32_t> ms = parseSavePauseMs(std::getenv("HELIOS_TEST_SAVE_PAUSE_MS"));
  if (ms && *ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(*ms));
}

} // namespace helios::train
