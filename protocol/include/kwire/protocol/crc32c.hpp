// Checksums used by Kafka record formats.
//
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) protects record
// batches of magic 2; CRC-32 (IEEE 802.3, the zlib checksum) protects legacy
// messages of magic 0 and 1.
//
// All functions take the running value of a previous call as `crc` (0 to
// start), so a checksum can be computed over several pieces:
//   crc32c(b, crc32c(a)) == crc32c(a ++ b)
#pragma once

#include <cstdint>

#include "kwire/protocol/bytes.hpp"

namespace kwire::protocol {

/// CRC-32C of `data`, using the SSE4.2 instruction when the CPU has it.
std::uint32_t crc32c(ByteSpan data, std::uint32_t crc = 0) noexcept;

/// CRC-32C computed with portable slicing-by-8 tables (no special CPU support).
std::uint32_t crc32c_portable(ByteSpan data, std::uint32_t crc = 0) noexcept;

/// Whether the hardware path is usable on this machine.
bool crc32c_hardware_available() noexcept;

/// CRC-32C through the SSE4.2 instruction. Falls back to the portable code
/// when crc32c_hardware_available() is false, so it is always safe to call.
std::uint32_t crc32c_hardware(ByteSpan data, std::uint32_t crc = 0) noexcept;

/// CRC-32 (IEEE, as zlib's crc32) of `data`.
std::uint32_t crc32_ieee(ByteSpan data, std::uint32_t crc = 0) noexcept;

}  // namespace kwire::protocol
