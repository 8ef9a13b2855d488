// RecordJsonWriter: rows, decoded values and Arrow batches written as Spark's
// JSON writer writes them (timestamps, binary, nulls), and TimeZone.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kwire/source/arrow.hpp"
#include "kwire/source/json_escape.hpp"
#include "kwire/source/json_writer.hpp"

using namespace kwire::source;

namespace {

kwire::protocol::ByteSpan bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

struct OneRow {
  std::string key = "k\x01";
  std::string value = "{\"a\":1}";
  std::vector<kwire::protocol::RecordHeader> headers;
  Row row;
  OneRow() {
    headers.push_back({"h1", kwire::protocol::Bytes{'x', 'y'}});
    headers.push_back({"h2", std::nullopt});
    row.key = bytes(key);
    row.value = bytes(value);
    row.topic = "t\"1";
    row.partition = 2;
    row.offset = 42;
    row.timestamp = 1796230710315;  // 2026-12-02T16:58:30.315Z
    row.timestamp_type = 0;
  }
};

std::string write(const RecordJsonWriter& w, const Row& row) {
  std::string out;
  w.append(out, row);
  return out;
}

}  // namespace

TEST(RecordJsonWriter, WritesSparksColumnsWithAnIsoTimestampAndTextBinaryByDefault) {
  OneRow r;
  EXPECT_EQ(write(RecordJsonWriter(), r.row),
            R"({"key":"k\u0001","value":"{\"a\":1}","topic":"t\"1","partition":2,"offset":42,)"
            R"("timestamp":"2026-12-02T16:58:30.315Z","timestampType":0})");
  r.row.headers = &r.headers;
  EXPECT_EQ(write(RecordJsonWriter(), r.row).substr(write(RecordJsonWriter(), r.row).find("\"headers\"")),
            R"("headers":[{"key":"h1","value":"xy"},{"key":"h2"}]})");
}

TEST(RecordJsonWriter, Base64IsWhatSparksJsonWriterWritesForBinaryColumns) {
  OneRow r;
  r.row.headers = &r.headers;
  JsonWriterOptions o;
  o.binary = BinaryFormat::base64;
  // base64("k\x01") = "awE=", base64("{\"a\":1}") = "eyJhIjoxfQ==", base64("xy") = "eHk=".
  EXPECT_EQ(write(RecordJsonWriter(o), r.row),
            R"({"key":"awE=","value":"eyJhIjoxfQ==","topic":"t\"1","partition":2,"offset":42,)"
            R"("timestamp":"2026-12-02T16:58:30.315Z","timestampType":0,"headers":[{"key":"h1","value":"eHk="},)"
            R"({"key":"h2"}]})");
  std::string out;
  append_base64(out, bytes(""));
  append_base64(out, bytes("f"));
  append_base64(out, bytes("fo"));
  append_base64(out, bytes("foo"));
  append_base64(out, bytes("foob"));
  EXPECT_EQ(out, "Zg==Zm8=Zm9vZm9vYg==");
}

TEST(RecordJsonWriter, NullKeyValueAndHeadersAreLeftOut) {
  Row row;
  row.topic = "t";
  row.timestamp = -1;  // no timestamp: one millisecond before the epoch, as Spark shows it
  EXPECT_EQ(write(RecordJsonWriter(), row),
            R"({"topic":"t","partition":0,"offset":0,"timestamp":"1969-12-31T23:59:59.999Z","timestampType":-1})");
}

