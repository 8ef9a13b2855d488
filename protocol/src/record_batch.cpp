#include "kwire/protocol/record_batch.hpp"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <limits>

#include "kwire/protocol/crc32c.hpp"

namespace kwire::protocol {
namespace {

// Byte positions inside a magic-2 batch.
constexpr std::size_t kPartitionLeaderEpochOffset = 12;
constexpr std::size_t kMagicOffset = 16;
constexpr std::size_t kCrcOffset = 17;
constexpr std::size_t kAttributesOffset = 21;
constexpr std::size_t kLastOffsetDeltaOffset = 23;
constexpr std::size_t kBaseTimestampOffset = 27;
constexpr std::size_t kMaxTimestampOffset = 35;
constexpr std::size_t kProducerIdOffset = 43;
constexpr std::size_t kProducerEpochOffset = 51;
constexpr std::size_t kRecordsCountOffset = 57;

constexpr int kAttrCompressionMask = 0x07;
constexpr int kAttrLogAppendTime = 0x08;
constexpr int kAttrTransactional = 0x10;
constexpr int kAttrControl = 0x20;

// Smallest possible encoded record: length, attributes, timestamp delta,
// offset delta, key length, value length and header count, one byte each.
constexpr std::size_t kMinRecordSize = 7;

[[noreturn]] void corrupt(std::int64_t base_offset, CorruptionKind kind, const std::string& what) {
  throw CorruptRecordError(base_offset, kind, what);
}

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08" PRIx32, v);
  return buf;
}

std::int64_t load_i64(const std::uint8_t* p) noexcept { return static_cast<std::int64_t>(load_be64(p)); }
std::int32_t load_i32(const std::uint8_t* p) noexcept { return static_cast<std::int32_t>(load_be32(p)); }
std::int16_t load_i16(const std::uint8_t* p) noexcept { return static_cast<std::int16_t>(load_be16(p)); }

// Offsets come from the wire: a sum that leaves int64 means a corrupt batch.
bool offset_sum(std::int64_t a, std::int64_t b, std::int64_t& out) noexcept {
  return !__builtin_add_overflow(a, b, &out);
}
// Timestamps wrap as they do in Kafka's Java client (long arithmetic).
std::int64_t wrapping_add(std::int64_t a, std::int64_t b) noexcept {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}

// Aborted-transaction bookkeeping for READ_COMMITTED, as in Kafka's consumer:
// an aborted transaction becomes "open" once a batch reaching its first offset
// is seen, and is closed by the producer's ABORT marker.
class AbortTracker {
 public:
  explicit AbortTracker(const std::vector<AbortedTransaction>& list) : pending_(list) {
    std::stable_sort(pending_.begin(), pending_.end(),
                     [](const auto& a, const auto& b) { return a.first_offset < b.first_offset; });
  }
  void open_up_to(std::int64_t last_offset) {
    while (next_ < pending_.size() && pending_[next_].first_offset <= last_offset) {
      const std::int64_t pid = pending_[next_++].producer_id;
      if (!is_open(pid)) open_.push_back(pid);
    }
  }
  bool is_open(std::int64_t pid) const { return std::find(open_.begin(), open_.end(), pid) != open_.end(); }
  void close(std::int64_t pid) { std::erase(open_, pid); }

 private:
  std::vector<AbortedTransaction> pending_;
  std::size_t next_ = 0;
  std::vector<std::int64_t> open_;  // producers inside an aborted transaction
};

// Removes the records appended after `mark` unless dismissed.
class Rollback {
 public:
  Rollback(std::vector<RecordView>& v) : v_(v), mark_(v.size()) {}
  ~Rollback() {
    if (armed_) v_.resize(mark_);
  }
  void dismiss() noexcept { armed_ = false; }
  std::size_t mark() const noexcept { return mark_; }

