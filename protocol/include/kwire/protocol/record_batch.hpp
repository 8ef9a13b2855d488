// Kafka record data: decoding of the RECORDS bytes of a Fetch partition (record
// batches of magic 2 and legacy message sets of magic 0 and 1) and encoding of
// magic-2 record batches for producing. Entry headers are read by BatchWalker
// (batch_walker.hpp, which also describes their layout).
//
// Each magic-2 record: length varint, attributes int8, timestampDelta varlong,
// offsetDelta varint, key (varint length, -1 = null), value (likewise),
// header count varint, headers (key: varint length + bytes, never null;
// value: varint length, -1 = null).
//
// A legacy message (magic 0/1) carries key and value as int32-length bytes. A
// compressed message carries a whole inner message set in its value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kwire/protocol/aborted_transaction.hpp"
#include "kwire/protocol/batch_walker.hpp"
#include "kwire/protocol/bytes.hpp"
#include "kwire/protocol/compression.hpp"
#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

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
  /// across clear() for reuse; only the first `buffers_in_use` are live, and
  /// each is scratch space (decompress_reusing): its size may exceed the
  /// decompressed batch it holds.
  std::deque<Bytes> buffers;
  std::size_t buffers_in_use = 0;

  /// Forgets the records (their views become invalid) but keeps buffer memory.
  void clear();
};

/// A complete entry that cannot be decoded. what() reads "corrupt record batch
/// at base offset N: DETAIL", or "corrupt record batch at base offset N in
/// WHERE: DETAIL" when a location (such as "orders-3") was given. To name the
/// location of an error caught from decode_records(), rethrow
///   CorruptRecordError(e.base_offset(), e.kind(), e.detail(), "orders-3")
/// A detail that is itself such a what() for the same base offset (an error
/// re-wrapped through its text) is not repeated.
class CorruptRecordError : public ProtocolError {
 public:
  CorruptRecordError(std::int64_t base_offset, CorruptionKind kind, std::string detail, std::string where = {});
  /// Base offset of the rejected batch (offset of the legacy message).
  std::int64_t base_offset() const noexcept { return base_offset_; }
  CorruptionKind kind() const noexcept { return kind_; }
  /// Just the check that failed, e.g. "CRC-32C mismatch: stored 0x1234abcd,
  /// computed 0x0badf00d" or "record 3: key length 90 out of range".
  const std::string& detail() const noexcept { return text_->detail; }
  /// The location given to the constructor (empty when none).
  const std::string& where() const noexcept { return text_->where; }

 private:
  struct Text {
    std::string detail;
    std::string where;
  };
  CorruptRecordError(std::int64_t base_offset, CorruptionKind kind, std::shared_ptr<const Text> text);
  std::int64_t base_offset_;
  CorruptionKind kind_;
  std::shared_ptr<const Text> text_;  // shared: copying an exception must not throw
};

/// Decodes every complete batch in `records` (a Fetch partition's RECORDS
/// bytes) and appends its records to out.records; sets next_offset,
/// truncated_tail, truncated_batch_size and adds to batches. Entries are
/// walked with BatchWalker: a partial entry at the end is not an error (see
/// truncated_tail), a malformed header is.
///
/// Control batches never produce records but advance next_offset; records
/// below `fetch_offset` are dropped. A corrupt complete batch throws
/// CorruptRecordError and contributes nothing; records of earlier batches stay
/// in `out` and out.next_offset points at the corrupt batch.
void decode_records(ByteSpan records, std::int64_t fetch_offset, const DecodeOptions& options, DecodedRecords& out);

/// decode_records() a few entries at a time. The records a Fetch answer holds
/// are not bounded by its size (a compressed batch of identical records
/// shrinks a hundredfold), so a consumer that decodes one part while handing
/// it out holds a bounded number of decoded records and decompressed bytes.
///
///   RecordsDecoder d(bytes, fetch_offset, options);
///   while (!d.done()) { out.clear(); d.decode(out, 500); use(out); }
///
/// The concatenation of what the calls append equals what decode_records()
/// appends; each call sets out.next_offset to the offset after the last
/// complete entry decoded so far (by any call), and truncated_tail /
/// truncated_batch_size when it reached a partial entry. A corrupt entry
/// throws CorruptRecordError as decode_records() does (the records of earlier
/// entries in this call stay in `out`); decoding is then done. `records` must
/// outlive the decoder.
class RecordsDecoder {
 public:
  RecordsDecoder(ByteSpan records, std::int64_t fetch_offset, DecodeOptions options);
  ~RecordsDecoder();
  RecordsDecoder(RecordsDecoder&&) noexcept;
  RecordsDecoder& operator=(RecordsDecoder&&) noexcept;

  /// Decodes whole entries (a batch, or a legacy message with all it wraps)
  /// and appends their records to out.records until it holds at least
  /// `min_records` records or no entry is left. Decompression buffers go to
  /// out.buffers as with decode_records().
  void decode(DecodedRecords& out, std::size_t min_records);
  /// No entry is left to decode (or one was corrupt).
  bool done() const noexcept;

