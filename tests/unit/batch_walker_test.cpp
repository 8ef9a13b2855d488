// BatchWalker, next_offset_after_batches() and CorruptRecordError's text.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "kwire/protocol/batch_walker.hpp"
#include "kwire/protocol/crc32c.hpp"
#include "kwire/protocol/record_batch.hpp"

using namespace kwire::protocol;

namespace {

using Step = BatchWalker::Step;

Bytes of(std::string_view s) { return Bytes(s.begin(), s.end()); }

Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes batch(std::int64_t base_offset, int n, BatchOptions opt = {}) {
  std::vector<ProducerRecord> recs;
  for (int i = 0; i < n; ++i) {
    ProducerRecord r;
    r.value = of("v" + std::to_string(i));
    r.timestamp = 1000 + i;
    recs.push_back(std::move(r));
  }
  opt.base_offset = base_offset;
  Bytes out;
  encode_record_batch(recs, opt, out);
  return out;
}

// Rewrites the attributes of the batch at `start` and its CRC-32C (which
// covers bytes 21 to the end of the batch).
void set_attributes(Bytes& b, std::uint16_t attrs, std::size_t start = 0) {
  b[start + 21] = static_cast<std::uint8_t>(attrs >> 8);
  b[start + 22] = static_cast<std::uint8_t>(attrs);
  const std::size_t len = load_be32(b.data() + start + 8);
  Writer(b).patch_u32(start + 17, crc32c(ByteSpan(b).subspan(start + 21, len - 9)));
}

// A COMMIT marker of producer 9 at `offset`.
Bytes commit_marker(std::int64_t offset) {
  ProducerRecord marker;
  marker.key = Bytes{0, 0, 0, 1};
  marker.value = Bytes{0, 0, 0, 0, 0, 0};
  marker.timestamp = 5000;
  BatchOptions opt;
  opt.base_offset = offset;
  opt.producer_id = 9;
  opt.producer_epoch = 0;
  opt.transactional = true;
  Bytes out;
  encode_record_batch(std::span<const ProducerRecord>(&marker, 1), opt, out);
  set_attributes(out, 0x10 | 0x20);
  return out;
}

Bytes legacy(std::int64_t offset, std::int8_t magic, const std::string& value, std::int8_t attributes = 0,
             std::int64_t timestamp = 777) {
  Bytes out;
  encode_legacy_message(out, offset, magic, attributes, timestamp, std::nullopt, of(value));
  return out;
}

// A magic-1 wrapper at `offset` holding `n` messages with relative offsets 0..n-1.
Bytes wrapper_v1(std::int64_t offset, int n, Compression codec) {
  Bytes inner;
  for (int i = 0; i < n; ++i)
    encode_legacy_message(inner, i, 1, 0, 2000 + i, std::nullopt, of("w" + std::to_string(i)));
  Bytes packed;
  compress(codec, ByteSpan(inner), packed);
  Bytes out;
  encode_legacy_message(out, offset, 1, static_cast<std::int8_t>(codec), 3000, std::nullopt, packed);
  return out;
}

struct Walked {
  std::vector<BatchEntry> entries;
  Step last = Step::entry;
};

Walked walk(ByteSpan data) {
  Walked w;
  BatchWalker walker(data);
  while ((w.last = walker.next()) == Step::entry) w.entries.push_back(walker.entry());
  return w;
}

}  // namespace

// ------------------------------------------------------------------ magic 2

