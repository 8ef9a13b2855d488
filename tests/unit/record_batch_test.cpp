#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <type_traits>

#include "kwire/protocol/crc32c.hpp"
#include "kwire/protocol/messages/fetch.hpp"
#include "kwire/protocol/record_batch.hpp"

using namespace kwire::protocol;

namespace {

Bytes of(std::string_view s) { return Bytes(s.begin(), s.end()); }
std::string str(const std::optional<ByteSpan>& s) {
  return s ? std::string(reinterpret_cast<const char*>(s->data()), s->size()) : std::string("<null>");
}

const Compression kCodecs[] = {Compression::none, Compression::gzip, Compression::snappy, Compression::lz4,
                               Compression::zstd};

ProducerRecord rec(std::optional<std::string> key, std::optional<std::string> value, std::int64_t ts = 1000,
                   std::vector<RecordHeader> headers = {}) {
  ProducerRecord r;
  if (key) r.key = of(*key);
  if (value) r.value = of(*value);
  r.timestamp = ts;
  r.headers = std::move(headers);
  return r;
}

// Re-computes the CRC-32C of the batch starting at `start` after a test edits it.
void fix_crc(Bytes& b, std::size_t start = 0) {
  const std::size_t len = load_be32(b.data() + start + 8);
  Writer(b).patch_u32(start + 17, crc32c(ByteSpan(b).subspan(start + 21, len - 9)));
}

void set_attributes(Bytes& b, std::size_t start, std::uint16_t attrs) {
  b[start + 21] = static_cast<std::uint8_t>(attrs >> 8);
  b[start + 22] = static_cast<std::uint8_t>(attrs);
  fix_crc(b, start);
}

Bytes batch(std::int64_t base_offset, std::vector<ProducerRecord> records, BatchOptions opt = {}) {
  opt.base_offset = base_offset;
  Bytes out;
  encode_record_batch(records, opt, out);
  return out;
}

// A transaction marker: a control batch holding one record whose key is
// (version 0, type) with type 0 = ABORT, 1 = COMMIT.
Bytes control_batch(std::int64_t offset, std::int64_t producer_id, bool abort) {
  ProducerRecord marker;
  marker.key = Bytes{0, 0, 0, static_cast<std::uint8_t>(abort ? 0 : 1)};
  marker.value = Bytes{0, 0, 0, 0, 0, 0};
  marker.timestamp = 5000;
  BatchOptions opt;
  opt.base_offset = offset;
  opt.producer_id = producer_id;
  opt.producer_epoch = 0;
  opt.transactional = true;
  Bytes out;
  encode_record_batch(std::span<const ProducerRecord>(&marker, 1), opt, out);
  set_attributes(out, 0, 0x10 | 0x20);
  return out;
}

Bytes txn_batch(std::int64_t base_offset, std::int64_t producer_id, int n) {
  std::vector<ProducerRecord> rs;
  for (int i = 0; i < n; ++i) {
    // Built piecewise: GCC 12 at -O3 reports a false -Wrestrict for `"p" + std::string&&`.
    std::string value = "p";
    value += std::to_string(producer_id);
    value += '-';
    value += std::to_string(i);
    rs.push_back(rec(std::nullopt, value));
  }
  BatchOptions opt;
  opt.producer_id = producer_id;
  opt.producer_epoch = 0;
  opt.transactional = true;
  return batch(base_offset, rs, opt);
}

Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

DecodedRecords decode(ByteSpan data, std::int64_t fetch_offset, const DecodeOptions& opt = {}) {
  DecodedRecords out;
  decode_records(data, fetch_offset, opt, out);
  return out;
}

std::vector<std::int64_t> offsets(const DecodedRecords& d) {
  std::vector<std::int64_t> v;
  for (const auto& r : d.records) v.push_back(r.offset);
  return v;
}

// Legacy (magic 0/1) message writer, for feeding the decoder real bytes.
void legacy_message(Bytes& out, std::int64_t offset, std::int8_t magic, std::int8_t attributes, std::int64_t timestamp,
                    const std::optional<Bytes>& key, const std::optional<Bytes>& value) {
  encode_legacy_message(out, offset, magic, attributes, timestamp, key, value);
}

}  // namespace

// ----------------------------------------------------------------- known bytes

