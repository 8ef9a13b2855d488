// Encoding of magic-2 record batches and legacy messages (decoding is in
// record_batch.cpp).
#include "kwire/protocol/record_batch.hpp"

#include <chrono>
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
  w.patch_i32(start + layout::kLength, static_cast<std::int32_t>(batch_length));
  w.patch_u32(start + layout::kBatchCrc, crc32c(ByteSpan(out).subspan(start + layout::kBatchAttributes)));
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