 private:
  std::vector<RecordView>& v_;
  std::size_t mark_;
  bool armed_ = true;
};

struct LegacyMessage {
  std::int8_t magic = 0;
  std::int8_t attributes = 0;
  std::int64_t timestamp = -1;
  std::optional<ByteSpan> key;
  std::optional<ByteSpan> value;
};

class Decoder {
 public:
  Decoder(std::int64_t fetch_offset, const DecodeOptions& options, DecodedRecords& out)
      : fetch_offset_(fetch_offset),
        opt_(options),
        out_(out),
        aborts_(options.read_committed ? options.aborted_transactions : std::vector<AbortedTransaction>{}) {}

  void run(ByteSpan data) {
    out_.next_offset = fetch_offset_;
    out_.truncated_tail = false;
    out_.truncated_batch_size = 0;
    std::size_t pos = 0;
    while (pos < data.size()) {
      const std::size_t rem = data.size() - pos;
      const std::uint8_t* p = data.data() + pos;
      if (rem < kMagicOffset + 1) {
        // Not even the magic byte is here: a partial batch.
        out_.truncated_tail = true;
        if (rem >= kLogOverhead) {
          const std::int32_t size = load_i32(p + 8);
          if (size >= 0) out_.truncated_batch_size = kLogOverhead + static_cast<std::size_t>(size);
        }
        return;
      }
      const std::int64_t base_offset = load_i64(p);
      const std::int32_t size = load_i32(p + 8);
      if (size < static_cast<std::int32_t>(kLegacyOverheadV0))
        corrupt(
            base_offset, CorruptionKind::bad_length,
            "batch length " + std::to_string(size) + " is below the minimum of " + std::to_string(kLegacyOverheadV0));
      const std::size_t total = kLogOverhead + static_cast<std::size_t>(size);
      if (total > rem) {
        out_.truncated_tail = true;
        out_.truncated_batch_size = total;
        return;
      }
      const ByteSpan entry = data.subspan(pos, total);
      const std::int8_t magic = static_cast<std::int8_t>(p[kMagicOffset]);
      switch (magic) {
        case 2: batch_v2(entry, base_offset); break;
        case 0:
        case 1: legacy_entry(entry, base_offset, magic); break;
        default: corrupt(base_offset, CorruptionKind::bad_magic, "unknown magic byte " + std::to_string(magic));
      }
      pos += total;
    }
  }

 private:
  // ------------------------------------------------------------ magic 2

