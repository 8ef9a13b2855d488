#include <gtest/gtest.h>

#include "kwire/protocol/log_inspect.hpp"

using namespace kwire::protocol;

namespace {
Bytes batch(std::int64_t base, int n, Compression c, const std::string& prefix) {
  std::vector<ProducerRecord> recs;
  for (int i = 0; i < n; ++i) {
    std::string v = prefix + std::to_string(i);
    ProducerRecord r;
    r.value = Bytes(v.begin(), v.end());
    r.timestamp = 1000 + i;
    if (i == 0) r.headers.push_back({"h", Bytes{'1'}});
    recs.push_back(std::move(r));
  }
  BatchOptions o;
  o.compression = c;
  o.base_offset = base;
  Bytes out;
  encode_record_batch(recs, o, out);
  return out;
}
std::string str(const std::optional<Bytes>& b) { return b ? std::string(b->begin(), b->end()) : "<null>"; }
}  // namespace

TEST(LogInspect, DescribesEveryBatchAndRecord) {
  Bytes data = batch(0, 3, Compression::none, "a");
  Bytes second = batch(3, 2, Compression::gzip, "b");
  data.insert(data.end(), second.begin(), second.end());
  auto r = inspect_log(data);
  ASSERT_FALSE(r.error) << *r.error;
  EXPECT_FALSE(r.truncated_tail);
  ASSERT_EQ(r.batches.size(), 2u);
  EXPECT_EQ(r.batches[0].header.magic, 2);
  EXPECT_EQ(r.batches[0].header.base_offset, 0);
  EXPECT_EQ(r.batches[0].header.last_offset_delta, 2);
  EXPECT_EQ(r.batches[0].header.records_count, 3);
  EXPECT_EQ(r.batches[0].first_offset, 0);
  EXPECT_EQ(r.batches[0].last_offset, 2);
  EXPECT_EQ(r.batches[0].record_count, 3);
  EXPECT_TRUE(r.batches[0].crc_valid);
  EXPECT_EQ(r.batches[0].header.compression(), Compression::none);
  EXPECT_EQ(r.batches[0].header.base_timestamp, 1000);
  EXPECT_EQ(r.batches[0].header.max_timestamp, 1002);
  ASSERT_EQ(r.batches[0].records.size(), 3u);
  EXPECT_EQ(str(r.batches[0].records[2].value), "a2");
  EXPECT_EQ(r.batches[0].records[0].headers.at(0).key, "h");
  EXPECT_EQ(r.batches[1].position, r.batches[0].size);
  EXPECT_EQ(r.batches[1].header.compression(), Compression::gzip);
  EXPECT_EQ(r.batches[1].size, r.batches[1].header.size());
  EXPECT_EQ(r.batches[1].records.at(1).offset, 4);
  EXPECT_EQ(str(r.batches[1].records[1].value), "b1");
}

TEST(LogInspect, BadCrcIsReportedButRecordsStillShown) {
  Bytes data = batch(7, 2, Compression::none, "x");
  data[data.size() - 2] ^= 0x01;  // a byte inside the last record
  auto r = inspect_log(data);
  ASSERT_EQ(r.batches.size(), 1u);
  EXPECT_FALSE(r.batches[0].crc_valid);
}

TEST(LogInspect, TruncatedTailAndBadMagicStopWithPosition) {
  Bytes data = batch(0, 2, Compression::lz4, "t");
  Bytes partial = batch(2, 2, Compression::none, "u");
  std::size_t first = data.size();
  data.insert(data.end(), partial.begin(), partial.begin() + 30);
  auto r = inspect_log(data);
  EXPECT_FALSE(r.error);
  EXPECT_TRUE(r.truncated_tail);
  ASSERT_EQ(r.batches.size(), 1u);

  Bytes bad = batch(0, 1, Compression::none, "m");
  Bytes more = batch(1, 1, Compression::none, "n");
  std::size_t second = bad.size();
  more[16] = 9;  // magic
  bad.insert(bad.end(), more.begin(), more.end());
  auto r2 = inspect_log(bad);
  ASSERT_TRUE(r2.error);
  EXPECT_EQ(r2.error_position, second);
  EXPECT_NE(r2.error->find("unknown magic byte 9"), std::string::npos) << *r2.error;
  EXPECT_NE(r2.error->find("byte " + std::to_string(second)), std::string::npos);
  EXPECT_EQ(r2.batches.size(), 1u);
  (void)first;
}

TEST(LogInspect, NeverCrashesOnAnyPrefixOrFlippedByte) {
  Bytes data = batch(0, 4, Compression::zstd, "z");
  Bytes more = batch(4, 3, Compression::snappy, "s");
  data.insert(data.end(), more.begin(), more.end());
  for (std::size_t n = 0; n <= data.size(); ++n) (void)inspect_log(ByteSpan(data).first(n));
  for (std::size_t i = 0; i < data.size(); ++i) {
    Bytes copy = data;
    copy[i] ^= 0xa5;
    (void)inspect_log(copy, 1 << 20);
  }
  SUCCEED();
}