TEST(BatchWalker, ReadsEveryFieldOfV2Headers) {
  BatchOptions opt;
  opt.compression = Compression::lz4;
  opt.producer_id = 4242;
  opt.producer_epoch = 3;
  opt.base_sequence = 17;
  opt.transactional = true;
  opt.partition_leader_epoch = 6;
  const Bytes first = batch(100, 3, opt);
  const Bytes second = batch(103, 2);
  const Bytes data = concat({first, second});

  BatchWalker w(data);
  ASSERT_EQ(w.next(), Step::entry);
  const BatchHeader h = w.entry().header;
  EXPECT_EQ(h.base_offset, 100);
  EXPECT_EQ(h.batch_length, static_cast<std::int32_t>(first.size() - 12));
  EXPECT_EQ(h.partition_leader_epoch, 6);
  EXPECT_EQ(h.magic, 2);
  EXPECT_EQ(h.crc, load_be32(first.data() + 17));
  EXPECT_EQ(h.attributes, 0x10 | 3);
  EXPECT_EQ(h.last_offset_delta, 2);
  EXPECT_EQ(h.base_timestamp, 1000);
  EXPECT_EQ(h.max_timestamp, 1002);
  EXPECT_EQ(h.producer_id, 4242);
  EXPECT_EQ(h.producer_epoch, 3);
  EXPECT_EQ(h.base_sequence, 17);
  EXPECT_EQ(h.records_count, 3);
  EXPECT_EQ(h.compression(), Compression::lz4);
  EXPECT_EQ(h.timestamp_type(), kTimestampCreateTime);
  EXPECT_TRUE(h.is_transactional());
  EXPECT_FALSE(h.is_control());
  EXPECT_FALSE(h.is_legacy());
  EXPECT_EQ(h.last_offset(), 102);
  EXPECT_EQ(h.size(), first.size());
  EXPECT_EQ(h.header_size(), 61u);
  EXPECT_EQ(w.entry().position, 0u);
  EXPECT_EQ(w.entry().bytes.data(), data.data());
  EXPECT_EQ(w.entry().bytes.size(), first.size());
  EXPECT_EQ(w.entry().body().size(), first.size() - 61);
  EXPECT_TRUE(w.entry().crc_valid());
  EXPECT_EQ(w.position(), first.size());

  ASSERT_EQ(w.next(), Step::entry);
  EXPECT_EQ(w.entry().position, first.size());
  EXPECT_EQ(w.entry().header.base_offset, 103);
  EXPECT_EQ(w.entry().header.producer_id, -1);
  EXPECT_EQ(w.entry().header.compression(), Compression::none);
  EXPECT_FALSE(w.entry().header.is_transactional());
  EXPECT_EQ(w.next(), Step::end);
  EXPECT_EQ(w.next(), Step::end);
  EXPECT_EQ(w.position(), data.size());
}

TEST(BatchWalker, AttributeHelpers) {
  Bytes b = batch(0, 1);
  set_attributes(b, 0x08 | 4);  // LogAppendTime, zstd
  BatchWalker w(b);
  ASSERT_EQ(w.next(), Step::entry);
  EXPECT_EQ(w.entry().header.timestamp_type(), kTimestampLogAppendTime);
  EXPECT_EQ(w.entry().header.compression(), Compression::zstd);
  EXPECT_TRUE(w.entry().crc_valid());

  set_attributes(b, 6);  // no such codec
  BatchWalker w2(b);
  ASSERT_EQ(w2.next(), Step::entry);  // the walker does not judge the codec
  EXPECT_FALSE(w2.entry().header.compression().has_value());

  const Bytes marker = commit_marker(5);
  BatchWalker w3(marker);
  ASSERT_EQ(w3.next(), Step::entry);
  EXPECT_TRUE(w3.entry().header.is_control());
  EXPECT_TRUE(w3.entry().header.is_transactional());
  EXPECT_EQ(w3.entry().header.producer_id, 9);

  Bytes damaged = batch(0, 2);
  damaged[damaged.size() - 1] ^= 0x01;
  BatchWalker w4(damaged);
  ASSERT_EQ(w4.next(), Step::entry);  // CRCs are the caller's business
  EXPECT_FALSE(w4.entry().crc_valid());
}

// ------------------------------------------------------------- magic 0 and 1

