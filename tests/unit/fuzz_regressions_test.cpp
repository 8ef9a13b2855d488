// Inputs found by the fuzz targets in fuzz/ (minimized), and the bounds the
// decoders promise on hostile input: each must be rejected with the decoder's
// own error type, never with undefined behaviour or an oversized allocation.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <new>
#include <optional>

#include "kwire/protocol/log_inspect.hpp"
#include "kwire/protocol/messages.hpp"
#include "kwire/protocol/record_batch.hpp"
#include "kwire/source/value_format.hpp"

using namespace kwire::protocol;

// The largest single allocation made while a LargestAllocation is alive.
namespace {
std::atomic<bool> g_tracking{false};
std::atomic<std::size_t> g_largest{0};
}  // namespace

void* operator new(std::size_t n) {
  if (g_tracking.load(std::memory_order_relaxed)) {
    std::size_t seen = g_largest.load(std::memory_order_relaxed);
    while (n > seen && !g_largest.compare_exchange_weak(seen, n)) {
    }
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// GCC cannot tell that these pair with the operator new above.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace {

struct LargestAllocation {
  LargestAllocation() {
    g_largest = 0;
    g_tracking = true;
  }
  ~LargestAllocation() { g_tracking = false; }
  std::size_t bytes() const { return g_largest.load(); }
};

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
  LargestAllocation largest;
  decode(r, m, 0);
  EXPECT_FALSE(r.ok());
  EXPECT_LE(m.brokers.capacity(), 16u);
  EXPECT_LT(largest.bytes(), 16 * sizeof(MetadataResponse::MetadataResponseBroker) + 1);
}

// Same for a record's header count, checked only against the record's bytes
// (two per header): 100000 headers announced, the first one malformed.
TEST(FuzzRegressions, RecordHeaderCountDoesNotPreallocate) {
  Bytes record;
  {
    Writer w(record);
    w.i8(0);           // attributes
    w.varlong(0);      // timestamp delta
    w.varint(0);       // offset delta
    w.varint(-1);      // null key
    w.varint(-1);      // null value
    w.varint(100000);  // header count
    w.varint(-5);      // first header key length: invalid
    for (int i = 0; i < 200000; ++i) w.i8(0);
  }
  Bytes body;
  Writer(body).varint(static_cast<std::int32_t>(record.size()));
  body.insert(body.end(), record.begin(), record.end());
  const Bytes records = v2_batch(0, 0, 0, 1, body);
  DecodedRecords out;
  out.records.reserve(4);
  LargestAllocation largest;
  EXPECT_THROW(decode_records(records, 0, no_crc(), out), CorruptRecordError);
  EXPECT_LT(largest.bytes(), 64u * 1024);
}

// fuzz_decompress: an LZ4 frame header announcing a content size, cut short.
// Its failure left the per-thread LZ4 context unusable: the next, valid frame
// failed with "frameSize_wrong" (so one corrupt batch made later good ones fail).
TEST(FuzzRegressions, Lz4ContextUsableAfterTruncatedFrame) {
  const Bytes truncated = {0x04, 0x22, 0x4d, 0x18, 0x68, 0x40, 0x82, 0x82, 0x00, 0x00, 0x00, 0xf6, 0x0c, 0x7b, 0x23};
  const Bytes text = {'h', 'e', 'l', 'l', 'o', ' ', 'h', 'e', 'l', 'l', 'o'};
  Bytes packed;
  compress(Compression::lz4, ByteSpan(text), packed);
  for (int round = 0; round < 2; ++round) {
    Bytes out;
    EXPECT_THROW(decompress(Compression::lz4, ByteSpan(truncated), out, 1u << 20), CompressionError);
    EXPECT_THROW(decompress_lz4_legacy_header(ByteSpan(truncated), out, 1u << 20), CompressionError);
    ASSERT_NO_THROW(decompress(Compression::lz4, ByteSpan(packed), out, 1u << 20));
    EXPECT_EQ(out, text);
  }
}

// fuzz_value_format: formatting the smallest int64 timestamp negated it.
TEST(FuzzRegressions, FormatTimestampAtInt64Limits) {
  using kwire::source::format_timestamp_ms;
  EXPECT_EQ(format_timestamp_ms(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_timestamp_ms(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(format_timestamp_ms(-86400000), "1969-12-31T00:00:00.000Z");
  EXPECT_EQ(format_timestamp_ms(std::numeric_limits<std::int64_t>::max()), "292278994-08-17T07:12:55.807Z");
  EXPECT_EQ(format_timestamp_ms(std::numeric_limits<std::int64_t>::min()), "-292275055-05-16T16:47:04.192Z");
}
