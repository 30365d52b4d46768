#pragma once
// Input files are checked before they are opened. open() on a FIFO without a writer blocks forever, a
// character device such as /dev/zero reads without end, and a directory "opens" as an empty stream, so every
// reader of a user-named file (training text, shards, checkpoints, tokenizer files, .npy arrays, JSON
// configs, tuning files) asks requireRegularFile() first and is refused at once with what the path is.
#include <filesystem>
#include <stdexcept>
#include <string_view>

namespace helios::io {

class InputFileError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a path is, after its symlinks: "a directory", "a FIFO (named pipe)", "a socket", "a character
// device", "a block device", "a regular file", or "missing" when stat() fails.
std::string_view fileKind(const std::filesystem::path& path);

// Throws InputFileError "PATH: the WHAT is not a regular file (it is a FIFO (named pipe))" when `path` exists
// and is anything but a regular file (symlinks followed). A missing path passes: the caller's open() then
// says it in its own words.
void requireRegularFile(const std::filesystem::path& path, std::string_view what);

} // namespace helios::io