TEST(BatchWalker, LegacyMessagesGetTheFieldsThatExist) {
  const Bytes m0 = legacy(5, 0, "zero");
  const Bytes m1 = legacy(6, 1, "one", 0x08, 123456);  // LogAppendTime
  const Bytes data = concat({m0, m1});
  const Walked w = walk(data);
  ASSERT_EQ(w.last, Step::end);
  ASSERT_EQ(w.entries.size(), 2u);

  const BatchHeader& h0 = w.entries[0].header;
  EXPECT_EQ(h0.magic, 0);
  EXPECT_TRUE(h0.is_legacy());
  EXPECT_EQ(h0.base_offset, 5);
  EXPECT_EQ(h0.batch_length, static_cast<std::int32_t>(m0.size() - 12));
  EXPECT_EQ(h0.crc, load_be32(m0.data() + 12));
  EXPECT_EQ(h0.attributes, 0);
  EXPECT_EQ(h0.base_timestamp, -1);
  EXPECT_EQ(h0.max_timestamp, -1);
  EXPECT_EQ(h0.timestamp_type(), kTimestampNone);
  EXPECT_EQ(h0.last_offset_delta, 0);
  EXPECT_EQ(h0.last_offset(), 5);
  EXPECT_EQ(h0.records_count, 1);
  EXPECT_EQ(h0.partition_leader_epoch, -1);
  EXPECT_EQ(h0.producer_id, -1);
  EXPECT_EQ(h0.producer_epoch, -1);
  EXPECT_EQ(h0.base_sequence, -1);
  EXPECT_FALSE(h0.is_transactional());
  EXPECT_FALSE(h0.is_control());
  EXPECT_EQ(h0.header_size(), 18u);
  EXPECT_TRUE(w.entries[0].crc_valid());
  // The body is the key (null: length -1) and the value.
  const Bytes body0(w.entries[0].body().begin(), w.entries[0].body().end());
  EXPECT_EQ(body0, concat({Bytes{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 4}, of("zero")}));

  const BatchHeader& h1 = w.entries[1].header;
  EXPECT_EQ(h1.magic, 1);
  EXPECT_EQ(h1.base_offset, 6);
  EXPECT_EQ(h1.attributes, 0x08);
  EXPECT_EQ(h1.base_timestamp, 123456);
  EXPECT_EQ(h1.max_timestamp, 123456);
  EXPECT_EQ(h1.timestamp_type(), kTimestampLogAppendTime);
  EXPECT_EQ(h1.header_size(), 26u);
  EXPECT_EQ(w.entries[1].position, m0.size());
  EXPECT_EQ(w.entries[1].body().size(), 8u + 3u);
  EXPECT_TRUE(w.entries[1].crc_valid());

  Bytes bad = m1;
  bad.back() ^= 0x20;
  EXPECT_FALSE(walk(bad).entries.at(0).crc_valid());
}

TEST(BatchWalker, CompressedLegacyWrapperIsOneEntry) {
  const Bytes data = concat({wrapper_v1(12, 3, Compression::gzip), legacy(13, 1, "after")});
  const Walked w = walk(data);
  ASSERT_EQ(w.last, Step::end);
  ASSERT_EQ(w.entries.size(), 2u);
  const BatchHeader& h = w.entries[0].header;
  EXPECT_EQ(h.base_offset, 12);  // the offset of the last inner message
  EXPECT_EQ(h.compression(), Compression::gzip);
  EXPECT_EQ(h.records_count, 1);
  EXPECT_EQ(h.base_timestamp, 3000);
  EXPECT_TRUE(w.entries[0].crc_valid());

  // The inner set is walked the same way once decompressed.
  Reader r(w.entries[0].body());
  ASSERT_FALSE(r.nullable_bytes_view(false).has_value());  // null key
  const auto packed = r.nullable_bytes_view(false);
  ASSERT_TRUE(packed.has_value());
  Bytes inner;
  decompress(Compression::gzip, *packed, inner, 1 << 20);
  const Walked iw = walk(inner);
  ASSERT_EQ(iw.last, Step::end);
  ASSERT_EQ(iw.entries.size(), 3u);
  EXPECT_EQ(iw.entries[2].header.base_offset, 2);  // relative
  EXPECT_EQ(iw.entries[2].header.base_timestamp, 2002);

  const NextFetchPosition next = next_offset_after_batches(data, 10);
  EXPECT_EQ(next.next_offset, 14);
  EXPECT_EQ(next.complete_entries, 2u);
}

// --------------------------------------------------------------- partial tail

TEST(BatchWalker, PartialTailIsReportedNotThrown) {
  const Bytes first = batch(0, 2);
  const Bytes second = batch(2, 2);
  for (std::size_t cut :
       {std::size_t{1}, std::size_t{11}, std::size_t{12}, std::size_t{16}, std::size_t{30}, second.size() - 1}) {
    SCOPED_TRACE(cut);
    const Bytes data = concat({first, Bytes(second.begin(), second.begin() + static_cast<std::ptrdiff_t>(cut))});
    BatchWalker w(data);
    ASSERT_EQ(w.next(), Step::entry);
    EXPECT_EQ(w.next(), Step::partial_tail);
    EXPECT_EQ(w.next(), Step::partial_tail);
    EXPECT_EQ(w.position(), first.size());
    // The full size is known once the length field is there.
    EXPECT_EQ(w.partial_size(), cut >= 12 ? second.size() : 0u);

    DecodedRecords out;
    decode_records(data, 0, DecodeOptions{}, out);
    EXPECT_EQ(out.records.size(), 2u);
    EXPECT_TRUE(out.truncated_tail);
    EXPECT_EQ(out.truncated_batch_size, cut >= 12 ? second.size() : 0u);
    EXPECT_EQ(out.next_offset, 2);
  }
  EXPECT_EQ(walk({}).last, Step::end);
  EXPECT_TRUE(walk({}).entries.empty());
}

