// The Arrow C Data Interface export: schema format strings, buffer layouts,
// validity bitmaps, release callbacks and the stream.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kwire/source/arrow.hpp"

namespace {

using kwire::source::ArrowBatch;
using kwire::source::KafkaBatchBuilder;
using kwire::source::Row;

std::vector<std::uint8_t> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }

template <class T>
T value_at(const ArrowArray& a, int buffer, std::int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const std::uint8_t*>(a.buffers[buffer]) + i * sizeof(T), sizeof(T));
  return v;
}

bool valid(const ArrowArray& a, std::int64_t i) {
  if (a.buffers[0] == nullptr) return true;
  return (static_cast<const std::uint8_t*>(a.buffers[0])[i / 8] >> (i % 8)) & 1;
}

std::string binary_at(const ArrowArray& a, std::int64_t i) {
  const auto from = value_at<std::int32_t>(a, 1, i);
  const auto to = value_at<std::int32_t>(a, 1, i + 1);
  return std::string(static_cast<const char*>(a.buffers[2]) + from, static_cast<std::size_t>(to - from));
}

TEST(ArrowSchemaExport, KafkaSchemaMatchesSparkColumnsAndFormats) {
  ArrowSchema s;
  kwire::source::export_kafka_schema(true, &s);
  EXPECT_STREQ(s.format, "+s");
  ASSERT_EQ(s.n_children, 8);
  const char* names[] = {"key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"};
  const char* formats[] = {"z", "z", "u", "i", "l", "tsu:UTC", "i", "+l"};
  for (int i = 0; i < 8; ++i) {
    EXPECT_STREQ(s.children[i]->name, names[i]);
    EXPECT_STREQ(s.children[i]->format, formats[i]);
    EXPECT_EQ(s.children[i]->flags & ARROW_FLAG_NULLABLE, ARROW_FLAG_NULLABLE);
  }
  const ArrowSchema& entry = *s.children[7]->children[0];
  EXPECT_STREQ(entry.format, "+s");
  ASSERT_EQ(entry.n_children, 2);
  EXPECT_STREQ(entry.children[0]->format, "u");
  EXPECT_STREQ(entry.children[0]->name, "key");
  EXPECT_STREQ(entry.children[1]->format, "z");
  s.release(&s);
  EXPECT_EQ(s.release, nullptr);

  kwire::source::export_kafka_schema(false, &s);
  EXPECT_EQ(s.n_children, 7);
  s.release(&s);
}

