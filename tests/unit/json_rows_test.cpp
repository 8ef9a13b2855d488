// JsonRowBuilder: JSON text -> Arrow rows of an Avro schema's shape ->
// AvroEncoder, checked byte for byte and read back with AvroDecoder and the
// JSON writer (what `kwire produce --value-format avro` and `kwire stream
// --value-format avro` do at each end).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "avro_test_support.hpp"
#include "kwire/source/avro.hpp"
#include "kwire/source/json_rows.hpp"
#include "kwire/source/json_writer.hpp"

namespace {

using namespace kwire::source;
using kwire_avro_test::Enc;

struct Schema {
  ArrowSchema s{};
  explicit Schema(const AvroSchema& avro) { AvroDecoder(avro).export_schema(&s); }
  ~Schema() {
    if (s.release) s.release(&s);
  }
};

// Each JSON text encoded as one Avro value.
std::vector<std::vector<std::uint8_t>> encode(const std::string& avro_json, const std::vector<std::string>& lines) {
  const AvroSchema avro = AvroSchema::parse(avro_json);
  Schema shape(avro);
  JsonRowBuilder rows(shape.s, !avro.is_record());
  for (const auto& l : lines) rows.append(l);
  ArrowBatch batch = rows.finish();
  AvroEncoder encoder(avro);
  ArrowBatch out = encoder.encode(shape.s, batch.array());
  const ArrowArray& v = *out.array().children[0];
  const auto* offsets = static_cast<const std::int32_t*>(v.buffers[1]);
  const auto* data = static_cast<const std::uint8_t*>(v.buffers[2]);
  std::vector<std::vector<std::uint8_t>> values;
  for (std::int64_t i = 0; i < v.length; ++i) values.emplace_back(data + offsets[i], data + offsets[i + 1]);
  return values;
}

// The values decoded again and written as kwire stream writes them.
std::string round_trip(const std::string& avro_json, const std::vector<std::string>& lines) {
  const AvroSchema avro = AvroSchema::parse(avro_json);
  AvroDecoder decoder(avro);
  for (const auto& v : encode(avro_json, lines)) EXPECT_TRUE(decoder.append(std::span<const std::uint8_t>(v)));
  ArrowBatch batch = decoder.finish();
  Schema shape(avro);
  JsonWriterOptions options;
  options.binary = BinaryFormat::base64;
  std::string out;
  RecordJsonWriter(options).append_arrow_lines(out, shape.s, batch.array());
  return out;
}

std::string error_of(const std::string& avro_json, const std::string& line, std::string* field = nullptr) {
  const AvroSchema avro = AvroSchema::parse(avro_json);
  Schema shape(avro);
  JsonRowBuilder rows(shape.s, !avro.is_record());
  try {
    rows.append(line);
  } catch (const JsonRowError& e) {
    if (field) *field = e.field();
    EXPECT_EQ(rows.rows(), 0);
    return e.what();
  }
  return "no error";
}

const char* kUser = R"({"type":"record","name":"User","fields":[
  {"name":"id","type":"long"},{"name":"name","type":["null","string"],"default":null}]})";

TEST(JsonRows, RecordBytesAreAvrosBinaryEncoding) {
  auto v = encode(kUser, {R"({"id":3,"name":"ab"})", R"({"id":-1})", R"({"name":null,"id":64})"});
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], Enc().l(3).l(1).s("ab").b);  // long 3, union branch 1 (string), "ab"
  EXPECT_EQ(v[1], Enc().l(-1).l(0).b);         // an absent member is null: branch 0
  EXPECT_EQ(v[2], Enc().l(64).l(0).b);
}

TEST(JsonRows, NonRecordSchemaTakesTheValueItself) {
  EXPECT_EQ(encode(R"("string")", {R"("user-1")"})[0], Enc().s("user-1").b);
  EXPECT_EQ(encode(R"("long")", {"42"})[0], Enc().l(42).b);
  EXPECT_EQ(encode(R"(["null","int"])", {"null", "5"}),
            (std::vector<std::vector<std::uint8_t>>{Enc().l(0).b, Enc().l(1).l(5).b}));
}

