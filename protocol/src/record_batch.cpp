#include "kwire/protocol/record_batch.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>

#include "batch_layout.hpp"
#include "kwire/protocol/crc32c.hpp"

namespace kwire::protocol {
namespace {

using layout::kAttrCompressionMask;
using layout::kAttrTransactional;

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

// Key and value of a legacy message; the rest comes from its header.
struct LegacyMessage {
  std::optional<ByteSpan> key;
  std::optional<ByteSpan> value;
};

}  // namespace

class RecordsDecoder::Decoder {
 public:
  Decoder(ByteSpan data, std::int64_t fetch_offset, DecodeOptions options)
      : walker_(data),
        fetch_offset_(fetch_offset),
        next_offset_(fetch_offset),
        opt_(std::move(options)),
        aborts_(opt_.read_committed ? opt_.aborted_transactions : std::vector<AbortedTransaction>{}) {}

  bool done() const noexcept { return done_; }

  // Decodes entries into `out` until it holds at least `min_records` records
  // or the entries are used up.
  void run(DecodedRecords& out, std::size_t min_records) {
    out_ = &out;
    out.next_offset = next_offset_;
    out.truncated_tail = false;
    out.truncated_batch_size = 0;
    try {
      while (!done_ && out.records.size() < min_records) step();
    } catch (...) {
      done_ = true;  // a corrupt entry ends decoding; what came before stays in `out`
      throw;
    }
  }

 private:
  void step() {
    switch (walker_.next()) {
      case BatchWalker::Step::entry: {
        const BatchEntry& entry = walker_.entry();
        if (entry.header.magic == 2) batch_v2(entry);
        else legacy_entry(entry);
        return;
      }
      case BatchWalker::Step::end: done_ = true; return;
      case BatchWalker::Step::partial_tail:
        // A partial batch, which brokers may send at the end of a response.
        done_ = true;
        out_->truncated_tail = true;
        out_->truncated_batch_size = walker_.partial_size();
        return;
      case BatchWalker::Step::malformed: {
        const BatchHeaderError& e = walker_.error();
        corrupt(e.base_offset, e.kind, e.what);
      }
    }
  }

 private:
  // ------------------------------------------------------------ magic 2