 private:
  class Decoder;
  std::unique_ptr<Decoder> d_;
};

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

/// Builds one magic-2 batch (CreateTime) record by record: the one record
/// writer (encode_record_batch() and the producer use it). Records are written
/// as they are appended, after room for the 61-byte batch header; finish()
/// fills the header in (compressing the records first when asked) and the
/// CRC-32C. The buffer is kept across clear() for the next batch.
class RecordBatchBuilder {
 public:
  RecordBatchBuilder() = default;
  RecordBatchBuilder(RecordBatchBuilder&&) noexcept = default;
  RecordBatchBuilder& operator=(RecordBatchBuilder&&) noexcept = default;

  /// Starts an empty batch, keeping the buffers.
  void clear() noexcept;
  /// With it on, the records are checksummed (CRC-32C) a few KB at a time as
  /// they are appended, while they are still in the CPU's cache, and finish()
  /// without compression only adds the header's part instead of reading the
  /// whole batch again. Leave it off for a batch to be compressed (its
  /// checksum is over the compressed bytes). Kept across clear(); off at first.
  void checksum_while_appending(bool on) noexcept { checksum_records_ = on; }
  /// Reserves room for `bytes` of header and records.
  void reserve(std::size_t bytes);
  bool empty() const noexcept { return count_ == 0; }
  std::int32_t count() const noexcept { return count_; }
  /// Bytes of header and uncompressed records so far.
  std::size_t size() const noexcept { return size_; }
  /// Bytes of the records buffer allocated (kept across clear()).
  std::size_t capacity() const noexcept { return cap_; }
  std::int64_t base_timestamp() const noexcept { return base_ts_; }
  std::int64_t max_timestamp() const noexcept { return max_ts_; }

  /// The bytes append() would add for this record after `count()` others
  /// (its length prefix included); `timestamp` as append() resolves it.
  std::size_t record_size(std::int64_t timestamp, const std::optional<ByteSpan>& key,
                          const std::optional<ByteSpan>& value, std::span<const RecordHeader> headers) const noexcept;
  /// record_size() of the record as the first of a batch.
  static std::size_t first_record_size(const std::optional<ByteSpan>& key, const std::optional<ByteSpan>& value,
                                       std::span<const RecordHeader> headers) noexcept;
  /// Appends one record with a timestamp in ms (-1: the wall clock now);
  /// returns the timestamp written. Throws ProtocolError past 2^31-1 records.
  std::int64_t append(std::int64_t timestamp, const std::optional<ByteSpan>& key, const std::optional<ByteSpan>& value,
                      std::span<const RecordHeader> headers);
  /// append() when the batch stays within `limit` bytes with the record
  /// (size() + record_size() <= limit); nullopt, with nothing appended, when
  /// it would not.
  std::optional<std::int64_t> append_within(std::size_t limit, std::int64_t timestamp,
                                            const std::optional<ByteSpan>& key, const std::optional<ByteSpan>& value,
                                            std::span<const RecordHeader> headers);
  /// The finished batch: header from `options` (producer id, epoch, base
  /// sequence, transactional flag, base offset), records compressed with
  /// options.compression, CRC-32C. The span stays valid until the next
  /// append(), clear() or finish(). Throws ProtocolError for an empty batch.
  std::span<std::uint8_t> finish(const BatchOptions& options);
  /// Shared ownership of the memory the last finish() returned: it stays
  /// allocated while the pointer is held, whatever the builder does next (a
  /// later clear() gives the builder a fresh buffer instead of reusing one
  /// still held), so a gather write may send the batch from it.
  std::shared_ptr<const void> finished_owner() const noexcept {
    return finished_compressed_ ? std::shared_ptr<const void>(out_) : std::shared_ptr<const void>(buf_);
  }

 private:
  void grow(std::size_t need);
  void checksum_appended() noexcept;  // folds the records after crc_end_ into records_crc_
  std::shared_ptr<std::uint8_t[]> buf_;
  std::size_t size_ = 0;
  std::size_t cap_ = 0;
  std::int32_t count_ = 0;
  std::int64_t base_ts_ = -1;
  std::int64_t max_ts_ = -1;
  bool finished_compressed_ = false;
  bool checksum_records_ = false;
  std::uint32_t records_crc_ = 0;  // CRC-32C of the records bytes [header, crc_end_)
  std::size_t crc_end_ = kRecordBatchHeaderSize;
  std::shared_ptr<Bytes> out_;  // a compressed batch
};

/// Rewrites the producer fields of one finished magic-2 batch in place
/// (producer id, epoch, base sequence, transactional flag) and its CRC-32C,
/// as a producer does when it resends a batch under a new epoch (KIP-360).
/// Throws ProtocolError when `batch` is not one whole magic-2 batch.
void set_batch_producer_state(std::span<std::uint8_t> batch, std::int64_t producer_id, std::int16_t producer_epoch,
                              std::int32_t base_sequence, bool transactional);

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
