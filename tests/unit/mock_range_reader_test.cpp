// RangeReader on the mock cluster: gaps in the log (as compaction leaves
// them) classified from the Fetch answer without a ListOffsets per gap, and
// an end past the latest offset handled as Spark's reader does (data loss or
// a skipped span) without waiting kafkaConsumer.pollTimeoutMs.
#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kwire/client/consumer.hpp"
#include "kwire/protocol/crc32c.hpp"
#include "kwire/protocol/record_batch.hpp"
#include "kwire/source/range_reader.hpp"
#include "mock_source_support.hpp"

using namespace kwire::source;
using kwire::mock::MockCluster;
using kwire::protocol::ApiKey;
using kwire::protocol::Bytes;
using kwire_test::BatchSink;

namespace {

// One record with value "v<offset>" in a batch whose lastOffsetDelta is
// `span - 1`: the offsets after the record are a gap, as a batch of `span`
// records keeps its offsets when compaction removes all but the first.
Bytes compacted_batch(std::int64_t offset, int span) {
  kwire::protocol::ProducerRecord r;
  const std::string v = "v" + std::to_string(offset);
  r.value = Bytes(v.begin(), v.end());
  r.timestamp = 1000;
  Bytes out;
  kwire::protocol::encode_record_batch(std::span(&r, 1), {}, out);
  const auto delta = static_cast<std::uint32_t>(span - 1);
  for (int i = 0; i < 4; ++i) out[23 + i] = static_cast<std::uint8_t>(delta >> (24 - 8 * i));
  // The CRC-32C covers the batch from its attributes (byte 21) on.
  const std::uint32_t crc = kwire::protocol::crc32c(kwire::protocol::ByteSpan(out).subspan(21));
  for (int i = 0; i < 4; ++i) out[17 + i] = static_cast<std::uint8_t>(crc >> (24 - 8 * i));
  return out;
}

std::map<std::string, std::string> reader_props(const MockCluster& c) {
  return RangeReader::consumer_properties({{"bootstrap.servers", c.bootstrap_servers()},
                                           {"fetch.max.wait.ms", "20"},
                                           {"retry.backoff.ms", "20"},
                                           {"max.partition.fetch.bytes", "4096"}});
}

RangeReaderOptions reader_options(bool fail_on_data_loss) {
  RangeReaderOptions o;
  o.fail_on_data_loss = fail_on_data_loss;
  o.poll_timeout_ms = 20000;
  o.group_id = "g";
  return o;
}

OffsetRange range(std::int64_t from, std::int64_t until) {
  return OffsetRange{TopicPartition{"t", 0}, from, until, std::nullopt};
}

}  // namespace

TEST(MockRangeReader, CompactionGapsAreSkippedWithoutAListOffsetsPerGap) {
  MockCluster c;
  c.create_topic("t", 1);
  // Offsets 0, 3, 6, ... 597: 200 records, 199 gaps of two offsets.
  for (int i = 0; i < 200; ++i) c.append_batch_bytes("t", 0, compacted_batch(i * 3, 3));
  ASSERT_EQ(c.high_watermark("t", 0), 600);
  kwire::client::Consumer consumer(reader_props(c));
  BatchSink sink;
  c.clear_requests();
  sink.begin_batch(0);
  auto read = RangeReader(consumer, reader_options(true)).read({range(0, 300), range(300, 600)}, sink);
  sink.commit_batch(0);
  EXPECT_EQ(read.rows, 200);
  EXPECT_EQ(read.data_loss, 0);
  EXPECT_TRUE(read.warnings.empty());
  ASSERT_EQ(sink.rows.size(), 200u);
  EXPECT_EQ(sink.rows[1], "t-0@3=v3");
  EXPECT_EQ(sink.rows.back(), "t-0@597=v597");
  // The log start offset of each Fetch answer (0) says the gaps were never
  // visible: no ListOffsets at all.
  EXPECT_TRUE(c.requests(ApiKey::list_offsets).empty());
  EXPECT_GT(c.requests(ApiKey::fetch).size(), 1u);
  // The position limit stopped the read at the end: the partition is paused
  // there, at 600.
  EXPECT_EQ(consumer.known_position({"t", 0}), 600);
}