  void batch_v2(ByteSpan entry, std::int64_t base_offset) {
    if (entry.size() < kRecordBatchHeaderSize)
      corrupt(base_offset, CorruptionKind::bad_length,
              "batch length " + std::to_string(entry.size() - kLogOverhead) + " is below the magic-2 minimum of " +
                  std::to_string(kRecordBatchHeaderSize - kLogOverhead));
    const std::uint8_t* p = entry.data();
    if (opt_.check_crcs) {
      const std::uint32_t stored = load_be32(p + kCrcOffset);
      const std::uint32_t computed = crc32c(entry.subspan(kAttributesOffset));
      if (stored != computed)
        corrupt(base_offset, CorruptionKind::crc_mismatch,
                "CRC-32C mismatch: stored " + hex32(stored) + ", computed " + hex32(computed));
    }
    const int attributes = load_i16(p + kAttributesOffset);
    const std::int32_t last_offset_delta = load_i32(p + kLastOffsetDeltaOffset);
    const std::int64_t base_timestamp = load_i64(p + kBaseTimestampOffset);
    const std::int64_t max_timestamp = load_i64(p + kMaxTimestampOffset);
    const std::int64_t producer_id = load_i64(p + kProducerIdOffset);
    const std::int16_t producer_epoch = load_i16(p + kProducerEpochOffset);
    const std::int32_t leader_epoch = load_i32(p + kPartitionLeaderEpochOffset);
    const std::int32_t count = load_i32(p + kRecordsCountOffset);
    std::int64_t last_offset = 0;
    if (!offset_sum(base_offset, last_offset_delta, last_offset))
      corrupt(base_offset, CorruptionKind::bad_length,
              "last offset delta " + std::to_string(last_offset_delta) + " overflows the offset range");
    const bool control = (attributes & kAttrControl) != 0;
    const bool transactional = (attributes & kAttrTransactional) != 0;
    const bool log_append_time = (attributes & kAttrLogAppendTime) != 0;

    const auto codec = compression_from_attributes(attributes);
    if (!codec)
      corrupt(base_offset, CorruptionKind::bad_compression,
              "unknown compression codec " + std::to_string(attributes & kAttrCompressionMask));
    if (count < 0)
      corrupt(base_offset, CorruptionKind::malformed_record, "negative record count " + std::to_string(count));

    ByteSpan body = entry.subspan(kRecordBatchHeaderSize);
    Bytes* buffer = nullptr;
    auto records_region = [&]() -> ByteSpan {
      if (*codec == Compression::none || (count == 0 && body.empty())) return body;
      if (!buffer) {
        buffer = &acquire_buffer();
        decompress_into(*codec, body, *buffer, base_offset);
      }
      return ByteSpan(*buffer);
    };

    bool skip = control;
    if (opt_.read_committed && producer_id >= 0) {
      aborts_.open_up_to(last_offset);
      if (control) {
        if (is_abort_marker(records_region(), count, base_offset)) aborts_.close(producer_id);
      } else if (transactional && aborts_.is_open(producer_id)) {
        skip = true;
      }
    }
    if (skip || count == 0) {
      finish_batch(last_offset);
      return;
    }

    const ByteSpan region = records_region();
    if (static_cast<std::size_t>(count) > region.size() / kMinRecordSize)
      corrupt(base_offset, CorruptionKind::malformed_record,
              "record count " + std::to_string(count) + " cannot fit in " + std::to_string(region.size()) +
                  " bytes of records");

    reserve_records(static_cast<std::size_t>(count));
    Rollback rollback(out_.records);
    Reader r(region);
    for (std::int32_t i = 0; i < count; ++i) {
      const std::int32_t len = r.varint();
      if (!r.ok() || len < 0 || static_cast<std::size_t>(len) > r.remaining())
        bad_record(base_offset, i, r.ok() ? "length " + std::to_string(len) + " out of range" : r.error());
      Reader rr(r.take(static_cast<std::size_t>(len)));
      (void)rr.i8();  // record attributes (unused)
      const std::int64_t timestamp_delta = rr.varlong();
      const std::int32_t offset_delta = rr.varint();
      const auto key = varint_bytes(rr, base_offset, i, "key");
      const auto value = varint_bytes(rr, base_offset, i, "value");
      const std::int32_t header_count = rr.varint();
      if (header_count < 0 || static_cast<std::size_t>(header_count) > rr.remaining() / 2)
        bad_record(base_offset, i,
                   rr.ok() ? "header count " + std::to_string(header_count) + " out of range" : rr.error());
      std::int64_t offset = 0;
      if (!offset_sum(base_offset, offset_delta, offset))
        bad_record(base_offset, i, "offset delta " + std::to_string(offset_delta) + " overflows the offset range");
      const bool keep = offset >= fetch_offset_;
      RecordView* rec = nullptr;
      if (keep) {
        rec = &out_.records.emplace_back();
        rec->offset = offset;
        if (log_append_time) {
          rec->timestamp = max_timestamp;
          rec->timestamp_type = kTimestampLogAppendTime;
        } else {
          rec->timestamp = base_timestamp == -1 ? -1 : wrapping_add(base_timestamp, timestamp_delta);
          rec->timestamp_type = kTimestampCreateTime;
        }
        rec->key = key;
        rec->value = value;
        rec->producer_id = producer_id;
        rec->producer_epoch = producer_epoch;
        rec->leader_epoch = leader_epoch;
        // The count is only checked against the bytes left (two per header);
        // reserve no more than a few headers before they actually decode.
        if (header_count > 0) rec->headers.reserve(std::min<std::size_t>(static_cast<std::size_t>(header_count), 16));
      }
      for (std::int32_t h = 0; h < header_count; ++h) {
        const std::int32_t klen = rr.varint();
        if (!rr.ok() || klen < 0 || static_cast<std::size_t>(klen) > rr.remaining())
          bad_record(base_offset, i,
                     !rr.ok() ? rr.error()
                              : (klen < 0 ? std::string("null header key")
                                          : "header key length " + std::to_string(klen) + " out of range"));
        const ByteSpan hkey = rr.take(static_cast<std::size_t>(klen));
        const auto hvalue = varint_bytes(rr, base_offset, i, "header value");
        if (rec) {
          auto& hdr = rec->headers.emplace_back();
          hdr.key.assign(reinterpret_cast<const char*>(hkey.data()), hkey.size());
          if (hvalue) hdr.value.emplace(hvalue->begin(), hvalue->end());
        }
      }
      if (!rr.ok()) bad_record(base_offset, i, rr.error());
      if (!rr.empty())
        bad_record(base_offset, i, std::to_string(rr.remaining()) + " unread bytes at the end of the record");
    }
    if (!r.empty())
      corrupt(base_offset, CorruptionKind::malformed_record,
              std::to_string(r.remaining()) + " bytes follow the last of " + std::to_string(count) + " records");
    rollback.dismiss();
    if (buffer) ++out_.buffers_in_use;
    finish_batch(last_offset);
  }