// A two-record batch written field by field from the protocol guide, with the
// record bytes spelled out by hand (zig-zag varints) and the CRC-32C literal
// computed independently.
TEST(RecordBatch, HandMadeKnownBytes) {
  Bytes b;
  Writer w(b);
  w.i64(42);           // baseOffset
  w.i32(72);           // batchLength: 4 + 1 + 4 + 63
  w.i32(3);            // partitionLeaderEpoch
  w.i8(2);             // magic
  w.u32(0x6AE843A0u);  // crc
  w.i16(0);            // attributes
  w.i32(1);            // lastOffsetDelta
  w.i64(1000);         // baseTimestamp
  w.i64(1005);         // maxTimestamp
  w.i64(99);           // producerId
  w.i16(2);            // producerEpoch
  w.i32(7);            // baseSequence
  w.i32(2);            // records
  // record 0: len 12, attrs 0, tsDelta 0, offsetDelta 0, key "k", value "hello", 0 headers
  const Bytes r0 = {0x18, 0x00, 0x00, 0x00, 0x02, 'k', 0x0a, 'h', 'e', 'l', 'l', 'o', 0x00};
  // record 1: len 9, attrs 0, tsDelta 5, offsetDelta 1, key null, value empty, 1 header ("h", null)
  const Bytes r1 = {0x12, 0x00, 0x0a, 0x02, 0x01, 0x00, 0x02, 0x02, 'h', 0x01};
  w.raw(r0);
  w.raw(r1);
  ASSERT_EQ(b.size(), 12u + 72u);
  EXPECT_EQ(crc32c(ByteSpan(b).subspan(21)), 0x6AE843A0u);

  const auto d = decode(b, 0);
  ASSERT_EQ(d.records.size(), 2u);
  EXPECT_EQ(d.next_offset, 44);
  EXPECT_EQ(d.batches, 1u);
  EXPECT_FALSE(d.truncated_tail);
  const auto& a = d.records[0];
  EXPECT_EQ(a.offset, 42);
  EXPECT_EQ(a.timestamp, 1000);
  EXPECT_EQ(a.timestamp_type, 0);
  EXPECT_EQ(str(a.key), "k");
  EXPECT_EQ(str(a.value), "hello");
  EXPECT_TRUE(a.headers.empty());
  EXPECT_EQ(a.producer_id, 99);
  EXPECT_EQ(a.producer_epoch, 2);
  const auto& c = d.records[1];
  EXPECT_EQ(c.offset, 43);
  EXPECT_EQ(c.timestamp, 1005);
  EXPECT_FALSE(c.key.has_value());
  ASSERT_TRUE(c.value.has_value());
  EXPECT_TRUE(c.value->empty());
  ASSERT_EQ(c.headers.size(), 1u);
  EXPECT_EQ(c.headers[0].key, "h");
  EXPECT_FALSE(c.headers[0].value.has_value());
  // Views point into the input buffer (no copy for uncompressed batches).
  EXPECT_GE(a.value->data(), b.data());
  EXPECT_LT(a.value->data(), b.data() + b.size());

  // The encoder produces exactly these bytes.
  std::vector<ProducerRecord> rs = {rec("k", "hello", 1000), rec(std::nullopt, "", 1005, {{"h", std::nullopt}})};
  BatchOptions opt;
  opt.base_offset = 42;
  opt.partition_leader_epoch = 3;
  opt.producer_id = 99;
  opt.producer_epoch = 2;
  opt.base_sequence = 7;
  Bytes enc;
  encode_record_batch(rs, opt, enc);
  EXPECT_EQ(enc, b);
}

// ------------------------------------------------------------- round trips

TEST(RecordBatch, RoundTripEveryCodec) {
  std::vector<ProducerRecord> rs = {
      rec("key", "value", 1000),
      rec(std::nullopt, std::nullopt, 999),  // null key and value; timestamp below base
      rec("", "", 1500),                     // empty key and value
      rec("h", std::string(5000, 'x'), 1200, {{"a", of("1")}, {"b", std::nullopt}, {"", Bytes{}}}),
  };
  for (auto c : kCodecs) {
    BatchOptions opt;
    opt.compression = c;
    opt.producer_id = 5;
    opt.producer_epoch = 1;
    opt.base_sequence = 10;
    Bytes b = batch(100, rs, opt);
    // Header fields.
    EXPECT_EQ(b[16], 2);
    EXPECT_EQ(load_be16(b.data() + 21) & 7, static_cast<int>(c));
    EXPECT_EQ(load_be32(b.data() + 23), 3u);                               // lastOffsetDelta
    EXPECT_EQ(static_cast<std::int64_t>(load_be64(b.data() + 27)), 1000);  // baseTimestamp
    EXPECT_EQ(static_cast<std::int64_t>(load_be64(b.data() + 35)), 1500);  // maxTimestamp
    EXPECT_EQ(load_be32(b.data() + 57), 4u);

    DecodedRecords d;
    decode_records(b, 100, {}, d);
    SCOPED_TRACE(compression_name(c));
    ASSERT_EQ(d.records.size(), 4u);
    EXPECT_EQ(offsets(d), (std::vector<std::int64_t>{100, 101, 102, 103}));
    EXPECT_EQ(d.next_offset, 104);
    EXPECT_EQ(str(d.records[0].key), "key");
    EXPECT_EQ(str(d.records[0].value), "value");
    EXPECT_EQ(d.records[0].timestamp, 1000);
    EXPECT_FALSE(d.records[1].key.has_value());
    EXPECT_FALSE(d.records[1].value.has_value());
    EXPECT_EQ(d.records[1].timestamp, 999);
    ASSERT_TRUE(d.records[2].key.has_value());
    ASSERT_TRUE(d.records[2].value.has_value());
    EXPECT_TRUE(d.records[2].key->empty());
    EXPECT_TRUE(d.records[2].value->empty());
    EXPECT_EQ(d.records[2].timestamp, 1500);
    EXPECT_EQ(str(d.records[3].value), std::string(5000, 'x'));
    EXPECT_EQ(d.records[3].headers, (std::vector<RecordHeader>{{"a", of("1")}, {"b", std::nullopt}, {"", Bytes{}}}));
    for (const auto& r : d.records) {
      EXPECT_EQ(r.timestamp_type, 0);
      EXPECT_EQ(r.producer_id, 5);
      EXPECT_EQ(r.producer_epoch, 1);
    }
    EXPECT_EQ(d.buffers_in_use, c == Compression::none ? 0u : 1u);
  }
}