TEST(MockRangeReader, OffsetsAgedOutBeforeTheRangeIsReadAreSkippedToTheEarliest) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  kwire::client::Consumer consumer(reader_props(c));
  BatchSink sink;
  sink.begin_batch(0);
  // First read [0, 2): the position stays at 2.
  RangeReader(consumer, reader_options(false)).read({range(0, 2)}, sink);
  // Offsets 2-4 age out and more records come; a new consumer (a retried
  // task's) has nothing prefetched: OFFSET_OUT_OF_RANGE at 2, and the read
  // goes on from the earliest offset.
  c.append_values("t", 0, 5);
  c.set_log_start_offset("t", 0, 5);
  kwire::client::Consumer fresh(reader_props(c));
  auto read = RangeReader(fresh, reader_options(false)).read({range(2, 10)}, sink);
  sink.commit_batch(0);
  EXPECT_EQ(read.rows, 5);
  EXPECT_EQ(read.offset_out_of_range, 3);
  ASSERT_EQ(read.warnings.size(), 1u);
  EXPECT_NE(read.warnings[0].find("Could not read records in offset [2, 5)"), std::string::npos) << read.warnings[0];
  EXPECT_EQ(sink.rows, (std::vector<std::string>{"t-0@0=v0", "t-0@1=v1", "t-0@5=v5", "t-0@6=v6", "t-0@7=v7", "t-0@8=v8",
                                                 "t-0@9=v9"}));
}

TEST(MockRangeReader, AnEndPastTheLatestOffsetIsSkippedWithAWarningWithoutWaiting) {
  MockCluster c;
  c.create_topic("t", 2);
  c.append_values("t", 0, 40);
  c.append_values("t", 1, 3);
  kwire::client::Consumer consumer(reader_props(c));
  BatchSink sink;
  const auto started = std::chrono::steady_clock::now();
  sink.begin_batch(0);
  auto read = RangeReader(consumer, reader_options(false))
                  .read({range(0, 45), OffsetRange{TopicPartition{"t", 1}, 0, 3, std::nullopt}}, sink);
  sink.commit_batch(0);
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(read.rows, 43);
  EXPECT_EQ(sink.rows.size(), 43u);
  EXPECT_EQ(read.offset_out_of_range, 5);
  EXPECT_EQ(read.data_loss, 1);
  ASSERT_EQ(read.warnings.size(), 1u);
  EXPECT_NE(read.warnings[0].find("KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE"), std::string::npos);
  EXPECT_NE(read.warnings[0].find("Could not read records in offset [40, 45) for topic partition t-0"),
            std::string::npos)
      << read.warnings[0];
  EXPECT_NE(read.warnings[0].find("records in [40, 45) will be skipped"), std::string::npos) << read.warnings[0];
  // Far below the poll timeout (20 s): the Fetch answer showed the log end.
  EXPECT_LT(took, std::chrono::seconds(10));
}

TEST(MockRangeReader, AnEndPastTheLatestOffsetIsDataLossWithFailOnDataLoss) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 40);
  for (auto [from, until] : {std::pair<std::int64_t, std::int64_t>{0, 45}, {42, 45}}) {
    kwire::client::Consumer consumer(reader_props(c));
    BatchSink sink;
    sink.begin_batch(0);
    try {
      RangeReader(consumer, reader_options(true)).read({range(from, until)}, sink);
      FAIL() << "expected DataLossError for [" << from << ", " << until << ")";
    } catch (const DataLossError& e) {
      EXPECT_EQ(e.kind(), DataLossKind::could_not_read_offset_range);
      // From the position the log ends at (40), or the range's start when
      // that is already past it (an OFFSET_OUT_OF_RANGE answer).
      EXPECT_EQ(e.start_offset(), std::max<std::int64_t>(from, 40));
      EXPECT_EQ(e.end_offset(), 45);
      EXPECT_NE(std::string(e.what()).find("with consumer group g."), std::string::npos) << e.what();
    }
  }
}