  void batch_v2(const BatchEntry& entry) {
    const BatchHeader& h = entry.header;
    const std::int64_t base_offset = h.base_offset;
    if (opt_.check_crcs) {
      const std::uint32_t computed = entry.computed_crc();
      if (h.crc != computed)
        corrupt(base_offset, CorruptionKind::crc_mismatch,
                "CRC-32C mismatch: stored " + hex32(h.crc) + ", computed " + hex32(computed));
    }
    const int attributes = h.attributes;
    const std::int64_t base_timestamp = h.base_timestamp;
    const std::int64_t max_timestamp = h.max_timestamp;
    const std::int64_t producer_id = h.producer_id;
    const std::int16_t producer_epoch = h.producer_epoch;
    const std::int32_t leader_epoch = h.partition_leader_epoch;
    const std::int32_t count = h.records_count;
    const std::int64_t last_offset = h.last_offset();  // checked by the walker
    const bool control = h.is_control();
    const bool transactional = h.is_transactional();
    const bool log_append_time = h.timestamp_type() == kTimestampLogAppendTime;

    const auto codec = compression_from_attributes(attributes);
    if (!codec)
      corrupt(base_offset, CorruptionKind::bad_compression,
              "unknown compression codec " + std::to_string(attributes & kAttrCompressionMask));
    if (count < 0)
      corrupt(base_offset, CorruptionKind::malformed_record, "negative record count " + std::to_string(count));

    const ByteSpan body = entry.body();
    Bytes* buffer = nullptr;
    ByteSpan decompressed;
    auto records_region = [&]() -> ByteSpan {
      if (*codec == Compression::none || (count == 0 && body.empty())) return body;
      if (!buffer) {
        buffer = &acquire_buffer();
        decompressed = decompress_into(*codec, body, *buffer, base_offset);
      }
      return decompressed;
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
    Rollback rollback(out_->records);
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
        rec = &out_->records.emplace_back();
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
    if (buffer) ++out_->buffers_in_use;
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
    Reader kr(*key);
    (void)kr.i16();        // version
    return kr.i16() == 0;  // type
  }

  // ------------------------------------------------------- magic 0 and 1

  // Checks a legacy message's CRC and reads its key and value. `offset` names
  // the top-level entry in errors (the wrapper, for an inner message).
  LegacyMessage read_legacy(const BatchEntry& entry, std::int64_t offset, const char* where) {
    if (opt_.check_crcs) {
      const std::uint32_t computed = entry.computed_crc();
      if (entry.header.crc != computed)
        corrupt(offset, CorruptionKind::crc_mismatch,
                std::string(where) + " CRC-32 mismatch: stored " + hex32(entry.header.crc) + ", computed " +
                    hex32(computed));
    }
    Reader r(entry.body());
    LegacyMessage m;
    m.key = r.nullable_bytes_view(false);
    m.value = r.nullable_bytes_view(false);
    if (!r.ok()) corrupt(offset, CorruptionKind::malformed_record, std::string(where) + " is malformed: " + r.error());
    if (!r.empty())
      corrupt(offset, CorruptionKind::malformed_record,
              std::string(where) + " has " + std::to_string(r.remaining()) + " unread bytes");
    return m;
  }

  static void set_legacy_time(RecordView& rec, const BatchHeader& h) {
    rec.timestamp = h.base_timestamp;  // -1 for magic 0
    rec.timestamp_type = h.timestamp_type();
  }

  void legacy_entry(const BatchEntry& entry) {
    const BatchHeader& h = entry.header;
    const std::int64_t offset = h.base_offset;
    const LegacyMessage m = read_legacy(entry, offset, "message");
    const auto codec = h.compression();
    if (!codec)
      corrupt(offset, CorruptionKind::bad_compression,
              "unknown compression codec " + std::to_string(h.attributes & kAttrCompressionMask));
    if (*codec == Compression::none) {
      if (offset >= fetch_offset_) {
        auto& rec = out_->records.emplace_back();
        rec.offset = offset;
        set_legacy_time(rec, h);
        rec.key = m.key;
        rec.value = m.value;
      }
      finish_batch(offset);
      return;
    }

    // A wrapper message: its value is a compressed inner message set.
    if (!m.value) corrupt(offset, CorruptionKind::malformed_record, "compressed message has a null value");
    Bytes& buffer = acquire_buffer();
    const ByteSpan decompressed = decompress_into(*codec, *m.value, buffer, offset, h.magic == 0);
    Rollback rollback(out_->records);
    const bool wrapper_log_append = h.timestamp_type() == kTimestampLogAppendTime;
    BatchWalker inner_set{decompressed};
    for (bool more = true; more;) {
      switch (inner_set.next()) {
        case BatchWalker::Step::entry: {
          const BatchEntry& ie = inner_set.entry();
          if (!ie.header.is_legacy())
            corrupt(offset, CorruptionKind::bad_magic,
                    "inner message has magic byte " + std::to_string(ie.header.magic));
          const LegacyMessage inner = read_legacy(ie, offset, "inner message");
          if (ie.header.compression() != Compression::none)
            corrupt(offset, CorruptionKind::malformed_record, "inner message is itself compressed");
          auto& rec = out_->records.emplace_back();
          rec.offset = ie.header.base_offset;
          set_legacy_time(rec, ie.header);
          if (wrapper_log_append) {
            rec.timestamp = h.base_timestamp;
            rec.timestamp_type = kTimestampLogAppendTime;
          }
          rec.key = inner.key;
          rec.value = inner.value;
          break;
        }
        case BatchWalker::Step::end: more = false; break;
        case BatchWalker::Step::partial_tail:
          corrupt(offset, CorruptionKind::malformed_record,
                  "truncated inner message at byte " + std::to_string(inner_set.position()));
        case BatchWalker::Step::malformed: {
          const BatchHeaderError& e = inner_set.error();
          corrupt(offset, e.kind == CorruptionKind::bad_magic ? e.kind : CorruptionKind::malformed_record,
                  "inner message at byte " + std::to_string(e.position) + ": " + e.what);
        }
      }
    }
    const std::size_t first = rollback.mark();
    if (out_->records.size() == first)
      corrupt(offset, CorruptionKind::malformed_record, "compressed message holds no inner messages");
    if (h.magic >= 1) {
      // Inner offsets are relative; the wrapper carries the last one's offset.
      std::int64_t base = 0;
      bool fits = !__builtin_sub_overflow(offset, out_->records.back().offset, &base);
      for (std::size_t i = first; fits && i < out_->records.size(); ++i)
        fits = offset_sum(out_->records[i].offset, base, out_->records[i].offset);
      if (!fits) corrupt(offset, CorruptionKind::malformed_record, "inner message offsets overflow the offset range");
    }
    const auto drop = std::remove_if(out_->records.begin() + static_cast<std::ptrdiff_t>(first), out_->records.end(),
                                     [&](const RecordView& rec) { return rec.offset < fetch_offset_; });
    out_->records.erase(drop, out_->records.end());
    rollback.dismiss();
    ++out_->buffers_in_use;
    finish_batch(offset);
  }

  // ------------------------------------------------------------ helpers

  void finish_batch(std::int64_t last_offset) {
    ++out_->batches;
    // Never move backwards (a batch wholly below the fetch offset, e.g. the
    // start of a compressed legacy set, still ends at or after it).
    // (An entry ending at the largest offset leaves next_offset there.)
    const std::int64_t next = last_offset == std::numeric_limits<std::int64_t>::max() ? last_offset : last_offset + 1;
    next_offset_ = std::max(next_offset_, next);
    out_->next_offset = next_offset_;
  }

  // Room for a batch's records in one step, growing geometrically so that a
  // fetch of many batches reallocates O(log n) times. The count has only been
  // checked against the bytes it needs (7 per record), so the step is capped.
  void reserve_records(std::size_t count) {
    constexpr std::size_t kMaxReserveStep = std::size_t{1} << 16;
    auto& recs = out_->records;
    const std::size_t want = recs.size() + std::min(count, kMaxReserveStep);
    if (want > recs.capacity()) recs.reserve(std::max(want, 2 * recs.capacity()));
  }

  Bytes& acquire_buffer() {
    if (out_->buffers_in_use < out_->buffers.size()) return out_->buffers[out_->buffers_in_use];
    return out_->buffers.emplace_back();
  }

  // The buffer is scratch space kept with DecodedRecords: only the returned
  // span of it holds this batch's records.
  ByteSpan decompress_into(Compression codec, ByteSpan in, Bytes& buffer, std::int64_t base_offset,
                           bool legacy_lz4_header = false) {
    try {
      if (codec == Compression::lz4 && legacy_lz4_header) {
        decompress_lz4_legacy_header(in, buffer, opt_.max_decompressed_bytes);
        return ByteSpan(buffer);
      }
      const std::size_t n = decompress_reusing(codec, in, buffer, opt_.max_decompressed_bytes);
      return ByteSpan(buffer.data(), n);
    } catch (const CompressionError& e) {
      corrupt(base_offset, e.limit_exceeded() ? CorruptionKind::too_large : CorruptionKind::bad_compression, e.what());
    }
  }

  BatchWalker walker_;
  std::int64_t fetch_offset_;
  std::int64_t next_offset_;  // after the last complete entry decoded so far
  bool done_ = false;
  DecodeOptions opt_;
  AbortTracker aborts_;
  DecodedRecords* out_ = nullptr;
};

namespace {

std::string corrupt_prefix(std::int64_t base_offset) {
  return "corrupt record batch at base offset " + std::to_string(base_offset);
}

// The detail without a leading "corrupt record batch at base offset N: " for
// the same N (an error re-wrapped through its what()).
std::string own_detail(std::int64_t base_offset, std::string detail) {
  const std::string prefix = corrupt_prefix(base_offset) + ": ";
  if (detail.starts_with(prefix)) detail.erase(0, prefix.size());
  return detail;
}

std::string corrupt_message(std::int64_t base_offset, const std::string& detail, const std::string& where) {
  std::string out = corrupt_prefix(base_offset);
  if (!where.empty()) out += " in " + where;
  out += ": ";
  out += detail;
  return out;
}

}  // namespace

CorruptRecordError::CorruptRecordError(std::int64_t base_offset, CorruptionKind kind, std::string detail,
                                       std::string where)
    : CorruptRecordError(
          base_offset, kind,
          std::make_shared<const Text>(Text{own_detail(base_offset, std::move(detail)), std::move(where)})) {}

CorruptRecordError::CorruptRecordError(std::int64_t base_offset, CorruptionKind kind, std::shared_ptr<const Text> text)
    : ProtocolError(corrupt_message(base_offset, text->detail, text->where)),
      base_offset_(base_offset),
      kind_(kind),
      text_(std::move(text)) {}

void DecodedRecords::clear() {
  records.clear();
  next_offset = 0;
  truncated_tail = false;
  truncated_batch_size = 0;
  batches = 0;
  buffers_in_use = 0;
}

RecordsDecoder::RecordsDecoder(ByteSpan records, std::int64_t fetch_offset, DecodeOptions options)
    : d_(std::make_unique<Decoder>(records, fetch_offset, std::move(options))) {}
RecordsDecoder::~RecordsDecoder() = default;
RecordsDecoder::RecordsDecoder(RecordsDecoder&&) noexcept = default;
RecordsDecoder& RecordsDecoder::operator=(RecordsDecoder&&) noexcept = default;

bool RecordsDecoder::done() const noexcept { return d_->done(); }

void RecordsDecoder::decode(DecodedRecords& out, std::size_t min_records) { d_->run(out, min_records); }

void decode_records(ByteSpan records, std::int64_t fetch_offset, const DecodeOptions& options, DecodedRecords& out) {
  RecordsDecoder(records, fetch_offset, options).decode(out, std::numeric_limits<std::size_t>::max());
}

}  // namespace kwire::protocol
