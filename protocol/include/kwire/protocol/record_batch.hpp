// Kafka record data: decoding of the RECORDS bytes of a Fetch partition (record
// batches of magic 2 and legacy message sets of magic 0 and 1) and encoding of
// magic-2 record batches for producing.
//
// Layout of a magic-2 batch (Kafka's DefaultRecordBatch), 61 header bytes:
//   baseOffset int64, batchLength int32 (bytes after this field),
//   partitionLeaderEpoch int32, magic int8 (= 2),
//   crc uint32 (CRC-32C of everything from attributes to the end),
//   attributes int16 (bits 0-2 codec, 3 timestamp type, 4 transactional,
//   5 control), lastOffsetDelta int32, baseTimestamp int64, maxTimestamp int64,
//   producerId int64, producerEpoch int16, baseSequence int32, records int32,
//   then the (possibly compressed) records.
// Each record: length varint, attributes int8, timestampDelta varlong,
// offsetDelta varint, key (varint length, -1 = null), value (likewise),
// header count varint, headers (key: varint length + bytes, never null;
// value: varint length, -1 = null).
//
// Legacy messages (magic 0/1): offset int64, size int32, crc uint32 (CRC-32
// over magic..end), magic int8, attributes int8, timestamp int64 (magic 1),
// key and value as int32-length bytes. A compressed message carries a whole
// inner message set in its value.
//
// The magic byte (offset 16 of every entry) selects the format of each entry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kwire/protocol/bytes.hpp"
#include "kwire/protocol/compression.hpp"
#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

inline constexpr std::size_t kLogOverhead = 12;            // offset + size
inline constexpr std::size_t kRecordBatchHeaderSize = 61;  // magic-2 header
inline constexpr std::size_t kLegacyOverheadV0 = 14;       // crc..value length, magic 0
inline constexpr std::size_t kLegacyOverheadV1 = 22;       // plus the timestamp

inline constexpr std::int8_t kTimestampNone = -1;  // magic 0: no timestamps
inline constexpr std::int8_t kTimestampCreateTime = 0;
inline constexpr std::int8_t kTimestampLogAppendTime = 1;

struct RecordHeader {
  std::string key;
  std::optional<Bytes> value;
  friend bool operator==(const RecordHeader&, const RecordHeader&) = default;
};

/// A decoded record. key/value point into either the buffer given to
/// decode_records() or a decompression buffer owned by the DecodedRecords that
/// holds this record; both must outlive the view.
struct RecordView {
  std::int64_t offset = 0;
  std::int64_t timestamp = -1;
  std::int8_t timestamp_type = kTimestampNone;  // 0 CreateTime, 1 LogAppendTime, -1 none
  std::optional<ByteSpan> key;
  std::optional<ByteSpan> value;
  std::vector<RecordHeader> headers;  // copied; usually empty
  std::int64_t producer_id = -1;      // from the batch (-1 for legacy messages)
  std::int16_t producer_epoch = -1;
  std::int32_t leader_epoch = -1;  // the batch's partition leader epoch (-1 for legacy messages)
};

/// An entry of a Fetch response's AbortedTransactions list.
struct AbortedTransaction {
  std::int64_t producer_id = -1;
  std::int64_t first_offset = -1;
  friend bool operator==(const AbortedTransaction&, const AbortedTransaction&) = default;
};

struct DecodeOptions {
  bool check_crcs = true;
  /// Upper bound on the decompressed size of one batch / wrapper message.
  std::size_t max_decompressed_bytes = 256u << 20;
  /// READ_COMMITTED: drop records of aborted transactions (needs the Fetch
  /// response's aborted_transactions, in any order).
  bool read_committed = false;
  std::vector<AbortedTransaction> aborted_transactions;
};

struct DecodedRecords {
  /// In offset order; only offsets >= the fetch offset.
  std::vector<RecordView> records;
  /// The offset after the last complete batch consumed (its last offset + 1),
  /// or the fetch offset when no complete batch was read.
  std::int64_t next_offset = 0;
  /// Bytes follow the last complete batch (a partial batch, which brokers may
  /// send at the end of a response).
  bool truncated_tail = false;
  /// Full size (including the 12-byte log overhead) of that partial batch when
  /// its length field was readable, else 0.
  std::size_t truncated_batch_size = 0;
  /// Complete batches (or top-level legacy messages) consumed, control
  /// batches and skipped batches included.
  std::size_t batches = 0;
  /// Decompression buffers that record views may point into. Kept allocated
  /// across clear() for reuse; only the first `buffers_in_use` are live.
  std::deque<Bytes> buffers;
  std::size_t buffers_in_use = 0;

  /// Forgets the records (their views become invalid) but keeps buffer memory.
  void clear();
};

/// Why a batch was rejected.
enum class CorruptionKind : std::int8_t {
  bad_length,        // batch/message length below the minimum or inconsistent
  bad_magic,         // unknown magic byte
  crc_mismatch,      // stored and computed checksums differ
  bad_compression,   // unknown codec, or the codec rejected the data
  too_large,         // decompressed data over DecodeOptions::max_decompressed_bytes
  malformed_record,  // record or inner-message bytes do not parse
};

class CorruptRecordError : public ProtocolError {
 public:
  CorruptRecordError(std::int64_t base_offset, CorruptionKind kind, const std::string& what);
  /// Base offset of the rejected batch (offset of the legacy message).
  std::int64_t base_offset() const noexcept { return base_offset_; }
  CorruptionKind kind() const noexcept { return kind_; }

 private:
  std::int64_t base_offset_;
  CorruptionKind kind_;
};

/// Decodes every complete batch in `records` (a Fetch partition's RECORDS
/// bytes) and appends its records to out.records; sets next_offset,
/// truncated_tail, truncated_batch_size and adds to batches.
///
/// Control batches never produce records but advance next_offset; records
/// below `fetch_offset` are dropped. A corrupt complete batch throws
/// CorruptRecordError and contributes nothing; records of earlier batches stay
/// in `out` and out.next_offset points at the corrupt batch.
void decode_records(ByteSpan records, std::int64_t fetch_offset, const DecodeOptions& options, DecodedRecords& out);

// ----------------------------------------------------------------- encoding

struct ProducerRecord {
  std::optional<Bytes> key;
  std::optional<Bytes> value;
  std::vector<RecordHeader> headers;
  std::int64_t timestamp = -1;  // -1 = now
};

struct BatchOptions {
  Compression compression = Compression::none;
  std::int64_t base_offset = 0;
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = -1;
  std::int32_t base_sequence = -1;
  bool transactional = false;
  std::int32_t partition_leader_epoch = -1;
};

/// Encodes one magic-2 batch (CreateTime) and appends it to `out`. Timestamps
/// of -1 become the current wall clock in milliseconds. Throws ProtocolError
/// for an empty record list.
void encode_record_batch(std::span<const ProducerRecord> records, const BatchOptions& options, Bytes& out);

/// Append one legacy message (magic 0 or 1) with its log overhead: offset,
/// size, CRC-32, magic, attributes, timestamp (magic 1 only), key, value. Used
/// to produce with Produce v0-v2 (which carry message sets) and in tests; a
/// compressed wrapper is a message whose value holds a compressed inner set
/// and whose attributes name the codec.
void encode_legacy_message(Bytes& out, std::int64_t offset, std::int8_t magic, std::int8_t attributes,
                           std::int64_t timestamp, const std::optional<Bytes>& key, const std::optional<Bytes>& value);

}  // namespace kwire::protocol