// ----------------------------------------------------------- malformed headers

TEST(BatchWalker, BadLengthIsATypedError) {
  Bytes tiny = batch(41, 1);
  Writer(tiny).patch_i32(8, 5);
  BatchWalker w(tiny);
  ASSERT_EQ(w.next(), Step::malformed);
  EXPECT_EQ(w.next(), Step::malformed);
  EXPECT_EQ(w.error().position, 0u);
  EXPECT_EQ(w.error().base_offset, 41);
  EXPECT_EQ(w.error().kind, CorruptionKind::bad_length);
  EXPECT_EQ(w.error().what, "batch length 5 is below the minimum of 14");

  // Negative, and already in a tail too short for the magic byte.
  Bytes negative = Bytes(tiny.begin(), tiny.begin() + 12);
  Writer(negative).patch_i32(8, -1);
  BatchWalker wn(negative);
  ASSERT_EQ(wn.next(), Step::malformed);
  EXPECT_EQ(wn.error().what, "batch length -1 is below the minimum of 14");

  // A magic-2 batch shorter than its header.
  const Bytes good = batch(0, 1);
  Bytes short_v2 = batch(50, 1);
  Writer(short_v2).patch_i32(8, 40);
  short_v2.resize(52);
  const Bytes data = concat({good, short_v2});
  BatchWalker w2(data);
  ASSERT_EQ(w2.next(), Step::entry);
  ASSERT_EQ(w2.next(), Step::malformed);
  EXPECT_EQ(w2.error().position, good.size());
  EXPECT_EQ(w2.error().base_offset, 50);
  EXPECT_EQ(w2.error().what, "batch length 40 is below the magic-2 minimum of 49");
  EXPECT_EQ(w2.position(), good.size());

  // A magic-1 message shorter than magic 1 allows.
  Bytes short_v1 = legacy(8, 0, "012345");
  short_v1[16] = 1;
  BatchWalker w3(short_v1);
  ASSERT_EQ(w3.next(), Step::malformed);
  EXPECT_EQ(w3.error().what, "message size 20 is below the magic-1 minimum of 22");

  // base offset + last offset delta past the largest offset.
  Bytes overflow = batch(std::numeric_limits<std::int64_t>::max() - 1, 3);
  BatchWalker w4(overflow);
  ASSERT_EQ(w4.next(), Step::malformed);
  EXPECT_EQ(w4.error().kind, CorruptionKind::bad_length);
  EXPECT_EQ(w4.error().what, "last offset delta 2 overflows the offset range");
}

TEST(BatchWalker, BadMagicIsATypedErrorAndTheDecoderThrowsIt) {
  const Bytes good = batch(0, 2);
  Bytes bad = batch(2, 1);
  bad[16] = 7;
  const Bytes data = concat({good, bad});
  BatchWalker w(data);
  ASSERT_EQ(w.next(), Step::entry);
  ASSERT_EQ(w.next(), Step::malformed);
  EXPECT_EQ(w.error().kind, CorruptionKind::bad_magic);
  EXPECT_EQ(w.error().base_offset, 2);
  EXPECT_EQ(w.error().position, good.size());
  EXPECT_EQ(w.error().what, "unknown magic byte 7");

  DecodedRecords out;
  try {
    decode_records(data, 0, DecodeOptions{}, out);
    FAIL() << "no error";
  } catch (const CorruptRecordError& e) {
    EXPECT_EQ(e.base_offset(), 2);
    EXPECT_EQ(e.kind(), CorruptionKind::bad_magic);
    EXPECT_EQ(e.detail(), "unknown magic byte 7");
    EXPECT_STREQ(e.what(), "corrupt record batch at base offset 2: unknown magic byte 7");
  }
  EXPECT_EQ(out.records.size(), 2u);
  EXPECT_EQ(out.next_offset, 2);
}

// ------------------------------------------------------------ next offset

TEST(NextOffsetAfterBatches, EmptyBlobKeepsTheFetchOffset) {
  const NextFetchPosition n = next_offset_after_batches({}, 42);
  EXPECT_EQ(n.next_offset, 42);
  EXPECT_EQ(n.partial_size, 0u);
  EXPECT_EQ(n.complete_entries, 0u);
  EXPECT_FALSE(n.malformed);
}

