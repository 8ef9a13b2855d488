// Walks bytes that hold record batches or legacy message sets back to back
// (a Kafka log segment file, or the RECORDS bytes of a Fetch partition) and
// describes every entry: its header fields, whether its CRC is valid, and its
// records. Used by `kwire dump-log`; never throws on bad bytes: it stops at the
// first entry it cannot read and says where and why. Entries are walked with
// BatchWalker and their records decoded with decode_records() (CRCs reported,
// not enforced).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/batch_walker.hpp"
#include "kwire/protocol/record_batch.hpp"

namespace kwire::protocol {

struct InspectedRecord {
  std::int64_t offset = 0;
  std::int64_t timestamp = -1;
  std::int8_t timestamp_type = kTimestampNone;
  std::optional<Bytes> key;
  std::optional<Bytes> value;
  std::vector<RecordHeader> headers;
};

struct InspectedBatch {
  BatchHeader header;        // as stored (see BatchHeader for legacy messages)
  std::size_t position = 0;  // byte offset of the entry in the input
  std::size_t size = 0;      // whole entry, log overhead included
  bool crc_valid = false;    // the stored CRC matches the entry's bytes
  /// Offsets of the first and last record the entry holds. Magic 2: from the
  /// header. Magic 0/1: last is the message's offset, first that of the first
  /// decoded inner message of a compressed wrapper (else the same).
  std::int64_t first_offset = 0;
  std::int64_t last_offset = 0;
  /// Records the entry holds. Magic 2: the header's count. Magic 0/1: the
  /// decoded messages (1 when the entry did not decode).
  std::int32_t record_count = 0;
  std::vector<InspectedRecord> records;  // control batches: none
};

struct InspectResult {
  std::vector<InspectedBatch> batches;
  /// Set when reading stopped at a bad entry: what was wrong, and its position.
  std::optional<std::string> error;
  std::size_t error_position = 0;
  /// Bytes after the last complete entry that do not make a whole entry.
  bool truncated_tail = false;
};

/// Inspect `data`. `max_decompressed_bytes` caps each batch's decompressed size.
InspectResult inspect_log(ByteSpan data, std::size_t max_decompressed_bytes = 256u << 20);

}  // namespace kwire::protocol