TEST(RecordJsonWriter, RandomRowsAreWrittenAsTheBuildingBlocksWriteThem) {
  // Keys and values with quotes, backslashes, control bytes, UTF-8 and bytes
  // that are not UTF-8, null or not; column subsets; timestamps from before
  // year 0 to past 9999: every line equals one put together from the
  // building blocks.
  std::mt19937_64 rng(7);
  const std::string alphabet = std::string("ab\"\\{}:, \n\t\x01\x1f\x7f") + "\xc3\xa9\xe2\x82\xac\xff\x80";
  auto random_text = [&](std::size_t max) {
    std::string s(rng() % (max + 1), 'x');
    for (char& c : s) c = rng() % 3 == 0 ? alphabet[rng() % alphabet.size()] : static_cast<char>('a' + rng() % 26);
    return s;
  };
  const std::vector<KafkaColumn> all = all_kafka_columns();
  for (int round = 0; round < 20000; ++round) {
    JsonWriterOptions o;
    if (round % 4 == 3) {
      o.kafka_columns.clear();
      for (KafkaColumn c : all)
        if (rng() % 2) o.kafka_columns.push_back(c);
    }
    const RecordJsonWriter writer(o);
    const std::string key = random_text(40), value = random_text(round % 10 == 0 ? 300 : 60);
    const std::string topic = random_text(12);
    Row row;
    if (rng() % 5) row.key = bytes(key);
    if (rng() % 7) row.value = bytes(value);
    row.topic = topic;
    row.partition = static_cast<std::int32_t>(rng() % 1000);
    row.offset = static_cast<std::int64_t>(rng() >> (rng() % 64));
    const std::int64_t timestamps[] = {
        1796230710315, -1, 0, -62167219200001, 253402300800000, static_cast<std::int64_t>(rng() % 4102444800000)};
    row.timestamp = timestamps[rng() % 6];
    row.timestamp_type = static_cast<std::int32_t>(rng() % 3) - 1;
    std::string expected = "{";
    for (KafkaColumn c : o.kafka_columns) {
      const std::string member = fmt::format("\"{}\":", kafka_column_name(c));
      std::string v;
      switch (c) {
        case KafkaColumn::key:
          if (!row.key) continue;
          writer.append_binary(v, *row.key);
          break;
        case KafkaColumn::value:
          if (!row.value) continue;
          writer.append_binary(v, *row.value);
          break;
        case KafkaColumn::topic: v = json_string(topic); break;
        case KafkaColumn::partition: RecordJsonWriter::append_integer(v, row.partition); break;
        case KafkaColumn::offset: RecordJsonWriter::append_integer(v, row.offset); break;
        case KafkaColumn::timestamp: writer.append_timestamp_ms(v, row.timestamp); break;
        case KafkaColumn::timestamp_type: RecordJsonWriter::append_integer(v, row.timestamp_type); break;
        case KafkaColumn::headers: continue;
      }
      if (expected.size() > 1) expected += ',';
      expected += member + v;
    }
    expected += '}';
    std::string out = "prefix";
    writer.append(out, row);
    ASSERT_EQ(out, "prefix" + expected) << "round " << round;
  }
}

TEST(RecordJsonWriter, TimestampsInTheSessionTimeZone) {
  OneRow r;
  JsonWriterOptions o;
  o.kafka_columns = {KafkaColumn::timestamp};
  o.time_zone = TimeZone::parse("+05:30");
  EXPECT_EQ(write(RecordJsonWriter(o), r.row), R"({"timestamp":"2026-12-02T22:28:30.315+05:30"})");
  o.time_zone = TimeZone::parse("GMT-3");
  EXPECT_EQ(write(RecordJsonWriter(o), r.row), R"({"timestamp":"2026-12-02T13:58:30.315-03:00"})");
  if (std::getenv("TZDIR") == nullptr && std::ifstream("/usr/share/zoneinfo/Europe/Paris").good()) {
    o.time_zone = TimeZone::parse("Europe/Paris");
    EXPECT_EQ(write(RecordJsonWriter(o), r.row), R"({"timestamp":"2026-12-02T17:58:30.315+01:00"})");
    r.row.timestamp = 1782990000000;  // 2026-07-02T11:00:00Z, summer time
    EXPECT_EQ(write(RecordJsonWriter(o), r.row), R"({"timestamp":"2026-07-02T13:00:00.000+02:00"})");
  }
  EXPECT_THROW(TimeZone::parse("Mars/Olympus"), JsonWriterError);
  EXPECT_THROW(TimeZone::parse("../etc/passwd"), JsonWriterError);
  EXPECT_THROW(TimeZone::parse("+25:00"), JsonWriterError);
}

