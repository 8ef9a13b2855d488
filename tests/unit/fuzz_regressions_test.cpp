// Inputs found by the fuzz targets in fuzz/ (minimized), and the bounds the
// decoders promise on hostile input: each must be rejected with the decoder's
// own error type, never with undefined behaviour or an oversized allocation.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>

#include "kwire/protocol/log_inspect.hpp"
#include "kwire/protocol/messages.hpp"
#include "kwire/protocol/record_batch.hpp"

using namespace kwire::protocol;

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

DecodeOptions no_crc() {
  DecodeOptions o;
  o.check_crcs = false;
  o.max_decompressed_bytes = 1u << 20;
  return o;
}

CorruptionKind corruption_of(const Bytes& records, const DecodeOptions& opts = no_crc()) {
  DecodedRecords out;
  try {
    decode_records(records, 0, opts, out);
  } catch (const CorruptRecordError& e) {
    return e.kind();
  }
  ADD_FAILURE() << "decoded without error";
  return CorruptionKind::bad_length;
}

}  // namespace

// fuzz_record_batch: a magic-2 batch whose base offset plus last offset delta
// leaves int64 (base 0x7fffffffffffffd8, delta 0x20000000). Computing the last
// offset overflowed.
TEST(FuzzRegressions, BatchLastOffsetOverflowIsCorrupt) {
  const Bytes records = {
      0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xd8,  // base offset
      0x00, 0x00, 0x00, 0x31,                          // batch length 49
      0x00, 0x00, 0x00, 0x00,                          // partition leader epoch
      0x02,                                            // magic
      0x00, 0x00, 0x00, 0x00,                          // crc (not checked)
      0x00, 0x20,                                      // attributes: control
      0x20, 0x00, 0x00, 0x00,                          // last offset delta
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // base timestamp
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // max timestamp
      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  // producer id
      0xff, 0xff,                                      // producer epoch
      0xff, 0xff, 0xff, 0xff,                          // base sequence
      0x00, 0x00, 0x00, 0x00,                          // record count
  };
  EXPECT_EQ(corruption_of(records), CorruptionKind::bad_length);
  // inspect_log reports it instead of throwing.
  const InspectResult r = inspect_log(records);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_NE(r.error->find("overflows"), std::string::npos);
}

namespace {

// A magic-2 batch header (CRC not filled in) followed by `body`.
Bytes v2_batch(std::int64_t base_offset, std::int32_t last_offset_delta, std::int64_t base_timestamp,
               std::int32_t count, const Bytes& body) {
  Bytes out;
  Writer w(out);
  w.i64(base_offset);
  w.i32(static_cast<std::int32_t>(49 + body.size()));
  w.i32(0);
  w.i8(2);
  w.u32(0);
  w.i16(0);
  w.i32(last_offset_delta);
  w.i64(base_timestamp);
  w.i64(base_timestamp);
  w.i64(-1);
  w.i16(-1);
  w.i32(-1);
  w.i32(count);
  w.raw(ByteSpan(body));
  return out;
}

// One record: attributes 0, the given timestamp and offset deltas (zig-zag
// varints of at most one byte here), null key and value, no headers.
Bytes one_record(std::uint8_t zigzag_timestamp_delta, std::uint8_t zigzag_offset_delta) {
  return {0x0c, 0x00, zigzag_timestamp_delta, zigzag_offset_delta, 0x01, 0x01, 0x00};
}

}  // namespace

// The same overflow one level down: a record's offset delta past the largest offset.
TEST(FuzzRegressions, RecordOffsetDeltaOverflowIsCorrupt) {
  const Bytes records = v2_batch(kMax, 0, 0, 1, one_record(0x00, 0x02));  // offset delta +1
  EXPECT_EQ(corruption_of(records), CorruptionKind::malformed_record);
}

// A batch ending at the largest offset decodes; next_offset stays there
// instead of overflowing.
TEST(FuzzRegressions, BatchEndingAtLargestOffset) {
  const Bytes records = v2_batch(kMax, 0, 0, 1, one_record(0x00, 0x00));
  DecodedRecords out;
  decode_records(records, 0, no_crc(), out);
  ASSERT_EQ(out.records.size(), 1u);
  EXPECT_EQ(out.records[0].offset, kMax);
  EXPECT_EQ(out.next_offset, kMax);
}

// Timestamps wrap as in Kafka's Java client rather than overflowing.
TEST(FuzzRegressions, TimestampDeltaWraps) {
  const Bytes records = v2_batch(0, 0, kMax, 1, one_record(0x02, 0x00));  // timestamp delta +1
  DecodedRecords out;
  decode_records(records, 0, no_crc(), out);
  ASSERT_EQ(out.records.size(), 1u);
  EXPECT_EQ(out.records[0].timestamp, std::numeric_limits<std::int64_t>::min());
}

namespace {

Bytes magic1_wrapper(std::int64_t wrapper_offset, const Bytes& inner_set, Compression codec = Compression::gzip) {
  Bytes packed;
  compress(codec, ByteSpan(inner_set), packed);
  Bytes out;
  encode_legacy_message(out, wrapper_offset, 1, static_cast<std::int8_t>(codec), 1000, std::nullopt, packed);
  return out;
}

}  // namespace

// A magic-1 wrapper's relative inner offsets: the largest offset minus a
// negative last inner offset overflowed.
TEST(FuzzRegressions, LegacyRelativeOffsetOverflowIsCorrupt) {
  Bytes inner;
  encode_legacy_message(inner, -1, 1, 0, 1000, std::nullopt, Bytes{'v'});
  EXPECT_EQ(corruption_of(magic1_wrapper(kMax, inner)), CorruptionKind::malformed_record);
}

// Depth limit: a compressed wrapper inside a compressed wrapper is rejected
// rather than unpacked recursively (Kafka never writes one).
TEST(FuzzRegressions, NestedCompressedWrapperRejected) {
  Bytes innermost;
  encode_legacy_message(innermost, 0, 1, 0, 1000, std::nullopt, Bytes{'v'});
  Bytes nested = magic1_wrapper(0, innermost);
  for (int depth = 0; depth < 3; ++depth) nested = magic1_wrapper(0, nested);
  DecodedRecords out;
  try {
    decode_records(nested, 0, no_crc(), out);
    FAIL() << "nested wrapper accepted";
  } catch (const CorruptRecordError& e) {
    EXPECT_EQ(e.kind(), CorruptionKind::malformed_record);
    EXPECT_NE(std::string(e.what()).find("itself compressed"), std::string::npos);
  }
  EXPECT_TRUE(out.records.empty());
  EXPECT_TRUE(inspect_log(nested).error.has_value());
}

// An array count is checked against the bytes left (one per element), but an
// element takes far more memory than one byte: the decoder must not allocate
// `count` elements before they decode. Here 1000 brokers are announced and
// the first one is already malformed (a null host).
TEST(FuzzRegressions, ArrayCountDoesNotPreallocate) {
  Bytes body;
  Writer w(body);
  w.i32(1000);  // brokers
  for (int i = 0; i < 1000; ++i) w.i8(-1);
  MetadataResponse m;
  Reader r{ByteSpan(body)};
  decode(r, m, 0);
  EXPECT_FALSE(r.ok());
  EXPECT_LE(m.brokers.capacity(), 16u);
}
