#pragma once
// Checkpoint writes: engine/io/atomic_file's durable replace (temporary file, fsync, rename, fsync of the
// directory), with the crash test's pauses around it. Errors throw io::FileWriteError naming the path.
//
// The test hook for crash tests lives here too, read in this one place: HELIOS_TEST_SAVE_PAUSE_MS=N (0 to
// 10000) makes savePause() sleep N ms. Saves call it around each file and between their stages,
// so that a SIGKILL at a random moment lands inside a save more often (tests/train/test_crash_resume.cpp).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

namespace helios::train {

// `path` holds exactly `bytes` on disk afterwards (io::writeFileAtomically between two savePause()s).
void writeFileDurably(const std::filesystem::path& path, std::string_view bytes);

// The value of HELIOS_TEST_SAVE_PAUSE_MS (nullopt when unset); throws std::invalid_argument for anything
// but an integer 0..10000.
std::optional<uint32_t> parseSavePauseMs(const char* text);
// Sleeps for the test hook's pause (once read; nothing when unset).
void savePause();

} // namespace helios::train
