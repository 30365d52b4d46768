#pragma once
// Writes that survive a crash or power loss: a file is written under a temporary name, flushed to the disk
// (fsync), renamed over its final name, and its directory flushed, so that a reader finds either the old
// complete file or the new complete file. Errors throw std::runtime_error naming the path and errno's text.
//
// The test hook for crash tests lives here too, read in this one place: HELIOS_TEST_SAVE_PAUSE_MS=N (0 to
// 10000) makes savePause() sleep N ms. Saves call it halfway through each file and between their stages,
// so that a SIGKILL at a random moment lands inside a save more often (tests/train/test_crash_resume.cpp).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

namespace helios::train {

// `path` holds exactly `bytes` on disk afterwards (temporary "<path>.partial", fsync, rename, fsync of the
// directory).
void writeFileDurably(const std::filesystem::path& path, std::string_view bytes);
// fsync of a directory: its entries (created, renamed, removed files) reach the disk.
void syncDirectory(const std::filesystem::path& dir);

// The value of HELIOS_TEST_SAVE_PAUSE_MS (nullopt when unset); throws std::invalid_argument for anything
// but an integer 0..10000.
std::optional<uint32_t> parseSavePauseMs(const char* text);
// Sleeps for the test hook's pause (once read; nothing when unset).
void savePause();

} // namespace helios::train
