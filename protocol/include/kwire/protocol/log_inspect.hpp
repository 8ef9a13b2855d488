// Walks bytes that hold record batches or legacy message sets back to back
// (a Kafka log segment file, or the RECORDS bytes of a Fetch partition) and
// describes every entry: its header fields, whether its CRC is valid, and its
// records. Used by `kwire dump-log`; never throws on bad bytes: it stops at the
// first entry it cannot read and says where and why.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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
  std::size_t position = 0;  // byte offset of the entry in the input
  std::size_t size = 0;      // whole entry, log overhead included
  std::int8_t magic = 0;
  std::int64_t base_offset = 0;  // magic 0/1: the message's offset
  std::int32_t last_offset_delta = 0;
  std::int32_t partition_leader_epoch = -1;
  std::uint32_t crc = 0;
  bool crc_valid = false;
  std::int16_t attributes = 0;
  Compression compression = Compression::none;
  std::int8_t timestamp_type = kTimestampNone;
  bool transactional = false;
  bool control = false;
  std::int64_t base_timestamp = -1;
  std::int64_t max_timestamp = -1;
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = -1;
  std::int32_t base_sequence = -1;
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