  [[noreturn]] void bad_record(std::int64_t base_offset, std::int32_t index, const std::string& what) {
    corrupt(base_offset, CorruptionKind::malformed_record, "record " + std::to_string(index) + ": " + what);
  }

  // Varint-length bytes, -1 = null. The common case (a present value that
  // fits) stays inline; null, errors and their messages are out of line.
  std::optional<ByteSpan> varint_bytes(Reader& rr, std::int64_t base_offset, std::int32_t index, const char* what) {
    const std::int32_t len = rr.varint();
    if (len >= 0 && rr.ok() && static_cast<std::size_t>(len) <= rr.remaining()) [[likely]]
      return rr.take(static_cast<std::size_t>(len));
    if (len == -1) return std::nullopt;  // (a failed read yields 0, never -1)
    return varint_bytes_rest(rr, len, base_offset, index, what);
  }

  [[gnu::noinline]] std::optional<ByteSpan> varint_bytes_rest(Reader& rr, std::int32_t len, std::int64_t base_offset,
                                                              std::int32_t index, const char* what) {
    if (!rr.ok()) bad_record(base_offset, index, rr.error());
    if (len == -1) return std::nullopt;
    if (len < 0 || static_cast<std::size_t>(len) > rr.remaining())
      bad_record(base_offset, index, std::string(what) + " length " + std::to_string(len) + " out of range");
    return rr.take(static_cast<std::size_t>(len));
  }

  // A control batch holds one record whose key is (version int16, type int16);
  // type 0 is ABORT, 1 is COMMIT.
  bool is_abort_marker(ByteSpan region, std::int32_t count, std::int64_t base_offset) {
    if (count < 1) return false;
    Reader r(region);
    const std::int32_t len = r.varint();
    if (!r.ok() || len < 0 || static_cast<std::size_t>(len) > r.remaining())
      bad_record(base_offset, 0, "control record length out of range");
    Reader rr(r.take(static_cast<std::size_t>(len)));
    (void)rr.i8();
    (void)rr.varlong();
    (void)rr.varint();
    const auto key = varint_bytes(rr, base_offset, 0, "control key");
    if (!key || key->size() < 4) bad_record(base_offset, 0, "control record key shorter than 4 bytes");
    return load_i16(key->data() + 2) == 0;
  }

  // ------------------------------------------------------- magic 0 and 1

