// The producer's side of record batches: RecordBatchBuilder's bounded
// append, its checksum of records as they are appended, the ownership of a
// finished batch, and Produce request frames written with the batches left
// out (for a gather write).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kwire/protocol/crc32c.hpp"
#include "kwire/protocol/header.hpp"
#include "kwire/protocol/messages/produce.hpp"
#include "kwire/protocol/record_batch.hpp"

using namespace kwire::protocol;

namespace {

ByteSpan span(const std::string& s) { return ByteSpan(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()); }

std::string letters(std::size_t n, std::mt19937& rng) {
  std::string s(n, 'A');
  for (auto& c : s) c = static_cast<char>('A' + rng() % 26);
  return s;
}

BatchOptions producer_options() {
  BatchOptions o;
  o.producer_id = 4711;
  o.producer_epoch = 3;
  o.base_sequence = 120;
  return o;
}

// Appends the same records to two builders, one checksumming as it goes.
void fill(RecordBatchBuilder& a, RecordBatchBuilder& b, std::size_t records, std::size_t size, std::mt19937& rng) {
  for (std::size_t i = 0; i < records; ++i) {
    const std::string key = "k" + std::to_string(i);
    const std::string value = letters(size + rng() % 7, rng);
    const std::vector<RecordHeader> headers =
        i % 5 ? std::vector<RecordHeader>{} : std::vector<RecordHeader>{{"h", Bytes{1, 2, 3}}};
    const auto ts = static_cast<std::int64_t>(1'700'000'000'000 + i);
    a.append(ts, span(key), span(value), headers);
    b.append(ts, span(key), span(value), headers);
  }
}

}  // namespace

TEST(Crc32c, CombineEqualsTheWhole) {
  std::mt19937 rng(7);
  Bytes data(70'000);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  for (std::size_t cut : {0u, 1u, 40u, 61u, 4096u, 33'333u, 69'999u, 70'000u}) {
    const ByteSpan a(data.data(), cut), b(data.data() + cut, data.size() - cut);
    EXPECT_EQ(crc32c_combine(crc32c(a), crc32c(b), b.size()), crc32c(ByteSpan(data))) << cut;
  }
}

TEST(BatchBuilder, ChecksumWhileAppendingGivesTheSameBatch) {
  std::mt19937 rng(11);
  // Sizes below, at and well past the step at which appended records are checksummed.
  const std::vector<std::pair<std::size_t, std::size_t>> shapes = {
      {1, 10}, {3, 100}, {170, 100}, {40, 1024}, {900, 1024}};
  for (const auto& [records, size] : shapes) {
    RecordBatchBuilder plain, checked;
    checked.checksum_while_appending(true);
    for (int round = 0; round < 2; ++round) {  // the second round reuses the buffers after clear()
      plain.clear();
      checked.clear();
      fill(plain, checked, records, size, rng);
      const auto p = plain.finish(producer_options());
      const Bytes expected(p.begin(), p.end());
      const auto c = checked.finish(producer_options());
      EXPECT_EQ(Bytes(c.begin(), c.end()), expected) << records << " x " << size;
      DecodedRecords d;
      decode_records(ByteSpan(c.data(), c.size()), 0, {}, d);  // checks the CRC
      EXPECT_EQ(d.records.size(), records);
    }
  }
}

TEST(BatchBuilder, AppendWithinStopsAtTheLimit) {
  const std::string value(100, 'v');
  RecordBatchBuilder b;
  const std::size_t first = RecordBatchBuilder::first_record_size(std::nullopt, span(value), {});
  EXPECT_EQ(first, b.record_size(5, std::nullopt, span(value), {}));
  // The first record counts the batch header too.
  EXPECT_FALSE(b.append_within(kRecordBatchHeaderSize + first - 1, 5, std::nullopt, span(value), {}));
  EXPECT_EQ(b.count(), 0);
  ASSERT_TRUE(b.append_within(kRecordBatchHeaderSize + first, 5, std::nullopt, span(value), {}));
  EXPECT_EQ(b.size(), kRecordBatchHeaderSize + first);
  const std::size_t next = b.record_size(6, std::nullopt, span(value), {});
  EXPECT_FALSE(b.append_within(b.size() + next - 1, 6, std::nullopt, span(value), {}));
  EXPECT_EQ(b.count(), 1);
  const auto ts = b.append_within(b.size() + next, 6, std::nullopt, span(value), {});
  ASSERT_TRUE(ts);
  EXPECT_EQ(*ts, 6);
  EXPECT_EQ(b.count(), 2);
  DecodedRecords d;
  decode_records(b.finish({}), 0, {}, d);
  ASSERT_EQ(d.records.size(), 2u);
  EXPECT_EQ(d.records[1].timestamp, 6);
}