TEST(ArrowBatchExport, NullAndEmptyKeysValuesAndHeadersKeepTheirLayout) {
  const auto k1 = bytes_of("k1");
  const auto v1 = bytes_of("hello");
  const auto empty = bytes_of("");
  std::vector<kwire::protocol::RecordHeader> headers{{"h1", kwire::protocol::Bytes{'x', 'y'}}, {"h2", std::nullopt}};
  KafkaBatchBuilder builder(true);
  Row r;
  r.topic = "events";
  r.partition = 3;
  r.timestamp_type = 0;
  r.key = std::span<const std::uint8_t>(k1);  // row 0: key "k1", value "hello", 2 headers
  r.value = std::span<const std::uint8_t>(v1);
  r.offset = 10;
  r.timestamp = 1700000000123;
  r.headers = &headers;
  builder.append(r);
  r.key = std::nullopt;  // row 1: null key, null value, no headers
  r.value = std::nullopt;
  r.headers = nullptr;
  r.offset = 11;
  builder.append(r);
  r.key = std::span<const std::uint8_t>(empty);  // row 2: empty key, empty value
  r.value = std::span<const std::uint8_t>(empty);
  r.offset = 12;
  r.timestamp = -1;
  builder.append(r);
  EXPECT_EQ(builder.rows(), 3);

  ArrowBatch batch = builder.finish();
  EXPECT_EQ(builder.rows(), 0);
  const ArrowArray& a = batch.array();
  ASSERT_NE(a.release, nullptr);
  EXPECT_EQ(a.length, 3);
  EXPECT_EQ(a.null_count, 0);
  EXPECT_EQ(a.n_buffers, 1);
  EXPECT_EQ(a.buffers[0], nullptr);
  ASSERT_EQ(a.n_children, 8);

  const ArrowArray& key = *a.children[0];
  EXPECT_EQ(key.n_buffers, 3);
  EXPECT_EQ(key.null_count, 1);
  ASSERT_NE(key.buffers[0], nullptr);
  EXPECT_TRUE(valid(key, 0));
  EXPECT_FALSE(valid(key, 1));
  EXPECT_TRUE(valid(key, 2));
  EXPECT_EQ(value_at<std::int32_t>(key, 1, 0), 0);
  EXPECT_EQ(value_at<std::int32_t>(key, 1, 1), 2);
  EXPECT_EQ(value_at<std::int32_t>(key, 1, 2), 2);
  EXPECT_EQ(value_at<std::int32_t>(key, 1, 3), 2);
  EXPECT_EQ(binary_at(key, 0), "k1");
  EXPECT_EQ(binary_at(key, 2), "");

  const ArrowArray& value = *a.children[1];
  EXPECT_EQ(value.null_count, 1);
  EXPECT_EQ(binary_at(value, 0), "hello");
  EXPECT_FALSE(valid(value, 1));

  const ArrowArray& topic = *a.children[2];
  EXPECT_EQ(topic.null_count, 0);
  EXPECT_EQ(topic.buffers[0], nullptr);
  EXPECT_EQ(binary_at(topic, 1), "events");
  EXPECT_EQ(value_at<std::int32_t>(*a.children[3], 1, 2), 3);
  EXPECT_EQ(value_at<std::int64_t>(*a.children[4], 1, 1), 11);
  EXPECT_EQ(value_at<std::int64_t>(*a.children[5], 1, 0), 1700000000123000);
  EXPECT_EQ(value_at<std::int64_t>(*a.children[5], 1, 2), -1000);
  EXPECT_EQ(value_at<std::int32_t>(*a.children[6], 1, 0), 0);

  const ArrowArray& list = *a.children[7];
  EXPECT_EQ(list.n_buffers, 2);
  EXPECT_EQ(list.null_count, 2);  // rows without headers are null, as in Spark
  EXPECT_TRUE(valid(list, 0));
  EXPECT_FALSE(valid(list, 1));
  EXPECT_EQ(value_at<std::int32_t>(list, 1, 0), 0);
  EXPECT_EQ(value_at<std::int32_t>(list, 1, 1), 2);
  EXPECT_EQ(value_at<std::int32_t>(list, 1, 3), 2);
  ASSERT_EQ(list.n_children, 1);
  const ArrowArray& entries = *list.children[0];
  EXPECT_EQ(entries.length, 2);
  EXPECT_EQ(binary_at(*entries.children[0], 1), "h2");
  const ArrowArray& hvalue = *entries.children[1];
  EXPECT_EQ(hvalue.null_count, 1);
  EXPECT_EQ(binary_at(hvalue, 0), "xy");
  EXPECT_FALSE(valid(hvalue, 1));
}

TEST(ArrowBatchExport, AChildMovedOutLivesAfterItsParentIsReleased) {
  const auto k = bytes_of("abc");
  KafkaBatchBuilder builder(false);
  Row r;
  r.topic = "t";
  r.key = std::span<const std::uint8_t>(k);
  builder.append(r);
  ArrowBatch batch = builder.finish();
  ArrowArray key = *batch.array().children[0];  // move the child out, as the spec allows
  batch.array().children[0]->release = nullptr;
  batch = ArrowBatch();  // releases the parent
  EXPECT_EQ(binary_at(key, 0), "abc");
  key.release(&key);
  EXPECT_EQ(key.release, nullptr);
}

TEST(ArrowBatchExport, EmptyBatchHasNonNullOffsetsAndData) {
  KafkaBatchBuilder builder(false);
  ArrowBatch batch = builder.finish();
  EXPECT_EQ(batch.rows(), 0);
  const ArrowArray& key = *batch.array().children[0];
  EXPECT_EQ(key.length, 0);
  ASSERT_NE(key.buffers[1], nullptr);
  EXPECT_EQ(value_at<std::int32_t>(key, 1, 0), 0);
  EXPECT_NE(key.buffers[2], nullptr);
}