TEST(RecordBatch, DefaultTimestampIsNow) {
  using namespace std::chrono;
  const auto before = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  ProducerRecord r;
  r.value = of("v");
  Bytes b;
  encode_record_batch(std::span<const ProducerRecord>(&r, 1), {}, b);
  const auto after = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  const auto d = decode(b, 0);
  ASSERT_EQ(d.records.size(), 1u);
  EXPECT_GE(d.records[0].timestamp, before);
  EXPECT_LE(d.records[0].timestamp, after);
}

TEST(RecordBatch, EncodeRejectsEmpty) {
  Bytes b;
  EXPECT_THROW(encode_record_batch({}, {}, b), ProtocolError);
}

TEST(RecordBatch, TransactionalAttributeAndLeaderEpoch) {
  BatchOptions opt;
  opt.transactional = true;
  opt.partition_leader_epoch = 17;
  opt.compression = Compression::zstd;
  const Bytes b = batch(0, {rec("a", "b")}, opt);
  EXPECT_EQ(load_be16(b.data() + 21), 0x10 | 4);
  EXPECT_EQ(load_be32(b.data() + 12), 17u);
}

TEST(RecordBatch, SeveralBatchesAndBufferReuse) {
  BatchOptions gz;
  gz.compression = Compression::gzip;
  const Bytes data =
      concat({batch(0, {rec("a", "1"), rec("b", "2")}, gz), batch(2, {rec("c", "3")}), batch(3, {rec("d", "4")}, gz)});
  DecodedRecords d;
  decode_records(data, 0, {}, d);
  EXPECT_EQ(offsets(d), (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(d.batches, 3u);
  EXPECT_EQ(d.buffers.size(), 2u);
  EXPECT_EQ(str(d.records[3].value), "4");
  d.clear();
  EXPECT_TRUE(d.records.empty());
  decode_records(data, 0, {}, d);
  EXPECT_EQ(d.buffers.size(), 2u);  // reused, not added
  EXPECT_EQ(d.buffers_in_use, 2u);
  EXPECT_EQ(str(d.records[0].value), "1");
  EXPECT_EQ(str(d.records[3].value), "4");
}

// ----------------------------------------------------------------- corruption

TEST(RecordBatch, CrcMismatchNamesBaseOffset) {
  const Bytes good = batch(7, {rec("a", "first")});
  Bytes bad = batch(8, {rec("b", "second"), rec("c", "third")});
  bad[bad.size() - 2] ^= 0x01;  // inside the last value
  const Bytes data = concat({good, bad});
  DecodedRecords d;
  try {
    decode_records(data, 0, {}, d);
    FAIL() << "no error";
  } catch (const CorruptRecordError& e) {
    EXPECT_EQ(e.base_offset(), 8);
    EXPECT_EQ(e.kind(), CorruptionKind::crc_mismatch);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("base offset 8"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CRC"), std::string::npos) << msg;
    EXPECT_NE(msg.find("stored 0x"), std::string::npos) << msg;
    EXPECT_NE(msg.find("computed 0x"), std::string::npos) << msg;
  }
  // The good batch before it was delivered; nothing of the bad one.
  ASSERT_EQ(d.records.size(), 1u);
  EXPECT_EQ(d.records[0].offset, 7);
  EXPECT_EQ(d.next_offset, 8);

  // With CRC checks off the altered bytes come through.
  DecodeOptions off;
  off.check_crcs = false;
  const auto d2 = decode(data, 0, off);
  ASSERT_EQ(d2.records.size(), 3u);
  EXPECT_EQ(str(d2.records[2].value), "thire");
}

TEST(RecordBatch, BadMagicAndLength) {
  Bytes b = batch(3, {rec("a", "b")});
  b[16] = 3;
  try {
    decode(b, 0);
    FAIL();
  } catch (const CorruptRecordError& e) {
    EXPECT_EQ(e.kind(), CorruptionKind::bad_magic);
    EXPECT_EQ(e.base_offset(), 3);
  }
  Bytes c = batch(4, {rec("a", "b")});
  Writer(c).patch_i32(8, 5);  // below every minimum
  try {
    decode(c, 0);
    FAIL();
  } catch (const CorruptRecordError& e) {
    EXPECT_EQ(e.kind(), CorruptionKind::bad_length);
    EXPECT_EQ(e.base_offset(), 4);
  }
  // A magic-2 batch shorter than its 61-byte header.
  Bytes s = batch(5, {rec("a", "b")});
  Writer(s).patch_i32(8, 40);
  s.resize(52);
  try {
    decode(s, 0);
    FAIL();
  } catch (const CorruptRecordError& e) {
    EXPECT_EQ(e.kind(), CorruptionKind::bad_length);
  }
}

TEST(RecordBatch, MalformedRecordsWithValidCrc) {
  // Record count larger than the records present.
  Bytes b = batch(10, {rec("a", "b"), rec("c", "d")});
  Writer(b).patch_i32(57, 3);
  fix_crc(b);
  try {
    decode(b, 0);
    FAIL();
  } catch (const CorruptRecordError& e) {
    EXPECT_EQ(e.kind(), CorruptionKind::malformed_record);
    EXPECT_EQ(e.base_offset(), 10);
  }
  // Record count smaller than the records present.
  Bytes c = batch(10, {rec("a", "b"), rec("c", "d")});
  Writer(c).patch_i32(57, 1);
  fix_crc(c);
  EXPECT_THROW(decode(c, 0), CorruptRecordError);
  // Key length past the end of the record: first record is
  // [len][attrs][tsDelta][offsetDelta][keyLen]...; keyLen sits at byte 61 + 4.
  Bytes k = batch(10, {rec("a", "b")});
  k[61 + 4] = 0x7e;  // zig-zag 63
  fix_crc(k);
  EXPECT_THROW(decode(k, 0), CorruptRecordError);
  // Null header key.
  Bytes h = batch(10, {rec("a", "b", 1000, {{"x", std::nullopt}})});
  // record: len, attrs, ts, off, keylen 'a', vallen 'b', hdrcount, hkeylen
  h[61 + 9] = 0x01;  // -1
  fix_crc(h);
  try {
    decode(h, 0);
    FAIL();
  } catch (const CorruptRecordError& e) {
    EXPECT_NE(std::string(e.what()).find("null header key"), std::string::npos) << e.what();
  }
  // A huge record count is rejected before anything is allocated.
  Bytes n = batch(10, {rec("a", "b")});
  Writer(n).patch_i32(57, 0x7fffffff);
  fix_crc(n);
  EXPECT_THROW(decode(n, 0), CorruptRecordError);
  // Unknown codec 6.
  Bytes u = batch(10, {rec("a", "b")});
  set_attributes(u, 0, 6);
  try {
    decode(u, 0);
    FAIL();
  } catch (const CorruptRecordError& e) {
    EXPECT_EQ(e.kind(), CorruptionKind::bad_compression);
  }
}

TEST(RecordBatch, CorruptCompressedPayload) {
  BatchOptions opt;
  opt.compression = Compression::lz4;
  Bytes b = batch(20, {rec("a", std::string(1000, 'z'))}, opt);
  b[61] ^= 0xff;  // the LZ4 frame magic
  fix_crc(b);
  try {
    decode(b, 0);
    FAIL();
  } catch (const CorruptRecordError& e) {
    EXPECT_EQ(e.kind(), CorruptionKind::bad_compression);
    EXPECT_EQ(e.base_offset(), 20);
  }
}

TEST(RecordBatch, DecompressionBombGuard) {
  BatchOptions opt;
  opt.compression = Compression::gzip;
  const Bytes b = batch(0, {rec("a", std::string(2 << 20, 0))}, opt);
  DecodeOptions small;
  small.max_decompressed_bytes = 1 << 20;
  try {
    decode(b, 0, small);
    FAIL();
  } catch (const CorruptRecordError& e) {
    EXPECT_EQ(e.kind(), CorruptionKind::too_large);
  }
  EXPECT_EQ(decode(b, 0).records.size(), 1u);
}

// ------------------------------------------------------------ tails, offsets

TEST(RecordBatch, TruncatedTailKeepsCompleteBatches) {
  const Bytes first = batch(0, {rec("a", "1"), rec("b", "2")});
  const Bytes second = batch(2, {rec("c", "3"), rec("d", "4")});
  const Bytes data = concat({first, second});
  for (std::size_t cut = first.size() + 1; cut < data.size(); ++cut) {
    const auto d = decode(ByteSpan(data).first(cut), 0);
    EXPECT_EQ(offsets(d), (std::vector<std::int64_t>{0, 1})) << cut;
    EXPECT_TRUE(d.truncated_tail) << cut;
    EXPECT_EQ(d.next_offset, 2) << cut;
    EXPECT_EQ(d.batches, 1u);
    if (cut - first.size() >= 12) EXPECT_EQ(d.truncated_batch_size, second.size()) << cut;
    else EXPECT_EQ(d.truncated_batch_size, 0u) << cut;
  }
  const auto whole = decode(data, 0);
  EXPECT_FALSE(whole.truncated_tail);
  EXPECT_EQ(whole.next_offset, 4);
  // Only a partial batch: nothing, next offset stays at the fetch offset.
  const auto part = decode(ByteSpan(first).first(30), 0);
  EXPECT_TRUE(part.records.empty());
  EXPECT_TRUE(part.truncated_tail);
  EXPECT_EQ(part.truncated_batch_size, first.size());
  EXPECT_EQ(part.next_offset, 0);
  // Empty input.
  const auto none = decode(ByteSpan(), 12);
  EXPECT_EQ(none.next_offset, 12);
  EXPECT_FALSE(none.truncated_tail);
}

// RecordsDecoder hands out the same records as decode_records(), a few whole
// batches per call, carrying next_offset and the READ_COMMITTED state across
// calls.
TEST(RecordsDecoder, PartsConcatenateToTheWhole) {
  for (const Compression codec : kCodecs) {
    BatchOptions zip;
    zip.compression = codec;
    // Producer 7 aborts 3-4 (marker at 7); batches of 3, 2, 2 records.
    const Bytes data = concat({batch(0, {rec("a", "0"), rec("b", "1"), rec("c", "2")}, zip), txn_batch(3, 7, 2),
                               batch(5, {rec("d", "5"), rec(std::nullopt, std::nullopt)}, zip),
                               control_batch(7, 7, true), batch(8, {rec("e", "8")}, zip)});
    DecodeOptions rc;
    rc.read_committed = true;
    rc.aborted_transactions = {{7, 3}};
    const auto whole = decode(ByteSpan(data).first(data.size() - 5), 1, rc);  // partial last batch
    ASSERT_EQ(offsets(whole), (std::vector<std::int64_t>{1, 2, 5, 6}));

    RecordsDecoder parts(ByteSpan(data).first(data.size() - 5), 1, rc);
    std::vector<std::string> values;
    std::vector<std::int64_t> got, next_offsets, sizes;
    for (int call = 0; !parts.done(); ++call) {
      ASSERT_LT(call, 10);
      DecodedRecords out;
      parts.decode(out, 1);
      sizes.push_back(static_cast<std::int64_t>(out.records.size()));
      next_offsets.push_back(out.next_offset);
      for (auto& r : out.records) {
        got.push_back(r.offset);
        values.push_back(str(r.value));  // the buffers are `out`'s, alive here
      }
      if (parts.done()) {
        EXPECT_TRUE(out.truncated_tail);
        EXPECT_EQ(out.truncated_batch_size, whole.truncated_batch_size);
      }
    }
    EXPECT_EQ(got, offsets(whole));
    EXPECT_EQ(values, (std::vector<std::string>{"1", "2", "5", "<null>"}));
    // Call 1: the first batch (2 records at or above the fetch offset);
    // call 2: the aborted batch, skipped, then the batch at 5; call 3: the
    // marker, the batch at 8 is cut off.
    EXPECT_EQ(sizes, (std::vector<std::int64_t>{2, 2, 0})) << static_cast<int>(codec);
    EXPECT_EQ(next_offsets, (std::vector<std::int64_t>{3, 7, 8}));
    EXPECT_EQ(whole.next_offset, 8);
  }
}

TEST(RecordsDecoder, CorruptBatchInALaterPart) {
  const Bytes good = batch(0, {rec("a", "1"), rec("b", "2")});
  Bytes bad = batch(2, {rec("c", "3")});
  bad[bad.size() - 2] ^= 0x01;
  const Bytes data = concat({good, bad, batch(3, {rec("d", "4")})});
  RecordsDecoder parts(data, 0, {});
  DecodedRecords first;
  parts.decode(first, 2);
  EXPECT_EQ(offsets(first), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(first.next_offset, 2);
  EXPECT_FALSE(parts.done());
  DecodedRecords second;
  try {
    parts.decode(second, 2);
    FAIL() << "no error";
  } catch (const CorruptRecordError& e) {
    EXPECT_EQ(e.base_offset(), 2);
    EXPECT_EQ(e.kind(), CorruptionKind::crc_mismatch);
  }
  EXPECT_TRUE(second.records.empty());
  EXPECT_EQ(second.next_offset, 2);  // stays at the bad batch
  EXPECT_TRUE(parts.done());
}

TEST(RecordBatch, RecordsBelowFetchOffsetDropped) {
  BatchOptions opt;
  opt.compression = Compression::snappy;
  const Bytes b = batch(10, {rec("a", "0"), rec("b", "1"), rec("c", "2"), rec("d", "3"), rec("e", "4")}, opt);
  const auto d = decode(b, 12);
  EXPECT_EQ(offsets(d), (std::vector<std::int64_t>{12, 13, 14}));
  EXPECT_EQ(str(d.records[0].value), "2");
  EXPECT_EQ(d.next_offset, 15);
  // A batch entirely below the fetch offset yields nothing.
  const auto e = decode(b, 20);
  EXPECT_TRUE(e.records.empty());
  EXPECT_EQ(e.next_offset, 20);
}

TEST(RecordBatch, ControlBatchSkippedButAdvances) {
  const Bytes data = concat({txn_batch(0, 9, 2), control_batch(2, 9, false)});
  const auto d = decode(data, 0);
  EXPECT_EQ(offsets(d), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(d.next_offset, 3);
  EXPECT_EQ(d.batches, 2u);
  // Control batch alone.
  const auto c = decode(control_batch(2, 9, true), 2);
  EXPECT_TRUE(c.records.empty());
  EXPECT_EQ(c.next_offset, 3);
}

TEST(RecordBatch, EmptyBatchAfterCompactionAdvances) {
  // Compaction may leave a batch with no records whose lastOffsetDelta still
  // covers the removed offsets.
  Bytes b = batch(50, {rec("a", "b")});
  Writer(b).patch_i32(57, 0);
  Writer(b).patch_i32(23, 9);
  b.resize(61);
  Writer(b).patch_i32(8, 49);
  fix_crc(b);
  const auto d = decode(b, 50);
  EXPECT_TRUE(d.records.empty());
  EXPECT_EQ(d.next_offset, 60);
}

TEST(RecordBatch, LogAppendTime) {
  for (auto c : {Compression::none, Compression::zstd}) {
    BatchOptions opt;
    opt.compression = c;
    Bytes b = batch(0, {rec("a", "1", 100), rec("b", "2", 200)}, opt);
    Writer(b).patch_u32(35, 0);
    Writer(b).patch_u32(39, 777777);  // maxTimestamp = 777777 (broker's append time)
    set_attributes(b, 0, static_cast<std::uint16_t>(static_cast<int>(c) | 0x08));
    const auto d = decode(b, 0);
    ASSERT_EQ(d.records.size(), 2u);
    for (const auto& r : d.records) {
      EXPECT_EQ(r.timestamp, 777777);
      EXPECT_EQ(r.timestamp_type, 1);
    }
  }
}

TEST(RecordBatch, CreateTimeWithUnknownBaseTimestamp) {
  Bytes b = batch(0, {rec("a", "1", 100)});
  Writer(b).patch_u32(27, 0xffffffffu);
  Writer(b).patch_u32(31, 0xffffffffu);  // baseTimestamp = -1
  fix_crc(b);
  const auto d = decode(b, 0);
  ASSERT_EQ(d.records.size(), 1u);
  EXPECT_EQ(d.records[0].timestamp, -1);
}

// ------------------------------------------------------------ transactions

TEST(RecordBatch, ReadCommittedFiltersAbortedTransactions) {
  // Producer 7 aborts offsets 0-1 (marker at 4); producer 8 commits 2-3
  // (marker at 5); producer 7 then commits 6-7 (marker at 9); 8 is plain.
  const Bytes plain = batch(8, {rec(std::nullopt, "plain")});
  const Bytes data = concat({txn_batch(0, 7, 2), txn_batch(2, 8, 2), control_batch(4, 7, true),
                             control_batch(5, 8, false), txn_batch(6, 7, 2), plain, control_batch(9, 7, false)});
  DecodeOptions rc;
  rc.read_committed = true;
  rc.aborted_transactions = {{7, 0}};
  const auto d = decode(data, 0, rc);
  EXPECT_EQ(offsets(d), (std::vector<std::int64_t>{2, 3, 6, 7, 8}));
  EXPECT_EQ(d.next_offset, 10);
  EXPECT_EQ(d.batches, 7u);

  // READ_UNCOMMITTED ignores the list.
  DecodeOptions ru;
  ru.aborted_transactions = {{7, 0}};
  EXPECT_EQ(offsets(decode(data, 0, ru)), (std::vector<std::int64_t>{0, 1, 2, 3, 6, 7, 8}));
}

TEST(RecordBatch, ReadCommittedUnsortedListAndRepeatedAborts) {
  // Producer 7 aborts twice: 0-1 (marker 2) and 3-4 (marker 5); producer 8
  // aborts 6 (marker 7) but its entry is missing from the list.
  const Bytes data = concat({txn_batch(0, 7, 2), control_batch(2, 7, true), txn_batch(3, 7, 2),
                             control_batch(5, 7, true), txn_batch(6, 8, 1), control_batch(7, 8, true)});
  DecodeOptions rc;
  rc.read_committed = true;
  rc.aborted_transactions = {{7, 3}, {7, 0}};
  const auto d = decode(data, 0, rc);
  EXPECT_EQ(offsets(d), (std::vector<std::int64_t>{6}));
  EXPECT_EQ(d.next_offset, 8);
}

TEST(RecordBatch, ReadCommittedFetchStartingMidTransaction) {
  // The fetch starts at 1, inside producer 7's aborted transaction 0-1.
  const Bytes data = concat({txn_batch(1, 7, 1), control_batch(2, 7, true), txn_batch(3, 7, 1)});
  DecodeOptions rc;
  rc.read_committed = true;
  rc.aborted_transactions = {{7, 0}};
  const auto d = decode(data, 1, rc);
  EXPECT_EQ(offsets(d), (std::vector<std::int64_t>{3}));
}

// The Fetch response's list is the decoder's input as it is (one type).
TEST(RecordBatch, FetchResponseAbortedListFeedsTheDecoder) {
  const Bytes data = concat({txn_batch(0, 7, 2), control_batch(2, 7, true), txn_batch(3, 8, 1)});
  FetchResponse::PartitionData p;
  p.aborted_transactions = std::vector<FetchResponse::AbortedTransaction>{{7, 0}};
  DecodeOptions rc;
  rc.read_committed = true;
  rc.aborted_transactions = *p.aborted_transactions;
  EXPECT_EQ(offsets(decode(data, 0, rc)), (std::vector<std::int64_t>{3}));
  static_assert(std::is_same_v<FetchResponse::AbortedTransaction, AbortedTransaction>);
}

// ------------------------------------------------------ legacy message sets

TEST(LegacyMessages, MagicZeroUncompressed) {
  Bytes data;
  legacy_message(data, 5, 0, 0, 0, std::nullopt, of("v5"));
  legacy_message(data, 6, 0, 0, 0, of("k6"), Bytes{});
  legacy_message(data, 7, 0, 0, 0, of(""), std::nullopt);
  const auto d = decode(data, 6);
  ASSERT_EQ(d.records.size(), 2u);
  EXPECT_EQ(d.records[0].offset, 6);
  EXPECT_EQ(str(d.records[0].key), "k6");
  ASSERT_TRUE(d.records[0].value.has_value());
  EXPECT_TRUE(d.records[0].value->empty());
  EXPECT_EQ(d.records[0].timestamp, -1);
  EXPECT_EQ(d.records[0].timestamp_type, -1);
  EXPECT_EQ(d.records[0].producer_id, -1);
  ASSERT_TRUE(d.records[1].key.has_value());
  EXPECT_TRUE(d.records[1].key->empty());
  EXPECT_FALSE(d.records[1].value.has_value());
  EXPECT_EQ(d.next_offset, 8);
  EXPECT_EQ(d.batches, 3u);
}

TEST(LegacyMessages, MagicOneUncompressedTimestamps) {
  Bytes data;
  legacy_message(data, 0, 1, 0, 1111, of("a"), of("x"));
  legacy_message(data, 1, 1, 0x08, 2222, of("b"), of("y"));
  const auto d = decode(data, 0);
  ASSERT_EQ(d.records.size(), 2u);
  EXPECT_EQ(d.records[0].timestamp, 1111);
  EXPECT_EQ(d.records[0].timestamp_type, 0);
  EXPECT_EQ(d.records[1].timestamp, 2222);
  EXPECT_EQ(d.records[1].timestamp_type, 1);
}

TEST(LegacyMessages, MagicOneCompressedWrapperRelativeOffsets) {
  for (auto c : {Compression::gzip, Compression::snappy}) {
    Bytes inner;
    legacy_message(inner, 0, 1, 0, 500, of("k0"), of("v0"));
    legacy_message(inner, 1, 1, 0, 501, std::nullopt, of("v1"));
    legacy_message(inner, 2, 1, 0, 502, of("k2"), std::nullopt);
    Bytes packed;
    compress(c, inner, packed);
    Bytes data;
    legacy_message(data, 102, 1, static_cast<std::int8_t>(c), 502, std::nullopt, packed);  // wrapper: last offset
    SCOPED_TRACE(compression_name(c));
    const auto d = decode(data, 0);
    EXPECT_EQ(offsets(d), (std::vector<std::int64_t>{100, 101, 102}));
    EXPECT_EQ(str(d.records[0].value), "v0");
    EXPECT_EQ(str(d.records[1].value), "v1");
    EXPECT_FALSE(d.records[2].value.has_value());
    EXPECT_EQ(d.records[1].timestamp, 501);
    EXPECT_EQ(d.records[1].timestamp_type, 0);
    EXPECT_EQ(d.next_offset, 103);
    EXPECT_EQ(d.batches, 1u);
    // Fetch offset inside the wrapper.
    EXPECT_EQ(offsets(decode(data, 101)), (std::vector<std::int64_t>{101, 102}));
  }
}

TEST(LegacyMessages, MagicOneWrapperLogAppendTime) {
  Bytes inner;
  legacy_message(inner, 0, 1, 0, 10, of("a"), of("1"));
  legacy_message(inner, 1, 1, 0, 20, of("b"), of("2"));
  Bytes packed;
  compress(Compression::gzip, inner, packed);
  Bytes data;
  legacy_message(data, 41, 1, 0x08 | 1, 99999, std::nullopt, packed);
  const auto d = decode(data, 0);
  ASSERT_EQ(d.records.size(), 2u);
  EXPECT_EQ(d.records[0].offset, 40);
  for (const auto& r : d.records) {
    EXPECT_EQ(r.timestamp, 99999);
    EXPECT_EQ(r.timestamp_type, 1);
  }
}

TEST(LegacyMessages, MagicZeroCompressedWrapperAbsoluteOffsets) {
  Bytes inner;
  legacy_message(inner, 30, 0, 0, 0, of("a"), of("1"));
  legacy_message(inner, 31, 0, 0, 0, of("b"), of("2"));
  Bytes packed;
  compress(Compression::gzip, inner, packed);
  Bytes data;
  legacy_message(data, 31, 0, 1, 0, std::nullopt, packed);
  legacy_message(data, 32, 0, 0, 0, of("c"), of("3"));
  const auto d = decode(data, 0);
  EXPECT_EQ(offsets(d), (std::vector<std::int64_t>{30, 31, 32}));
  EXPECT_EQ(str(d.records[1].value), "2");
  EXPECT_EQ(d.next_offset, 33);
}

// Before KIP-57 Kafka computed the LZ4 frame header checksum over the frame
// magic number too (KAFKA-3160); magic-0 messages may carry such frames.
TEST(LegacyMessages, MagicZeroLz4WithKafkasOldHeaderChecksum) {
  Bytes inner;
  legacy_message(inner, 0, 0, 0, 0, of("a"), of("first"));
  legacy_message(inner, 1, 0, 0, 0, of("b"), of("second"));
  Bytes packed;
  compress(Compression::lz4, inner, packed);
  ASSERT_GE(packed.size(), 7u);
  ASSERT_EQ(packed[0], 0x04);  // frame magic 0x184D2204, little-endian
  const std::uint8_t flg = packed[4];
  std::size_t hc = 6 + ((flg & 0x08) ? 8 : 0) + ((flg & 0x01) ? 4 : 0);
  ASSERT_EQ(packed[hc], lz4_header_checksum(ByteSpan(packed).subspan(4, hc - 4)));
  Bytes broken = packed;
  broken[hc] = lz4_header_checksum(ByteSpan(packed).subspan(0, hc));
  ASSERT_NE(broken[hc], packed[hc]);
  // A standard LZ4 reader rejects the old checksum...
  Bytes out;
  EXPECT_THROW(decompress(Compression::lz4, broken, out, 1 << 20), CompressionError);
  // ...but a magic-0 message carrying it decodes.
  Bytes data;
  legacy_message(data, 1, 0, 3, 0, std::nullopt, broken);
  const auto d = decode(data, 0);
  EXPECT_EQ(offsets(d), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(str(d.records[1].value), "second");
  // A checksum that is neither form is still corruption.
  Bytes garbage = packed;
  garbage[hc] = static_cast<std::uint8_t>(packed[hc] ^ broken[hc] ^ 0x5a);
  if (garbage[hc] == packed[hc] || garbage[hc] == broken[hc]) garbage[hc] ^= 0x01;
  Bytes bad;
  legacy_message(bad, 1, 0, 3, 0, std::nullopt, garbage);
  try {
    decode(bad, 0);
    FAIL() << "expected CorruptRecordError";
  } catch (const CorruptRecordError& e) {
    EXPECT_EQ(e.kind(), CorruptionKind::bad_compression);
  }
  // Magic 1 keeps the standard rule: the old checksum is an error there.
  Bytes inner1;
  legacy_message(inner1, 0, 1, 0, 5, of("a"), of("x"));
  Bytes packed1;
  compress(Compression::lz4, inner1, packed1);
  std::size_t hc1 = 6 + ((packed1[4] & 0x08) ? 8 : 0) + ((packed1[4] & 0x01) ? 4 : 0);
  packed1[hc1] = lz4_header_checksum(ByteSpan(packed1).subspan(0, hc1));
  Bytes data1;
  legacy_message(data1, 0, 1, 3, 5, std::nullopt, packed1);
  EXPECT_THROW(decode(data1, 0), CorruptRecordError);
}

TEST(LegacyMessages, CrcMismatch) {
  Bytes data;
  legacy_message(data, 3, 1, 0, 1, of("a"), of("value"));
  data.back() ^= 0x20;
  try {
    decode(data, 0);
    FAIL();
  } catch (const CorruptRecordError& e) {
    EXPECT_EQ(e.kind(), CorruptionKind::crc_mismatch);
    EXPECT_EQ(e.base_offset(), 3);
    EXPECT_NE(std::string(e.what()).find("base offset 3"), std::string::npos);
  }
  DecodeOptions off;
  off.check_crcs = false;
  EXPECT_EQ(str(decode(data, 0, off).records.at(0).value), "valuE");
}

TEST(LegacyMessages, MalformedInnerSet) {
  Bytes inner;
  legacy_message(inner, 0, 1, 0, 1, of("a"), of("1"));
  inner.resize(inner.size() - 3);  // cut the inner message
  Bytes packed;
  compress(Compression::gzip, inner, packed);
  Bytes data;
  legacy_message(data, 0, 1, 1, 1, std::nullopt, packed);
  EXPECT_THROW(decode(data, 0), CorruptRecordError);
  // Null value in a compressed wrapper.
  Bytes nullwrap;
  legacy_message(nullwrap, 0, 1, 1, 1, std::nullopt, std::nullopt);
  EXPECT_THROW(decode(nullwrap, 0), CorruptRecordError);
}

TEST(LegacyMessages, MixedWithRecordBatchChosenByMagic) {
  Bytes data;
  legacy_message(data, 0, 0, 0, 0, of("a"), of("old"));
  legacy_message(data, 1, 1, 0, 5, of("b"), of("newer"));
  const Bytes v2 = batch(2, {rec("c", "newest")});
  data.insert(data.end(), v2.begin(), v2.end());
  const auto d = decode(data, 0);
  EXPECT_EQ(offsets(d), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(str(d.records[2].value), "newest");
  EXPECT_EQ(d.records[0].timestamp_type, -1);
  EXPECT_EQ(d.records[1].timestamp_type, 0);
  EXPECT_EQ(d.records[2].timestamp_type, 0);
  // A truncated legacy message at the end is a partial tail too.
  Bytes cut = data;
  Bytes extra;
  legacy_message(extra, 3, 1, 0, 5, of("d"), of("partial"));
  cut.insert(cut.end(), extra.begin(), extra.end() - 4);
  const auto t = decode(cut, 0);
  EXPECT_TRUE(t.truncated_tail);
  EXPECT_EQ(t.truncated_batch_size, extra.size());
  EXPECT_EQ(t.next_offset, 3);
}

// ------------------------------------------------------------- robustness

TEST(RecordBatch, RandomMutationsOnlyThrowCorruptRecordError) {
  // With CRC checks off every byte reaches the parsers; each mutation must
  // either decode or throw CorruptRecordError, never read out of bounds.
  BatchOptions gz;
  gz.compression = Compression::gzip;
  BatchOptions zs;
  zs.compression = Compression::zstd;
  Bytes legacy;
  legacy_message(legacy, 9, 1, 0, 5, of("k"), of("legacy"));
  const Bytes base = concat({batch(0, {rec("a", "1", 10, {{"h", of("v")}}), rec(std::nullopt, "2")}),
                             batch(2, {rec("b", std::string(300, 'q'))}, gz), batch(3, {rec("c", "3")}, zs),
                             control_batch(4, 1, true), legacy});
  DecodeOptions opt;
  opt.check_crcs = false;
  opt.read_committed = true;
  opt.aborted_transactions = {{1, 0}};
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int decoded = 0, rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    Bytes m = base;
    const int edits = 1 + static_cast<int>(next() % 3);
    for (int e = 0; e < edits; ++e) m[next() % m.size()] = static_cast<std::uint8_t>(next());
    if (next() % 4 == 0) m.resize(next() % m.size());
    DecodedRecords d;
    try {
      decode_records(m, 0, opt, d);
      ++decoded;
    } catch (const CorruptRecordError&) {
      ++rejected;
    }
  }
  EXPECT_GT(decoded, 0);
  EXPECT_GT(rejected, 0);
}