TEST(NextOffsetAfterBatches, LastCompleteBatchIncludingControlBatches) {
  const Bytes data = concat({batch(10, 3), batch(13, 2), commit_marker(15)});
  const NextFetchPosition n = next_offset_after_batches(data, 10);
  EXPECT_EQ(n.next_offset, 16);  // after the marker, which holds no record for the consumer
  EXPECT_EQ(n.complete_entries, 3u);
  EXPECT_EQ(n.partial_size, 0u);
  DecodedRecords out;
  decode_records(data, 10, DecodeOptions{}, out);
  EXPECT_EQ(out.records.size(), 5u);
  EXPECT_EQ(out.next_offset, n.next_offset);

  // A fetch in the middle of a batch, and one past everything the blob holds.
  EXPECT_EQ(next_offset_after_batches(data, 11).next_offset, 16);
  EXPECT_EQ(next_offset_after_batches(data, 20).next_offset, 20);

  // Offsets in a batch may have gaps (compaction): the last offset delta counts.
  Bytes gap = batch(30, 2);
  Writer(gap).patch_i32(23, 9);
  set_attributes(gap, 0);
  EXPECT_EQ(next_offset_after_batches(gap, 30).next_offset, 40);
}

TEST(NextOffsetAfterBatches, PartialEntries) {
  const Bytes big = batch(7, 50);
  const Bytes cut(big.begin(), big.begin() + 100);
  const NextFetchPosition alone = next_offset_after_batches(cut, 7);
  EXPECT_EQ(alone.next_offset, 7);
  EXPECT_EQ(alone.partial_size, big.size());
  EXPECT_EQ(alone.complete_entries, 0u);

  // Not reported when a complete batch came first: the next fetch starts after it.
  const Bytes data = concat({batch(5, 2), cut});
  const NextFetchPosition after = next_offset_after_batches(data, 5);
  EXPECT_EQ(after.next_offset, 7);
  EXPECT_EQ(after.partial_size, 0u);

  // Length field cut off: size unknown.
  EXPECT_EQ(next_offset_after_batches(ByteSpan(big).first(10), 7).partial_size, 0u);
}

TEST(NextOffsetAfterBatches, LegacySetsAndMalformedHeaders) {
  const Bytes set = concat({legacy(5, 0, "a"), legacy(6, 0, "b"), legacy(7, 1, "c")});
  EXPECT_EQ(next_offset_after_batches(set, 5).next_offset, 8);
  EXPECT_EQ(next_offset_after_batches(set, 0).next_offset, 8);

  Bytes bad = batch(8, 1);
  bad[16] = 9;
  const NextFetchPosition n = next_offset_after_batches(concat({set, bad}), 5);
  EXPECT_EQ(n.next_offset, 8);
  EXPECT_EQ(n.complete_entries, 3u);
  EXPECT_TRUE(n.malformed);
}

TEST(NextOffsetAfterBatches, BatchEndingAtTheLargestOffsetStaysThere) {
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  const Bytes b = batch(max - 2, 3);
  EXPECT_EQ(next_offset_after_batches(b, 0).next_offset, max);
}

// ----------------------------------------------------- CorruptRecordError

TEST(CorruptRecordErrorText, DetailAndLocationAreNotRepeated) {
  const CorruptRecordError e(8, CorruptionKind::crc_mismatch,
                             "CRC-32C mismatch: stored 0x00000001, computed 0x00000002");
  EXPECT_STREQ(e.what(),
               "corrupt record batch at base offset 8: CRC-32C mismatch: stored 0x00000001, computed 0x00000002");
  EXPECT_EQ(e.detail(), "CRC-32C mismatch: stored 0x00000001, computed 0x00000002");
  EXPECT_EQ(e.where(), "");

  // Naming the partition when rethrowing.
  const CorruptRecordError located(e.base_offset(), e.kind(), e.detail(), "orders-3");
  EXPECT_STREQ(located.what(),
               "corrupt record batch at base offset 8 in orders-3: CRC-32C mismatch: stored 0x00000001, computed "
               "0x00000002");
  EXPECT_EQ(located.detail(), e.detail());
  EXPECT_EQ(located.where(), "orders-3");
  EXPECT_EQ(located.kind(), CorruptionKind::crc_mismatch);

  // Re-wrapped through what(): the prefix is not doubled.
  const CorruptRecordError rewrapped(8, e.kind(), std::string(e.what()) + " (partition orders-3)");
  EXPECT_STREQ(rewrapped.what(),
               "corrupt record batch at base offset 8: CRC-32C mismatch: stored 0x00000001, computed 0x00000002 "
               "(partition orders-3)");

  // Copies share the text.
  const CorruptRecordError copy = located;
  EXPECT_STREQ(copy.what(), located.what());
  EXPECT_EQ(copy.where(), "orders-3");
}