TEST(ArrowDecodedExport, TypedColumnsAndCorruptRecord) {
  auto schema = kwire::source::Schema::parse_ddl("user STRING, amount DOUBLE, n INT, ok BOOLEAN, at TIMESTAMP");
  kwire::source::JsonValueDecoder decoder(schema);
  kwire::source::DecodedBatchBuilder builder(schema);
  builder.append(decoder.decode(R"({"user":"u1","amount":2.5,"n":7,"ok":true,"at":"2024-05-01T10:00:00Z"})"));
  builder.append(decoder.decode("not json"));
  ArrowSchema s;
  builder.export_schema(&s);
  ASSERT_EQ(s.n_children, 6);
  EXPECT_STREQ(s.children[1]->format, "g");
  EXPECT_STREQ(s.children[2]->format, "i");
  EXPECT_STREQ(s.children[3]->format, "b");
  EXPECT_STREQ(s.children[4]->format, "tsu:UTC");
  EXPECT_STREQ(s.children[5]->name, "_corrupt_record");
  s.release(&s);
  ArrowBatch batch = builder.finish();
  const ArrowArray& a = batch.array();
  EXPECT_EQ(a.length, 2);
  EXPECT_EQ(binary_at(*a.children[0], 0), "u1");
  EXPECT_FALSE(valid(*a.children[0], 1));
  EXPECT_EQ(value_at<double>(*a.children[1], 1, 0), 2.5);
  EXPECT_EQ(value_at<std::int32_t>(*a.children[2], 1, 0), 7);
  EXPECT_EQ(static_cast<const std::uint8_t*>(a.children[3]->buffers[1])[0] & 1, 1);
  EXPECT_EQ(value_at<std::int64_t>(*a.children[4], 1, 0), 1714557600000000);
  const ArrowArray& corrupt = *a.children[5];
  EXPECT_EQ(corrupt.null_count, 1);
  EXPECT_FALSE(valid(corrupt, 0));
  EXPECT_EQ(binary_at(corrupt, 1), "not json");
}

TEST(ArrowStreamExport, HandsOutEachBatchOnceThenEnds) {
  kwire::source::ArrowSink sink(false, 2);
  sink.begin_batch(0);
  std::vector<Row> rows(5);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].topic = "t";
    rows[i].offset = static_cast<std::int64_t>(i);
  }
  sink.write(rows);
  EXPECT_EQ(sink.commit_batch(0), 5);
  std::vector<ArrowBatch> batches = sink.take_batches();
  ASSERT_EQ(batches.size(), 3u);  // 2 + 2 + 1 rows

  ArrowSchema schema;
  kwire::source::export_kafka_schema(false, &schema);
  ArrowArrayStream stream;
  kwire::source::export_stream(&schema, std::move(batches), &stream);
  EXPECT_EQ(schema.release, nullptr);  // the stream took it
  ArrowSchema got;
  ASSERT_EQ(stream.get_schema(&stream, &got), 0);
  EXPECT_EQ(got.n_children, 7);
  got.release(&got);
  std::vector<std::int64_t> lengths;
  ArrowArray a;
  for (;;) {
    ASSERT_EQ(stream.get_next(&stream, &a), 0);
    if (a.release == nullptr) break;
    lengths.push_back(a.length);
    a.release(&a);
    EXPECT_EQ(a.release, nullptr);
  }
  EXPECT_EQ(lengths, (std::vector<std::int64_t>{2, 2, 1}));
  EXPECT_EQ(stream.get_last_error(&stream), nullptr);
  stream.release(&stream);
  EXPECT_EQ(stream.release, nullptr);
}

TEST(ArrowStreamExport, ReleasingTheStreamFreesBatchesNotHandedOut) {
  kwire::source::ArrowSink sink(true);
  sink.begin_batch(0);
  std::vector<Row> rows(3);
  for (Row& r : rows) r.topic = "t";
  sink.write(rows);
  sink.commit_batch(0);
  ArrowSchema schema;
  kwire::source::export_kafka_schema(true, &schema);
  ArrowArrayStream stream;
  kwire::source::export_stream(&schema, sink.take_batches(), &stream);
  stream.release(&stream);  // under ASan, a leak here fails the test
  EXPECT_EQ(stream.release, nullptr);
}

}  // namespace

namespace {

TEST(ArrowSinkInterrupt, WriteThrowsOnceTheCheckSaysStop) {
  bool stop = false;
  kwire::source::ArrowSink sink(false, kwire::source::ArrowSink::kDefaultMaxRows,
                                kwire::source::ArrowSink::kDefaultMaxBytes, [&] { return stop; });
  sink.begin_batch(0);
  std::vector<Row> rows(2);
  for (Row& r : rows) r.topic = "t";
  sink.write(rows);
  stop = true;
  EXPECT_THROW(sink.write(rows), kwire::source::ReadInterrupted);
  sink.begin_batch(0);  // a replay starts clean
  stop = false;
  sink.write(rows);
  EXPECT_EQ(sink.commit_batch(0), 2);
}

}  // namespace