TEST(BatchBuilder, FinishedOwnerKeepsTheBatchAcrossReuse) {
  for (const auto codec : {Compression::none, Compression::lz4}) {
    RecordBatchBuilder b;
    b.checksum_while_appending(codec == Compression::none);
    const std::string value(300, 'x');
    for (int i = 0; i < 50; ++i) b.append(1000 + i, std::nullopt, span(value), {});
    BatchOptions o = producer_options();
    o.compression = codec;
    const auto first = b.finish(o);
    const Bytes copy(first.begin(), first.end());
    auto owner = b.finished_owner();
    // Reused while the first batch is held: it must not be written over.
    b.clear();
    const std::string other(300, 'y');
    for (int i = 0; i < 80; ++i) b.append(2000 + i, std::nullopt, span(other), {});
    const auto second = b.finish(o);
    EXPECT_NE(second.data(), first.data());
    EXPECT_EQ(Bytes(first.begin(), first.end()), copy) << compression_name(codec);
    owner.reset();
    // Once let go, clear() keeps the buffer again.
    auto again = b.finished_owner();
    again.reset();
    const auto capacity = b.capacity();
    b.clear();
    EXPECT_EQ(b.capacity(), capacity);
  }
}

TEST(BatchBuilder, GatherFrameEqualsTheCopiedFrame) {
  std::mt19937 rng(3);
  std::vector<Bytes> batches;
  for (int i = 0; i < 5; ++i) {
    RecordBatchBuilder b;
    for (int r = 0; r < 3 + i; ++r) b.append(100 + r, std::nullopt, span(letters(50 + 10 * i, rng)), {});
    const auto s = b.finish(producer_options());
    batches.emplace_back(s.begin(), s.end());
  }
  ProduceRequest req;
  req.transactional_id = "txn";
  req.acks = -1;
  req.timeout_ms = 30000;
  for (int t = 0; t < 2; ++t) {
    ProduceRequest::TopicProduceData td;
    td.name = "topic-" + std::to_string(t);
    td.topic_id = Uuid::random();
    for (int p = 0; p < (t ? 2 : 3); ++p) {
      ProduceRequest::PartitionProduceData pd;
      pd.index = p;
      pd.records.data = ByteSpan(batches[static_cast<std::size_t>(t * 3 + p)]);
      td.partition_data.push_back(std::move(pd));
    }
    req.topic_data.push_back(std::move(td));
  }
  ProduceRequest::PartitionProduceData empty;  // a null RECORDS stays in the frame
  empty.index = 9;
  req.topic_data.back().partition_data.push_back(empty);
  for (std::int16_t version = 3; version <= ProduceRequest::max_version; ++version) {
    const Bytes whole = encode_request_frame(req, version, 42, std::optional<std::string>("client"));
    Bytes frame;
    std::vector<Writer::Gap> gaps;
    encode_request_frame_gather(frame, gaps, req, version, 42, std::optional<std::string>("client"));
    ASSERT_EQ(gaps.size(), 5u) << version;
    Bytes joined;
    std::size_t at = 0;
    for (const auto& g : gaps) {
      joined.insert(joined.end(), frame.begin() + static_cast<std::ptrdiff_t>(at),
                    frame.begin() + static_cast<std::ptrdiff_t>(g.at));
      joined.insert(joined.end(), g.bytes.begin(), g.bytes.end());
      at = g.at;
    }
    joined.insert(joined.end(), frame.begin() + static_cast<std::ptrdiff_t>(at), frame.end());
    EXPECT_EQ(joined, whole) << "version " << version;
    EXPECT_LT(frame.size(), 200u);
  }
}
