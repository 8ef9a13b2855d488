// Walking the entries of a records blob: the RECORDS bytes of a Fetch
// partition, a log segment file, or the inner message set of a compressed
// legacy message. An entry is a record batch (magic 2) or a legacy message
// (magic 0 or 1); both start with offset int64 and length int32 (the "log
// overhead", 12 bytes) and have their magic byte at byte 16.
//
// This is the one place that reads entry headers. The record decoder
// (record_batch.hpp), `kwire dump-log` (log_inspect.hpp) and the consumer's
// next-offset bookkeeping all go through it.
//
// Layout of a magic-2 header (61 bytes, Kafka's DefaultRecordBatch):
//   baseOffset int64, batchLength int32 (bytes after this field),
//   partitionLeaderEpoch int32, magic int8, crc uint32 (CRC-32C of everything
//   from attributes to the end), attributes int16, lastOffsetDelta int32,
//   baseTimestamp int64, maxTimestamp int64, producerId int64,
//   producerEpoch int16, baseSequence int32, recordsCount int32.
// Layout of a legacy message header (18 bytes for magic 0, 26 for magic 1):
//   offset int64, messageSize int32, crc uint32 (CRC-32 of everything from
//   magic to the end), magic int8, attributes int8, timestamp int64 (magic 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "kwire/protocol/bytes.hpp"
#include "kwire/protocol/compression.hpp"

namespace kwire::protocol {

inline constexpr std::size_t kLogOverhead = 12;            // offset + length
inline constexpr std::size_t kRecordBatchHeaderSize = 61;  // magic-2 header, log overhead included
inline constexpr std::size_t kLegacyOverheadV0 = 14;       // crc..value length, magic 0
inline constexpr std::size_t kLegacyOverheadV1 = 22;       // plus the timestamp

inline constexpr std::int8_t kTimestampNone = -1;  // magic 0: no timestamps
inline constexpr std::int8_t kTimestampCreateTime = 0;
inline constexpr std::int8_t kTimestampLogAppendTime = 1;

/// Why a batch was rejected.
enum class CorruptionKind : std::int8_t {
  bad_length,        // batch/message length below the minimum or inconsistent
  bad_magic,         // unknown magic byte
  crc_mismatch,      // stored and computed checksums differ
  bad_compression,   // unknown codec, or the codec rejected the data
  too_large,         // decompressed data over DecodeOptions::max_decompressed_bytes
  malformed_record,  // record or inner-message bytes do not parse
};

/// The header of one entry, as stored. Every field of the magic-2 header; for
/// a legacy message (magic 0/1) only offset, size, crc, magic, attributes and
/// (magic 1) timestamp exist, and the others keep the defaults below:
///   base_offset             the message's offset (a compressed wrapper carries
///                           the offset of its last inner message)
///   batch_length            the message size (bytes after the length field)
///   attributes              the int8 attributes, sign-extended
///   base_timestamp,
///   max_timestamp           both the message timestamp (magic 1), -1 (magic 0)
///   last_offset_delta       0
///   records_count           1 (a compressed wrapper's inner count is not in
///                           its header)
///   partition_leader_epoch, producer_id, producer_epoch, base_sequence: -1
struct BatchHeader {
  std::int64_t base_offset = 0;
  std::int32_t batch_length = 0;
  std::int32_t partition_leader_epoch = -1;
  std::int8_t magic = 2;
  std::uint32_t crc = 0;
  std::int16_t attributes = 0;
  std::int32_t last_offset_delta = 0;
  std::int64_t base_timestamp = -1;  // Kafka calls it firstTimestamp in the v2 layout
  std::int64_t max_timestamp = -1;
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = -1;
  std::int32_t base_sequence = -1;
  std::int32_t records_count = 0;

  bool is_legacy() const noexcept { return magic < 2; }
  /// The codec of attribute bits 0-2; nullopt for an unknown codec.
  std::optional<Compression> compression() const noexcept { return compression_from_attributes(attributes); }
  /// kTimestampCreateTime or kTimestampLogAppendTime (attribute bit 3);
  /// kTimestampNone for magic 0.
  std::int8_t timestamp_type() const noexcept {
    if (magic == 0) return kTimestampNone;
    return (attributes & 0x08) != 0 ? kTimestampLogAppendTime : kTimestampCreateTime;
  }
  /// Attribute bit 4 (magic 2 only).
  bool is_transactional() const noexcept { return magic >= 2 && (attributes & 0x10) != 0; }
  /// Attribute bit 5 (magic 2 only): the batch holds a transaction marker.
  bool is_control() const noexcept { return magic >= 2 && (attributes & 0x20) != 0; }
  /// Offset of the last record: base_offset + last_offset_delta (the walker
  /// rejects headers for which this leaves int64). Legacy: base_offset.
  std::int64_t last_offset() const noexcept { return base_offset + last_offset_delta; }
  /// Bytes of the whole entry, log overhead included.
  std::size_t size() const noexcept { return kLogOverhead + static_cast<std::size_t>(batch_length); }
  /// Bytes of the header, log overhead included: 61 (magic 2), 18 (magic 0), 26 (magic 1).
  std::size_t header_size() const noexcept {
    return magic >= 2 ? kRecordBatchHeaderSize : magic == 1 ? kLogOverhead + 14 : kLogOverhead + 6;
  }
};

/// One complete entry of a blob.
struct BatchEntry {
  BatchHeader header;
  ByteSpan bytes;            // the whole entry (header.size() bytes), a view into the blob
  std::size_t position = 0;  // byte offset of the entry in the blob

