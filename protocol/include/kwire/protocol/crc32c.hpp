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

#include <cstddef>
#include <cstdint>

#include "kwire/protocol/bytes.hpp"

namespace kwire::protocol {

/// CRC-32C of `data`, using the fastest implementation this CPU supports
/// (chosen once at start-up, see crc32c_path()).
std::uint32_t crc32c(ByteSpan data, std::uint32_t crc = 0) noexcept;

/// The implementations of CRC-32C. Inputs of 768 bytes or more are split
/// into three adjacent blocks whose CRCs are computed as independent streams
/// (the SSE4.2 instruction has a latency of several cycles but accepts a new
/// input every cycle) and then merged by shifting the first two over the
/// zero bytes that follow them, which is multiplication by x^(8 * length)
/// modulo the polynomial.
enum class Crc32cPath : std::uint8_t {
  portable,      // slicing-by-8 tables, any CPU
  sse42,         // SSE4.2 crc32 instruction; streams merged with zero-extension tables
  sse42_pclmul,  // SSE4.2 crc32; streams merged by carry-less multiplication (PCLMULQDQ)
  // AVX-512 VPCLMULQDQ: inputs of 512 bytes or more folded 256 bytes at a
  // time by carry-less multiplication (the method of Intel's "Fast CRC
  // Computation for Generic Polynomials Using PCLMULQDQ"), the last 64 bytes
  // and the tail through sse42_pclmul
  avx512_vpclmulqdq,
};

/// The path crc32c() takes on this CPU (detected at run time).
Crc32cPath crc32c_path() noexcept;

/// CRC-32C through a given path; a path the CPU does not support falls back
/// to the best supported one below it, so it is always safe to call.
std::uint32_t crc32c_via(Crc32cPath path, ByteSpan data, std::uint32_t crc = 0) noexcept;

/// CRC-32C computed with portable slicing-by-8 tables (no special CPU support).
std::uint32_t crc32c_portable(ByteSpan data, std::uint32_t crc = 0) noexcept;

/// Whether the hardware path is usable on this machine.
bool crc32c_hardware_available() noexcept;

/// CRC-32C through the SSE4.2 crc32 path (crc32c_via(Crc32cPath::sse42_pclmul));
/// crc32c() also folds with VPCLMULQDQ where the CPU has it.
/// Falls back to the portable code when crc32c_hardware_available() is false,
/// so it is always safe to call.
std::uint32_t crc32c_hardware(ByteSpan data, std::uint32_t crc = 0) noexcept;

/// The CRC-32C of a ++ b from crc32c(a), crc32c(b) and the length of b (as
/// zlib's crc32_combine): a checksum of pieces computed apart, e.g. a record
/// batch's records checksummed as they were written and its header last.
std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::size_t length_b) noexcept;

/// CRC-32 (IEEE, as zlib's crc32) of `data`.
std::uint32_t crc32_ieee(ByteSpan data, std::uint32_t crc = 0) noexcept;

}  // namespace kwire::protocol
