#pragma once
// Where an installed Helios keeps its data: <prefix>/share/helios, found from the file this code runs from
// (libhelios.so under <prefix>/lib, or a tool under <prefix>/bin), so nothing points back at the source or
// build tree and an installed prefix can be moved as a whole.
#include <filesystem>

namespace helios::io {

// The shared library or executable holding this code; empty when it cannot be told.
std::filesystem::path ownBinaryPath();

// <prefix>/share/helios for a binary at <prefix>/<dir>/<file> (pure: the layout rule alone).
std::filesystem::path dataDirFor(const std::filesystem::path& binary);

// dataDirFor(ownBinaryPath()); empty when the binary's path is unknown.
std::filesystem::path installedDataDir();

} // namespace helios::io