  LegacyMessage parse_legacy(ByteSpan msg, std::int64_t base_offset, const char* where) {
    // msg starts at the CRC field.
    Reader r(msg);
    LegacyMessage m;
    const std::uint32_t stored = r.u32();
    m.magic = r.i8();
    if (r.ok() && m.magic != 0 && m.magic != 1)
      corrupt(base_offset, CorruptionKind::bad_magic,
              std::string(where) + " has unknown magic byte " + std::to_string(m.magic));
    if (r.ok() && opt_.check_crcs) {
      const std::uint32_t computed = crc32_ieee(msg.subspan(4));
      if (stored != computed)
        corrupt(base_offset, CorruptionKind::crc_mismatch,
                std::string(where) + " CRC-32 mismatch: stored " + hex32(stored) + ", computed " + hex32(computed));
    }
    m.attributes = r.i8();
    if (m.magic >= 1) m.timestamp = r.i64();
    m.key = r.nullable_bytes_view(false);
    m.value = r.nullable_bytes_view(false);
    if (!r.ok())
      corrupt(base_offset, CorruptionKind::malformed_record, std::string(where) + " is malformed: " + r.error());
    if (!r.empty())
      corrupt(base_offset, CorruptionKind::malformed_record,
              std::string(where) + " has " + std::to_string(r.remaining()) + " unread bytes");
    return m;
  }

  void set_legacy_time(RecordView& rec, const LegacyMessage& m) {
    if (m.magic == 0) {
      rec.timestamp = -1;
      rec.timestamp_type = kTimestampNone;
    } else {
      rec.timestamp = m.timestamp;
      rec.timestamp_type = (m.attributes & kAttrLogAppendTime) ? kTimestampLogAppendTime : kTimestampCreateTime;
    }
  }

  void legacy_entry(ByteSpan entry, std::int64_t offset, std::int8_t magic) {
    const std::size_t minimum = magic == 0 ? kLegacyOverheadV0 : kLegacyOverheadV1;
    if (entry.size() - kLogOverhead < minimum)
      corrupt(offset, CorruptionKind::bad_length,
              "message size " + std::to_string(entry.size() - kLogOverhead) + " is below the magic-" +
                  std::to_string(magic) + " minimum of " + std::to_string(minimum));
    const LegacyMessage m = parse_legacy(entry.subspan(kLogOverhead), offset, "message");
    const auto codec = compression_from_attributes(m.attributes);
    if (!codec)
      corrupt(offset, CorruptionKind::bad_compression,
              "unknown compression codec " + std::to_string(m.attributes & kAttrCompressionMask));
    if (*codec == Compression::none) {
      if (offset >= fetch_offset_) {
        auto& rec = out_.records.emplace_back();
        rec.offset = offset;
        set_legacy_time(rec, m);
        rec.key = m.key;
        rec.value = m.value;
      }
      finish_batch(offset);
      return;
    }

    // A wrapper message: its value is a compressed inner message set.
    if (!m.value) corrupt(offset, CorruptionKind::malformed_record, "compressed message has a null value");
    Bytes& buffer = acquire_buffer();
    decompress_into(*codec, *m.value, buffer, offset, magic == 0);
    Rollback rollback(out_.records);
    const bool wrapper_log_append = m.magic >= 1 && (m.attributes & kAttrLogAppendTime) != 0;
    Reader r{ByteSpan(buffer)};
    while (!r.empty()) {
      if (r.remaining() < kLogOverhead)
        corrupt(offset, CorruptionKind::malformed_record, "truncated inner message header");
      const std::int64_t inner_offset = r.i64();
      const std::int32_t inner_size = r.i32();
      if (inner_size < static_cast<std::int32_t>(kLegacyOverheadV0) ||
          static_cast<std::size_t>(inner_size) > r.remaining())
        corrupt(offset, CorruptionKind::malformed_record,
                "inner message size " + std::to_string(inner_size) + " out of range");
      const LegacyMessage inner = parse_legacy(r.take(static_cast<std::size_t>(inner_size)), offset, "inner message");
      if ((inner.attributes & kAttrCompressionMask) != 0)
        corrupt(offset, CorruptionKind::malformed_record, "inner message is itself compressed");
      auto& rec = out_.records.emplace_back();
      rec.offset = inner_offset;
      set_legacy_time(rec, inner);
      if (wrapper_log_append) {
        rec.timestamp = m.timestamp;
        rec.timestamp_type = kTimestampLogAppendTime;
      }
      rec.key = inner.key;
      rec.value = inner.value;
    }
    const std::size_t first = rollback.mark();
    if (out_.records.size() == first)
      corrupt(offset, CorruptionKind::malformed_record, "compressed message holds no inner messages");
    if (m.magic >= 1) {
      // Inner offsets are relative; the wrapper carries the last one's offset.
      std::int64_t base = 0;
      bool fits = !__builtin_sub_overflow(offset, out_.records.back().offset, &base);
      for (std::size_t i = first; fits && i < out_.records.size(); ++i)
        fits = offset_sum(out_.records[i].offset, base, out_.records[i].offset);
      if (!fits) corrupt(offset, CorruptionKind::malformed_record, "inner message offsets overflow the offset range");
    }
    const auto drop = std::remove_if(out_.records.begin() + static_cast<std::ptrdiff_t>(first), out_.records.end(),
                                     [&](const RecordView& rec) { return rec.offset < fetch_offset_; });
    out_.records.erase(drop, out_.records.end());
    rollback.dismiss();
    ++out_.buffers_in_use;
    finish_batch(offset);
  }