TEST(RecordJsonWriter, DecodedColumnsThenTheChosenKafkaColumns) {
  JsonValueDecoder d(Schema::parse_ddl("id BIGINT, name STRING, ts TIMESTAMP, x DOUBLE, f FLOAT, ok BOOLEAN"));
  OneRow r;
  JsonWriterOptions o;
  o.kafka_columns = parse_kafka_columns("partition, offset");
  std::string out;
  RecordJsonWriter(o).append(
      out, r.row, d.schema(),
      d.decode(R"({"id":7,"name":null,"ts":"2024-05-01T10:00:00.250Z","x":2,"f":0.1,"ok":true})"));
  EXPECT_EQ(out, R"({"id":7,"ts":"2024-05-01T10:00:00.250Z","x":2.0,"f":0.1,"ok":true,"partition":2,"offset":42})");
  out.clear();
  RecordJsonWriter(o).append(out, r.row, d.schema(), d.decode("not json"));
  EXPECT_EQ(out, R"({"_corrupt_record":"not json","partition":2,"offset":42})");
  // The row's value decoded as it is written gives the same line.
  for (std::string value : {R"({"id":7,"name":null,"ts":"2024-05-01T10:00:00.250Z","x":2,"f":0.1,"ok":true})",
                            R"({"ok":true,"id":7})", "not json", R"({"name":"n","id":1.5})"}) {
    r.row.value = bytes(value);
    std::string cells, direct;
    RecordJsonWriter(o).append(cells, r.row, d.schema(), d.decode(value));
    RecordJsonWriter(o).append(direct, r.row, d);
    EXPECT_EQ(direct, cells) << value;
  }
  r.row.value.reset();
  out.clear();
  RecordJsonWriter(o).append(out, r.row, d);
  EXPECT_EQ(out, R"({"partition":2,"offset":42})");
  EXPECT_THROW(parse_kafka_columns("offset,nope"), JsonWriterError);
  EXPECT_THROW(parse_kafka_columns("offset,offset"), JsonWriterError);
  EXPECT_TRUE(parse_kafka_columns("none").empty());
}

TEST(RecordJsonWriter, DoublesAsSparkWritesThem) {
  std::string out;
  RecordJsonWriter::append_double(out, 1.5);
  out += ' ';
  RecordJsonWriter::append_double(out, 3);
  out += ' ';
  RecordJsonWriter::append_double(out, std::nan(""));
  out += ' ';
  RecordJsonWriter::append_double(out, -1.0 / 0.0);
  EXPECT_EQ(out, R"(1.5 3.0 "NaN" "-Infinity")");
}

// The text std::to_chars gives (shortest round trip), with ".0" added
// when it has no point or exponent: what append_double must write for
// every finite double.
std::string reference_double(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string text(buf, r.ptr);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

TEST(RecordJsonWriter, DoublesAreWrittenAsTheShortestRoundTripText) {
  std::vector<double> values = {
      0.0,  -0.0,          1.0,       -1.0,   0.001,   0.0001,     0.00123,  0.1,       0.2,
      0.3,  172.2,         172.20,    32.58,  1e6,     1e7,        1e14,     1e15,      1e16,
      1e22, 123456789.125, 0.5e-3,    9.999,  99999.9, 1e-3,       1.5e-3,   2e-3,      1e5,
      1e8,  1e9,           1000000.5, 0x1p50, 0x1p49,  0x1p50 - 1, 0x1p53,   5e-324,    1.7976931348623157e308,
      100,  120,           1200,      12000,  120000,  1200000,    12000000, 0.1 + 0.2, 1.0 / 3};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    // Decimals of up to 12 fraction digits at many magnitudes, and raw bit
    // patterns.
    const auto digits = static_cast<int>(rng() % 13);
    const double scale = std::pow(10.0, digits);
    const auto mantissa = static_cast<double>(rng() % 100000000000ULL);
    values.push_back((rng() % 2 ? -1 : 1) * mantissa / scale / std::pow(10.0, static_cast<double>(rng() % 8)));
    values.push_back(static_cast<double>(rng() % 1000000) * std::pow(10.0, static_cast<double>(rng() % 12)));
    std::uint64_t bits = rng();
    double d = 0;
    std::memcpy(&d, &bits, sizeof d);
    if (std::isfinite(d)) values.push_back(d);
  }
  for (double v : values) {
    std::string out;
    RecordJsonWriter::append_double(out, v);
    ASSERT_EQ(out, reference_double(v)) << "for " << fmt::format("{:a}", v);
  }
}

