// Record-batch compression codecs (the attribute bits 0-2 of a batch).
//
// compress() produces what Kafka's Java client produces:
//   gzip   - a single gzip member (RFC 1952)
//   snappy - snappy-java ("xerial") framing around raw snappy blocks
//   lz4    - an LZ4 frame with independent blocks (KIP-57 header checksum)
//   zstd   - a zstd frame
// decompress() accepts, in addition: several concatenated gzip members, raw
// (unframed) snappy, several concatenated LZ4 or zstd frames and zstd frames
// without a content size. It never produces more than `max_output` bytes and
// throws CompressionError when the data would decompress to more (a guard
// against decompression bombs) or is malformed.
//
// Both functions clear `out` and write into it, reusing its capacity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kwire/protocol/bytes.hpp"
#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

enum class Compression : std::int8_t { none = 0, gzip = 1, snappy = 2, lz4 = 3, zstd = 4 };

/// "none", "gzip", "snappy", "lz4", "zstd"; "unknown(N)" for other values.
std::string compression_name(Compression c);
/// Parses the names above (case-insensitive); nullopt when unknown.
std::optional<Compression> parse_compression(std::string_view name) noexcept;
/// The codec for attribute bits 0-2 of a batch; nullopt when not a known codec.
std::optional<Compression> compression_from_attributes(int attributes) noexcept;

class CompressionError : public ProtocolError {
 public:
  CompressionError(Compression codec, const std::string& what, bool limit_exceeded = false);
  Compression codec() const noexcept { return codec_; }
  /// True when the data was rejected for decompressing past max_output.
  bool limit_exceeded() const noexcept { return limit_exceeded_; }

 private:
  Compression codec_;
  bool limit_exceeded_;
};

/// Compresses `in` into `out` (cleared first). Compression::none copies.
void compress(Compression codec, ByteSpan in, Bytes& out);

/// Decompresses `in` into `out` (cleared first). Throws CompressionError on
/// malformed input or when the output would exceed `max_output` bytes.
void decompress(Compression codec, ByteSpan in, Bytes& out, std::size_t max_output);

/// As decompress(), with `out` as scratch space kept from call to call: it is
/// written over, not cleared, and grows (zero-filling what it adds) only past
/// its largest size so far, which it keeps. The result is out[0, returned
/// size); bytes after it are left from earlier calls. This saves a consumer a
/// zero-fill of the whole output for every compressed batch.
std::size_t decompress_reusing(Compression codec, ByteSpan in, Bytes& out, std::size_t max_output);

/// LZ4 as Kafka wrote it inside magic-0 messages before KIP-57: the frame
/// header checksum was computed over the 4-byte frame magic number as well as
/// the frame descriptor (KAFKA-3160), so a standard LZ4 reader rejects it.
/// This rewrites that one byte to the standard value and decompresses; a frame
/// whose header checksum is already standard is decompressed unchanged.
void decompress_lz4_legacy_header(ByteSpan in, Bytes& out, std::size_t max_output);

/// The LZ4 frame header checksum byte (xxh32 of the descriptor >> 8) over
/// `descriptor`, as the LZ4 frame format defines it.
std::uint8_t lz4_header_checksum(ByteSpan descriptor) noexcept;

}  // namespace kwire::protocol