  // ------------------------------------------------------------ helpers

  void finish_batch(std::int64_t last_offset) {
    ++out_.batches;
    // Never move backwards (a batch wholly below the fetch offset, e.g. the
    // start of a compressed legacy set, still ends at or after it).
    // (An entry ending at the largest offset leaves next_offset there.)
    const std::int64_t next = last_offset == std::numeric_limits<std::int64_t>::max() ? last_offset : last_offset + 1;
    out_.next_offset = std::max(out_.next_offset, next);
  }

  // Room for a batch's records in one step, growing geometrically so that a
  // fetch of many batches reallocates O(log n) times. The count has only been
  // checked against the bytes it needs (7 per record), so the step is capped.
  void reserve_records(std::size_t count) {
    constexpr std::size_t kMaxReserveStep = std::size_t{1} << 16;
    auto& recs = out_.records;
    const std::size_t want = recs.size() + std::min(count, kMaxReserveStep);
    if (want > recs.capacity()) recs.reserve(std::max(want, 2 * recs.capacity()));
  }

  Bytes& acquire_buffer() {
    if (out_.buffers_in_use < out_.buffers.size()) return out_.buffers[out_.buffers_in_use];
    return out_.buffers.emplace_back();
  }

  void decompress_into(Compression codec, ByteSpan in, Bytes& buffer, std::int64_t base_offset,
                       bool legacy_lz4_header = false) {
    try {
      if (codec == Compression::lz4 && legacy_lz4_header)
        decompress_lz4_legacy_header(in, buffer, opt_.max_decompressed_bytes);
      else decompress(codec, in, buffer, opt_.max_decompressed_bytes);
    } catch (const CompressionError& e) {
      corrupt(base_offset, e.limit_exceeded() ? CorruptionKind::too_large : CorruptionKind::bad_compression, e.what());
    }
  }

  std::int64_t fetch_offset_;
  const DecodeOptions& opt_;
  DecodedRecords& out_;
  AbortTracker aborts_;
};

// ------------------------------------------------------------------ encode

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

void write_varint_bytes(Writer& w, const std::optional<Bytes>& b) {
  if (!b) {
    w.varint(-1);
    return;
  }
  w.varint(static_cast<std::int32_t>(b->size()));
  w.raw(ByteSpan(*b));
}

void write_record_body(Writer& w, const ProducerRecord& rec, std::int64_t timestamp_delta, std::int32_t offset_delta) {
  w.i8(0);
  w.varlong(timestamp_delta);
  w.varint(offset_delta);
  write_varint_bytes(w, rec.key);
  write_varint_bytes(w, rec.value);
  w.varint(static_cast<std::int32_t>(rec.headers.size()));
  for (const auto& h : rec.headers) {
    w.varint(static_cast<std::int32_t>(h.key.size()));
    w.raw(h.key.data(), h.key.size());
    write_varint_bytes(w, h.value);
  }
}

void write_records(Writer& w, std::span<const ProducerRecord> records, std::int64_t now, std::int64_t base_ts) {
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& rec = records[i];
    const std::int64_t ts = rec.timestamp == -1 ? now : rec.timestamp;
    Writer counter;
    write_record_body(counter, rec, ts - base_ts, static_cast<std::int32_t>(i));
    w.varint(static_cast<std::int32_t>(counter.size()));
    write_record_body(w, rec, ts - base_ts, static_cast<std::int32_t>(i));
  }
}

}  // namespace