TEST(JsonRows, EveryTypeRoundTripsThroughAvro) {
  const char* schema = R"({"type":"record","name":"All","fields":[
    {"name":"b","type":"boolean"},{"name":"i","type":"int"},{"name":"l","type":"long"},
    {"name":"f","type":"float"},{"name":"d","type":"double"},{"name":"s","type":"string"},
    {"name":"raw","type":"bytes"},{"name":"fx","type":{"type":"fixed","name":"F2","size":2}},
    {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
    {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":6,"scale":2}},
    {"name":"day","type":{"type":"int","logicalType":"date"}},
    {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
    {"name":"ms","type":{"type":"long","logicalType":"timestamp-millis"}},
    {"name":"local","type":{"type":"long","logicalType":"local-timestamp-millis"}},
    {"name":"tags","type":{"type":"array","items":["null","string"]}},
    {"name":"counts","type":{"type":"map","values":"long"}},
    {"name":"inner","type":{"type":"record","name":"In","fields":[{"name":"x","type":"int"}]}},
    {"name":"either","type":["null","int","string"]},
    {"name":"wide","type":["int","long"]}]})";
  const std::string line =
      R"({"b":true,"i":-7,"l":9007199254740993,"f":1.5,"d":"NaN","s":"h\u00e9","raw":"AAH/","fx":"YWI=",)"
      R"("e":"B","dec":"-1234.5","day":"2024-02-29","ts":"2024-05-01T10:00:00.123456Z","ms":1714557600,)"
      R"("local":"2024-05-01 10:00:00.5","tags":["a",null],"counts":{"k":9,"z":-1},"inner":{"x":1},)"
      R"("either":{"member1":"s"},"wide":5})";
  EXPECT_EQ(round_trip(schema, {line}),
            R"({"b":true,"i":-7,"l":9007199254740993,"f":1.5,"d":"NaN","s":"hé","raw":"AAH/","fx":"YWI=",)"
            R"("e":"B","dec":-1234.50,"day":"2024-02-29","ts":"2024-05-01T10:00:00.123Z",)"
            R"("ms":"2024-05-01T10:00:00.000Z","local":"2024-05-01T10:00:00.500","tags":["a",null],)"
            R"("counts":{"k":9,"z":-1},"inner":{"x":1},"either":{"member1":"s"},"wide":5})"
            "\n");
  // The microseconds are kept (the JSON writer shows milliseconds): 123456 us.
  auto v = encode(R"({"type":"record","name":"T","fields":[{"name":"ts","type":{"type":"long",)"
                  R"("logicalType":"timestamp-micros"}}]})",
                  {R"({"ts":"1970-01-01T00:00:01.123456Z"})"});
  EXPECT_EQ(v[0], Enc().l(1123456).b);
}

