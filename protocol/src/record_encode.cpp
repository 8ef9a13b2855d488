// Encoding of magic-2 record batches and legacy messages (decoding is in
// record_batch.cpp).
#include "kwire/protocol/record_batch.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <limits>

#include "batch_layout.hpp"
#include "kwire/protocol/crc32c.hpp"

namespace kwire::protocol {

using layout::kAttrCompressionMask;
using layout::kAttrTransactional;

namespace {

// ------------------------------------------------------------------ encode

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// As varint_size(), inline: it runs a few times for every record.
inline std::size_t zigzag_size(std::int64_t v) noexcept {
  const auto u = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  return static_cast<std::size_t>(64 - std::countl_zero(u | 1) + 6) / 7;
}

inline std::uint8_t* put_uvarint(std::uint8_t* p, std::uint64_t v) noexcept {
  while (v >= 0x80) {
    *p++ = static_cast<std::uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<std::uint8_t>(v);
  return p;
}
inline std::uint8_t* put_varint(std::uint8_t* p, std::int64_t v) noexcept {
  return put_uvarint(p, (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
}
inline std::uint8_t* put_bytes(std::uint8_t* p, const std::optional<ByteSpan>& b) noexcept {
  if (!b) return put_varint(p, -1);
  p = put_varint(p, static_cast<std::int64_t>(b->size()));
  if (!b->empty()) std::memcpy(p, b->data(), b->size());
  return p + b->size();
}
inline std::size_t bytes_size(const std::optional<ByteSpan>& b) noexcept {
  return b ? zigzag_size(static_cast<std::int64_t>(b->size())) + b->size() : 1;
}
inline std::optional<ByteSpan> span_of(const std::optional<Bytes>& b) noexcept {
  return b ? std::optional<ByteSpan>(ByteSpan(*b)) : std::nullopt;
}

// The body of a record (after its length): attributes, timestamp and offset
// deltas, key, value, headers.
std::size_t body_size(std::int64_t ts_delta, std::int32_t offset_delta, const std::optional<ByteSpan>& key,
                      const std::optional<ByteSpan>& value, std::span<const RecordHeader> headers) noexcept {
  std::size_t n = 1 + zigzag_size(ts_delta) + zigzag_size(offset_delta) + bytes_size(key) + bytes_size(value) +
                  zigzag_size(static_cast<std::int64_t>(headers.size()));
  for (const auto& h : headers)
    n += zigzag_size(static_cast<std::int64_t>(h.key.size())) + h.key.size() + bytes_size(span_of(h.value));
  return n;
}

void put_be16(std::uint8_t* p, std::uint16_t v) noexcept {
  p[0] = std::uint8_t(v >> 8);
  p[1] = std::uint8_t(v);
}
void put_be32(std::uint8_t* p, std::uint32_t v) noexcept {
  p[0] = std::uint8_t(v >> 24);
  p[1] = std::uint8_t(v >> 16);
  p[2] = std::uint8_t(v >> 8);
  p[3] = std::uint8_t(v);
}
void put_be64(std::uint8_t* p, std::uint64_t v) noexcept {
  put_be32(p, static_cast<std::uint32_t>(v >> 32));
  put_be32(p + 4, static_cast<std::uint32_t>(v));
}

// Records checksummed while appending are folded in once this many bytes
// wait (still in the L1 cache, and long enough for the three-stream loop).
constexpr std::size_t kChecksumStep = 16 * 1024;

// Fills a batch header in (every field but the CRC) for `count` records in
// `length` bytes (the header's 61 included), then the CRC: over the whole
// batch, or over the header's part combined with `records_crc` (the CRC of
// the records, when known).
void write_header(std::uint8_t* b, std::size_t length, const BatchOptions& o, int attributes, std::int32_t count,
                  std::int64_t base_ts, std::int64_t max_ts, const std::uint32_t* records_crc = nullptr) {
  put_be64(b + layout::kOffset, static_cast<std::uint64_t>(o.base_offset));
  put_be32(b + layout::kLength, static_cast<std::uint32_t>(length - kLogOverhead));
  put_be32(b + layout::kPartitionLeaderEpoch, static_cast<std::uint32_t>(o.partition_leader_epoch));
  b[layout::kMagic] = 2;
  put_be16(b + layout::kBatchAttributes, static_cast<std::uint16_t>(attributes));
  put_be32(b + layout::kLastOffsetDelta, static_cast<std::uint32_t>(count - 1));
  put_be64(b + layout::kBaseTimestamp, static_cast<std::uint64_t>(base_ts));
  put_be64(b + layout::kMaxTimestamp, static_cast<std::uint64_t>(max_ts));
  put_be64(b + layout::kProducerId, static_cast<std::uint64_t>(o.producer_id));
  put_be16(b + layout::kProducerEpoch, static_cast<std::uint16_t>(o.producer_epoch));
  put_be32(b + layout::kBaseSequence, static_cast<std::uint32_t>(o.base_sequence));
  put_be32(b + layout::kRecordsCount, static_cast<std::uint32_t>(count));
  if (records_crc) {
    const std::uint32_t header =
        crc32c(ByteSpan(b + layout::kBatchAttributes, kRecordBatchHeaderSize - layout::kBatchAttributes));
    put_be32(b + layout::kBatchCrc, crc32c_combine(header, *records_crc, length - kRecordBatchHeaderSize));
    return;
  }
  put_be32(b + layout::kBatchCrc, crc32c(ByteSpan(b + layout::kBatchAttributes, length - layout::kBatchAttributes)));
}

}  // namespace

void RecordBatchBuilder::clear() noexcept {
  // A finished batch still held elsewhere (finished_owner()) keeps its
  // buffer; this builder takes a new one.
  if (buf_.use_count() > 1) {
    buf_.reset();
    cap_ = 0;
  }
  if (out_.use_count() > 1) out_.reset();
  records_crc_ = 0;
  crc_end_ = kRecordBatchHeaderSize;
  size_ = 0;
  count_ = 0;
  base_ts_ = -1;
  max_ts_ = -1;
}

void RecordBatchBuilder::grow(std::size_t need) {
  if (need <= cap_) return;
  std::size_t cap = std::max<std::size_t>({need, cap_ * 2, 256});
  std::shared_ptr<std::uint8_t[]> next(new std::uint8_t[cap]);  // not zeroed: written before read
  if (size_) std::memcpy(next.get(), buf_.get(), size_);
  buf_ = std::move(next);
  cap_ = cap;
}

void RecordBatchBuilder::reserve(std::size_t bytes) { grow(std::max(bytes, kRecordBatchHeaderSize)); }

std::size_t RecordBatchBuilder::record_size(std::int64_t timestamp, const std::optional<ByteSpan>& key,
                                            const std::optional<ByteSpan>& value,
                                            std::span<const RecordHeader> headers) const noexcept {
  const std::int64_t ts_delta = count_ == 0 ? 0 : timestamp - base_ts_;
  const std::size_t body = body_size(ts_delta, count_, key, value, headers);
  return zigzag_size(static_cast<std::int64_t>(body)) + body;
}

std::size_t RecordBatchBuilder::first_record_size(const std::optional<ByteSpan>& key,
                                                  const std::optional<ByteSpan>& value,
                                                  std::span<const RecordHeader> headers) noexcept {
  const std::size_t body = body_size(0, 0, key, value, headers);
  return zigzag_size(static_cast<std::int64_t>(body)) + body;
}

std::int64_t RecordBatchBuilder::append(std::int64_t timestamp, const std::optional<ByteSpan>& key,
                                        const std::optional<ByteSpan>& value, std::span<const RecordHeader> headers) {
  return *append_within(std::numeric_limits<std::size_t>::max(), timestamp, key, value, headers);
}

std::optional<std::int64_t> RecordBatchBuilder::append_within(std::size_t limit, std::int64_t timestamp,
                                                              const std::optional<ByteSpan>& key,
                                                              const std::optional<ByteSpan>& value,
                                                              std::span<const RecordHeader> headers) {
  if (count_ == std::numeric_limits<std::int32_t>::max()) throw ProtocolError("too many records for one batch");
  if (timestamp == -1) timestamp = now_ms();
  const std::int64_t ts_delta = count_ == 0 ? 0 : timestamp - base_ts_;
  const std::size_t body = body_size(ts_delta, count_, key, value, headers);
  const std::size_t record = zigzag_size(static_cast<std::int64_t>(body)) + body;
  if ((count_ == 0 ? std::max(size_, kRecordBatchHeaderSize) : size_) + record > limit) return std::nullopt;
  if (count_ == 0) {
    if (size_ < kRecordBatchHeaderSize) {
      grow(kRecordBatchHeaderSize);
      size_ = kRecordBatchHeaderSize;
    }
    base_ts_ = max_ts_ = timestamp;
  }
  grow(size_ + record);
  std::uint8_t* p = buf_.get() + size_;
  p = put_varint(p, static_cast<std::int64_t>(body));
  *p++ = 0;  // attributes
  p = put_varint(p, ts_delta);
  p = put_varint(p, count_);
  p = put_bytes(p, key);
  p = put_bytes(p, value);
  p = put_varint(p, static_cast<std::int64_t>(headers.size()));
  for (const auto& h : headers) {
    p = put_bytes(p, ByteSpan(reinterpret_cast<const std::uint8_t*>(h.key.data()), h.key.size()));
    p = put_bytes(p, span_of(h.value));
  }
  size_ = static_cast<std::size_t>(p - buf_.get());
  ++count_;
  max_ts_ = std::max(max_ts_, timestamp);
  if (checksum_records_ && size_ - crc_end_ >= kChecksumStep) checksum_appended();
  return timestamp;
}

void RecordBatchBuilder::checksum_appended() noexcept {
  records_crc_ = crc32c(ByteSpan(buf_.get() + crc_end_, size_ - crc_end_), records_crc_);
  crc_end_ = size_;
}

std::span<std::uint8_t> RecordBatchBuilder::finish(const BatchOptions& options) {
  if (count_ == 0) throw ProtocolError("cannot encode an empty record batch");
  int attributes = static_cast<int>(options.compression) & kAttrCompressionMask;
  if (options.transactional) attributes |= kAttrTransactional;
  if (options.compression == Compression::none) {
    if (size_ - kLogOverhead > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
      throw ProtocolError("record batch too large");
    if (checksum_records_) {
      checksum_appended();
      write_header(buf_.get(), size_, options, attributes, count_, base_ts_, max_ts_, &records_crc_);
    } else {
      write_header(buf_.get(), size_, options, attributes, count_, base_ts_, max_ts_);
    }
    finished_compressed_ = false;
    return {buf_.get(), size_};
  }
  // The codecs write into room for their worst case: one scratch buffer for
  // the thread, not one for every builder (a producer keeps many).
  thread_local Bytes packed;
  compress(options.compression, ByteSpan(buf_.get() + kRecordBatchHeaderSize, size_ - kRecordBatchHeaderSize), packed);
  const std::size_t length = kRecordBatchHeaderSize + packed.size();
  if (length - kLogOverhead > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw ProtocolError("record batch too large");
  if (!out_ || out_.use_count() > 1) out_ = std::make_shared<Bytes>();
  Bytes& out = *out_;
  out.resize(length);
  std::memcpy(out.data() + kRecordBatchHeaderSize, packed.data(), packed.size());
  write_header(out.data(), length, options, attributes, count_, base_ts_, max_ts_);
  finished_compressed_ = true;
  return {out.data(), out.size()};
}

void set_batch_producer_state(std::span<std::uint8_t> batch, std::int64_t producer_id, std::int16_t producer_epoch,
                              std::int32_t base_sequence, bool transactional) {
  if (batch.size() < kRecordBatchHeaderSize || batch[layout::kMagic] != 2 ||
      load_be32(batch.data() + layout::kLength) + kLogOverhead != batch.size())
    throw ProtocolError("not one whole magic-2 record batch");
  std::uint8_t* b = batch.data();
  int attributes = load_be16(b + layout::kBatchAttributes);
  attributes = transactional ? (attributes | kAttrTransactional) : (attributes & ~kAttrTransactional);
  put_be16(b + layout::kBatchAttributes, static_cast<std::uint16_t>(attributes));
  put_be64(b + layout::kProducerId, static_cast<std::uint64_t>(producer_id));
  put_be16(b + layout::kProducerEpoch, static_cast<std::uint16_t>(producer_epoch));
  put_be32(b + layout::kBaseSequence, static_cast<std::uint32_t>(base_sequence));
  put_be32(b + layout::kBatchCrc,
           crc32c(ByteSpan(b + layout::kBatchAttributes, batch.size() - layout::kBatchAttributes)));
}

void encode_record_batch(std::span<const ProducerRecord> records, const BatchOptions& options, Bytes& out) {
  if (records.empty()) throw ProtocolError("cannot encode an empty record batch");
  if (records.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw ProtocolError("too many records for one batch");
  thread_local RecordBatchBuilder builder;
  builder.clear();
  // Records without a timestamp get the same "now" (the batch's base timestamp).
  const std::int64_t now = now_ms();
  for (const auto& r : records)
    builder.append(r.timestamp == -1 ? now : r.timestamp, span_of(r.key), span_of(r.value), r.headers);
  const auto batch = builder.finish(options);
  out.insert(out.end(), batch.begin(), batch.end());
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
  w.patch_i32(start + layout::kLength, static_cast<std::int32_t>(out.size() - start - kLogOverhead));
  w.patch_u32(start + layout::kMessageCrc, crc32_ieee(ByteSpan(out).subspan(start + layout::kMagic)));
}

}  // namespace kwire::protocol