CorruptRecordError::CorruptRecordError(std::int64_t base_offset, CorruptionKind kind, const std::string& what)
    : ProtocolError("corrupt record batch at base offset " + std::to_string(base_offset) + ": " + what),
      base_offset_(base_offset),
      kind_(kind) {}

void DecodedRecords::clear() {
  records.clear();
  next_offset = 0;
  truncated_tail = false;
  truncated_batch_size = 0;
  batches = 0;
  buffers_in_use = 0;
}

void decode_records(ByteSpan records, std::int64_t fetch_offset, const DecodeOptions& options, DecodedRecords& out) {
  Decoder(fetch_offset, options, out).run(records);
}

void encode_record_batch(std::span<const ProducerRecord> records, const BatchOptions& options, Bytes& out) {
  if (records.empty()) throw ProtocolError("cannot encode an empty record batch");
  if (records.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw ProtocolError("too many records for one batch");
  const std::int64_t now = now_ms();
  const std::int64_t base_ts = records.front().timestamp == -1 ? now : records.front().timestamp;
  std::int64_t max_ts = base_ts;
  for (const auto& r : records) max_ts = std::max(max_ts, r.timestamp == -1 ? now : r.timestamp);

  const std::size_t start = out.size();
  Writer w(out);
  w.i64(options.base_offset);
  w.i32(0);  // batch length, patched below
  w.i32(options.partition_leader_epoch);
  w.i8(2);
  w.u32(0);  // CRC, patched below
  int attributes = static_cast<int>(options.compression) & kAttrCompressionMask;
  if (options.transactional) attributes |= kAttrTransactional;
  w.i16(static_cast<std::int16_t>(attributes));
  w.i32(static_cast<std::int32_t>(records.size() - 1));
  w.i64(base_ts);
  w.i64(max_ts);
  w.i64(options.producer_id);
  w.i16(options.producer_epoch);
  w.i32(options.base_sequence);
  w.i32(static_cast<std::int32_t>(records.size()));
  if (options.compression == Compression::none) {
    write_records(w, records, now, base_ts);
  } else {
    thread_local Bytes plain;
    thread_local Bytes packed;
    plain.clear();
    Writer pw(plain);
    write_records(pw, records, now, base_ts);
    compress(options.compression, ByteSpan(plain), packed);
    w.raw(ByteSpan(packed));
  }
  const std::size_t batch_length = out.size() - start - kLogOverhead;
  if (batch_length > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw ProtocolError("record batch too large");
  w.patch_i32(start + 8, static_cast<std::int32_t>(batch_length));
  w.patch_u32(start + kCrcOffset, crc32c(ByteSpan(out).subspan(start + kAttributesOffset)));
}

void encode_legacy_message(Bytes& out, std::int64_t offset, std::int8_t magic, std::int8_t attributes,
                           std::int64_t timestamp, const std::optional<Bytes>& key, const std::optional<Bytes>& value) {
  if (magic != 0 && magic != 1) throw ProtocolError("legacy messages have magic 0 or 1, not " + std::to_string(magic));
  const std::size_t start = out.size();
  Writer w(out);
  w.i64(offset);
  w.i32(0);  // size, patched below
  w.u32(0);  // crc, patched below
  w.i8(magic);
  w.i8(attributes);
  if (magic == 1) w.i64(timestamp);
  w.nullable_bytes(key ? std::optional<ByteSpan>(ByteSpan(*key)) : std::nullopt, false);
  w.nullable_bytes(value ? std::optional<ByteSpan>(ByteSpan(*value)) : std::nullopt, false);
  w.patch_i32(start + 8, static_cast<std::int32_t>(out.size() - start - kLogOverhead));
  w.patch_u32(start + 12, crc32_ieee(ByteSpan(out).subspan(start + 16)));
}

}  // namespace kwire::protocol
