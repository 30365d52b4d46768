#pragma once
// CRC-32C (Castagnoli: reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF), the
// checksum of iSCSI, ext4 metadata and LevelDB. Table-driven, eight bytes per step; portable C++.
#include <cstddef>
#include <cstdint>
#include <span>

namespace helios::train {

// The CRC-32C of `bytes`, continuing from `crc` (the value returned for the bytes before; 0 to start).
uint32_t crc32c(std::span<const std::byte> bytes, uint32_t crc = 0);

} // namespace helios::train