  /// What follows the header: the records (magic 2; compressed as
  /// header.compression() says), or the key and value (magic 0/1; each an
  /// int32 length, -1 = null, and that many bytes).
  ByteSpan body() const noexcept { return bytes.subspan(header.header_size()); }
  /// The checksum of the bytes the stored one covers: CRC-32C from the
  /// attributes on (magic 2), CRC-32 from the magic byte on (magic 0/1).
  std::uint32_t computed_crc() const noexcept;
  bool crc_valid() const noexcept { return computed_crc() == header.crc; }
};

/// A header that cannot be right (reported by BatchWalker, never thrown).
struct BatchHeaderError {
  std::size_t position = 0;                          // byte offset of the entry in the blob
  std::int64_t base_offset = 0;                      // as stored in the entry
  CorruptionKind kind = CorruptionKind::bad_length;  // bad_length or bad_magic
  /// The check that failed, e.g. "unknown magic byte 7" or "batch length 40
  /// is below the magic-2 minimum of 49".
  std::string what;
};

/// Iterates over the entries of a blob, front to back, without copying or
/// decompressing anything. Checks only the header: its length (at least the
/// legacy minimum of 14, then the minimum of its magic), its magic byte (0, 1
/// or 2) and, for magic 2, that base_offset + last_offset_delta fits in
/// int64. CRCs and records are left to the caller.
///
///   BatchWalker w(blob);
///   while (w.next() == BatchWalker::Step::entry) use(w.entry());
///
/// Once next() has returned end, partial_tail or malformed it keeps returning
/// the same step.
class BatchWalker {
 public:
  enum class Step : std::uint8_t {
    entry,         // entry() holds the next complete entry
    end,           // no bytes left
    partial_tail,  // the bytes left are the start of an entry (not an error:
                   // brokers cut the last batch of a response short)
    malformed,     // error() says what is wrong with the entry at position()
  };

  explicit BatchWalker(ByteSpan data) noexcept : data_(data) {}

  /// Moves to the next entry. Throws only std::bad_alloc (for error().what).
  Step next();

  /// Valid after next() returned entry, until the next call.
  const BatchEntry& entry() const noexcept { return entry_; }
  /// After partial_tail: the full size (log overhead included) of the
  /// partial entry when its length field is readable, else 0.
  std::size_t partial_size() const noexcept { return partial_size_; }
  /// After malformed.
  const BatchHeaderError& error() const noexcept { return error_; }
  /// Byte offset where the next entry starts (after end: the blob's size;
  /// after partial_tail or malformed: the start of that entry).
  std::size_t position() const noexcept { return pos_; }

 private:
  Step fail(std::int64_t base_offset, CorruptionKind kind, std::string what);

  ByteSpan data_;
  std::size_t pos_ = 0;
  Step last_ = Step::entry;
  BatchEntry entry_;
  std::size_t partial_size_ = 0;
  BatchHeaderError error_;
};

/// Where a consumer's next fetch starts after receiving `records` for a fetch
/// at `fetch_offset` (see next_offset_after_batches()).
struct NextFetchPosition {
  /// The offset after the last complete entry: for a magic-2 batch its
  /// base_offset + last_offset_delta + 1 (control batches count), for a
  /// legacy message its offset + 1 (a compressed wrapper carries the offset of
  /// its last inner message). Never below fetch_offset; fetch_offset when no
  /// complete entry came. An entry ending at the largest offset leaves it there.
  std::int64_t next_offset = 0;
  /// The partition leader epoch of the entry that ends at next_offset - 1
  /// (what a Fetch from next_offset sends as last_fetched_epoch, KIP-320);
  /// -1 for legacy messages, or when no complete entry moved next_offset.
  std::int32_t last_epoch = -1;
  /// When the blob's first entry is partial: its full size, log overhead
  /// included (0 when its length field is cut off too, or when a complete
  /// entry precedes the partial one). A fetch asking for at least this many
  /// bytes per partition gets the whole entry.
  std::size_t partial_size = 0;
  /// Complete entries walked.
  std::size_t complete_entries = 0;
  /// Walking stopped at a malformed header (decode_records() reports it as
  /// CorruptRecordError); next_offset covers the entries before it.
  bool malformed = false;
};

/// Computes NextFetchPosition from the entry headers alone: no CRC check, no
/// decompression, no record parsing. Agrees with decode_records()'s
/// next_offset whenever that one does not throw. Never throws for corrupt
/// bytes.
NextFetchPosition next_offset_after_batches(ByteSpan records, std::int64_t fetch_offset);

}  // namespace kwire::protocol