TEST(RecordJsonWriter, ArrowBatchesOfTheKafkaSchemaGiveTheSameLinesAsRows) {
  OneRow r;
  r.row.headers = &r.headers;
  Row tombstone;
  tombstone.topic = "t";
  tombstone.offset = 43;
  tombstone.timestamp = 1796230710316;
  KafkaBatchBuilder b(true);
  b.append(r.row);
  b.append(tombstone);
  ArrowBatch batch = b.finish();
  ArrowSchema schema;
  export_kafka_schema(true, &schema);
  for (auto binary : {BinaryFormat::text, BinaryFormat::base64}) {
    JsonWriterOptions o;
    o.binary = binary;
    RecordJsonWriter w(o);
    std::string lines;
    EXPECT_EQ(w.append_arrow_lines(lines, schema, batch.array()), 2);
    EXPECT_EQ(lines, write(w, r.row) + "\n" + write(w, tombstone) + "\n");
  }
  schema.release(&schema);
}

TEST(RecordJsonWriter, ArrowTypesItCannotWriteAreNamed) {
  ArrowSchema child{};
  child.format = "d:10,2,256";  // decimal256
  child.name = "price";
  ArrowSchema* children[] = {&child};
  ArrowSchema top{};
  top.format = "+s";
  top.n_children = 1;
  top.children = children;
  ArrowArray col{};
  col.release = [](ArrowArray*) {};
  ArrowArray* cols[] = {&col};
  ArrowArray batch{};
  batch.n_children = 1;
  batch.children = cols;
  batch.release = [](ArrowArray*) {};
  std::string out;
  try {
    RecordJsonWriter().append_arrow_lines(out, top, batch);
    FAIL() << "no error";
  } catch (const JsonWriterError& e) {
    EXPECT_NE(std::string(e.what()).find("'price'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("d:10,2,256"), std::string::npos) << e.what();
  }
}

TEST(RecordJsonWriter, MapKeysThatAreJsonStringsAndNegativeDecimalScales) {
  // Column m: map<binary, int32> with one entry per row ("k" → 1, then none);
  // column d: decimal128(5, -2) holding unscaled 123 and 0.
  const void* no_buffers[] = {nullptr};
  ArrowSchema key_s{}, value_s{}, entries_s{}, m_s{}, d_s{}, top{};
  key_s.format = "z", key_s.name = "key";
  value_s.format = "i", value_s.name = "value";
  ArrowSchema* entry_fields[] = {&key_s, &value_s};
  entries_s.format = "+s", entries_s.name = "entries", entries_s.n_children = 2, entries_s.children = entry_fields;
  ArrowSchema* map_fields[] = {&entries_s};
  m_s.format = "+m", m_s.name = "m", m_s.n_children = 1, m_s.children = map_fields;
  d_s.format = "d:5,-2", d_s.name = "d";
  ArrowSchema* columns[] = {&m_s, &d_s};
  top.format = "+s", top.n_children = 2, top.children = columns;

  auto array = [](std::int64_t length, std::int64_t n_buffers, const void** buffers, std::int64_t n_children = 0,
                  ArrowArray** children = nullptr) {
    ArrowArray a{};
    a.length = length, a.n_buffers = n_buffers, a.buffers = buffers, a.n_children = n_children;
    a.children = children;
    a.release = [](ArrowArray*) {};
    return a;
  };
  const std::int32_t key_offsets[] = {0, 1};
  const char key_data[] = "k";
  const void* key_buffers[] = {nullptr, key_offsets, key_data};
  ArrowArray key = array(1, 3, key_buffers);
  const std::int32_t value_data[] = {1};
  const void* value_buffers[] = {nullptr, value_data};
  ArrowArray value = array(1, 2, value_buffers);
  ArrowArray* entry_arrays[] = {&key, &value};
  ArrowArray entries = array(1, 1, no_buffers, 2, entry_arrays);
  const std::int32_t map_offsets[] = {0, 1, 1};
  const void* map_buffers[] = {nullptr, map_offsets};
  ArrowArray* map_children[] = {&entries};
  ArrowArray m = array(2, 2, map_buffers, 1, map_children);
  std::uint8_t decimals[32] = {};
  decimals[0] = 123;
  const void* d_buffers[] = {nullptr, decimals};
  ArrowArray d = array(2, 2, d_buffers);
  ArrowArray* column_arrays[] = {&m, &d};
  ArrowArray batch = array(2, 1, no_buffers, 2, column_arrays);

  std::string out;
  EXPECT_EQ(RecordJsonWriter().append_arrow_lines(out, top, batch), 2);
  EXPECT_EQ(out, "{\"m\":{\"k\":1},\"d\":12300}\n{\"m\":{},\"d\":0}\n");
}