TEST(JsonRows, ErrorsNameTheFieldAndKeepNoPartRow) {
  std::string field;
  EXPECT_EQ(error_of(kUser, R"({"id":"x"})", &field), R"(field "id": expected an integer (int64), got a string)");
  EXPECT_EQ(field, "id");
  EXPECT_EQ(error_of(kUser, R"({"id":1,"name":5})"), R"(field "name": expected a string, got an integer)");
  EXPECT_EQ(error_of(kUser, R"({"id":1,"nick":"x"})"), R"(field "nick": the schema has no field of this name)");
  EXPECT_EQ(error_of(kUser, "[1]"), "is an array, not a JSON object of the schema's fields");
  EXPECT_EQ(error_of(kUser, "{\"id\":").rfind("is not JSON: ", 0), 0u);
  EXPECT_EQ(error_of(kUser, ""), "is not JSON: the text is empty");
  {
    // A view without a data pointer (what a fuzzer first found).
    const AvroSchema avro = AvroSchema::parse(R"("string")");
    Schema shape(avro);
    JsonRowBuilder rows(shape.s, true);
    EXPECT_THROW(rows.append(std::string_view()), JsonRowError);
    EXPECT_EQ(rows.rows(), 0);
    rows.append(R"("x")");
    EXPECT_EQ(rows.rows(), 1);
  }
  const char* nested = R"({"type":"record","name":"N","fields":[{"name":"a","type":{"type":"record","name":"A",
    "fields":[{"name":"tags","type":{"type":"array","items":"int"}},{"name":"m","type":{"type":"map",
    "values":"int"}},{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":1}}]}}]})";
  EXPECT_EQ(error_of(nested, R"({"a":{"tags":[1,2,3000000000]}})", &field),
            R"(field "a.tags[2]": 3000000000 does not fit the column (int32))");
  EXPECT_EQ(field, "a.tags[2]");
  EXPECT_EQ(error_of(nested, R"({"a":{"m":{"k":true}}})"),
            R"(field "a.m{k}": expected an integer (int32), got a boolean)");
  EXPECT_EQ(error_of(nested, R"({"a":{"d":1.25}})"),
            R"(field "a.d": 1.25: 2 digits after the point, the column's scale is 1)");
  EXPECT_EQ(error_of(nested, R"({"a":{"d":12345}})"), R"(field "a.d": 12345: more than 4 digits (precision 4))");
  EXPECT_EQ(error_of(nested, R"({"a":{"zip":1}})"), R"(field "a.zip": the schema has no field of this name in a)");
  EXPECT_EQ(error_of(R"("string")", "7", &field), R"(field "value": expected a string, got an integer)");

  // A failed row leaves the rows before it whole.
  const AvroSchema avro = AvroSchema::parse(kUser);
  Schema shape(avro);
  JsonRowBuilder rows(shape.s);
  rows.append(R"({"id":1,"name":"a"})");
  EXPECT_THROW(rows.append(R"({"name":"b","id":"bad"})"), JsonRowError);
  rows.append(R"({"id":2})");
  ArrowBatch batch = rows.finish();
  AvroEncoder encoder(avro);
  ArrowBatch out = encoder.encode(shape.s, batch.array());
  EXPECT_EQ(out.rows(), 2);
}

TEST(JsonRows, NullForANonNullFieldIsTheEncodersErrorNamingIt) {
  const AvroSchema avro = AvroSchema::parse(kUser);
  Schema shape(avro);
  JsonRowBuilder rows(shape.s);
  rows.append(R"({"name":"a"})");
  ArrowBatch batch = rows.finish();
  AvroEncoder encoder(avro);
  try {
    encoder.encode(shape.s, batch.array());
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("column \"id\" is null"), std::string::npos) << e.what();
  }
}

TEST(JsonRows, DurationsAndShapesRefused) {
  // Protobuf's Duration shape: duration[us], in Spark's and Protobuf JSON's forms.
  ArrowSchema s{};
  {
    const AvroSchema avro = AvroSchema::parse(R"({"type":"record","name":"R","fields":[{"name":"x","type":"int"}]})");
    AvroDecoder(avro).export_schema(&s);
  }
  const char* exported = s.children[0]->format;  // put back before the release
  s.children[0]->format = "tDu";
  JsonRowBuilder rows(s);
  rows.append(R"({"x":"INTERVAL '1 02:03:04.5' DAY TO SECOND"})");
  rows.append(R"({"x":"-1.000001s"})");
  ArrowBatch batch = rows.finish();
  const auto* us = static_cast<const std::int64_t*>(batch.array().children[0]->buffers[1]);
  EXPECT_EQ(us[0], ((86400 + 2 * 3600 + 3 * 60 + 4) * 1000000LL) + 500000);
  EXPECT_EQ(us[1], -1000001);
  EXPECT_THROW(rows.append(R"({"x":"5 minutes"})"), JsonRowError);
  s.children[0]->format = "tsm:UTC";
  EXPECT_THROW(JsonRowBuilder{s}, SchemaError);
  s.children[0]->format = exported;
  s.release(&s);
}

}  // namespace
