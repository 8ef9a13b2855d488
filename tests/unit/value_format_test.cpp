// Value decoding against a Spark DDL schema, PERMISSIVE mode.
#include <gtest/gtest.h>

#include <cmath>

#include "kwire/source/json_writer.hpp"
#include "kwire/source/value_format.hpp"

using namespace kwire::source;

namespace {

JsonValueDecoder demo_decoder() {
  return JsonValueDecoder(Schema::parse_ddl("user_id STRING, amount DOUBLE, action STRING, event_ts BIGINT"));
}

// The members through the cells, checked against the members written
// straight from the text.
std::string members(JsonValueDecoder& d, std::optional<std::string_view> text) {
  std::string out;
  const std::size_t n = d.append_json_members(out, d.decode(text));
  std::string direct = "prefix";
  EXPECT_EQ(d.append_decoded_json(direct, text, RecordJsonWriter()), n) << text.value_or("(null)");
  EXPECT_EQ(direct, "prefix" + out) << text.value_or("(null)");
  return out;
}

}  // namespace

TEST(ValueFormat, ParsesSparkDdl) {
  auto s = Schema::parse_ddl(
      " user_id STRING, amount double ,`odd name` INTEGER, n LONG NOT NULL, ts: TIMESTAMP, "
      "f FLOAT COMMENT 'x, y', b BOOLEAN, t TINYINT, sm SMALLINT");
  ASSERT_EQ(s.columns.size(), 9u);
  EXPECT_EQ(s.columns[0], (Column{"user_id", ColumnType::string}));
  EXPECT_EQ(s.columns[1], (Column{"amount", ColumnType::float64}));
  EXPECT_EQ(s.columns[2], (Column{"odd name", ColumnType::int32}));
  EXPECT_EQ(s.columns[3], (Column{"n", ColumnType::int64}));
  EXPECT_EQ(s.columns[4], (Column{"ts", ColumnType::timestamp}));
  EXPECT_EQ(s.columns[5], (Column{"f", ColumnType::float32}));
  EXPECT_EQ(s.columns[6], (Column{"b", ColumnType::boolean}));
  EXPECT_EQ(s.columns[7], (Column{"t", ColumnType::int8}));
  EXPECT_EQ(s.columns[8], (Column{"sm", ColumnType::int16}));
  EXPECT_EQ(Schema::parse_ddl("a INT, `b``c` STRING").to_ddl(), "`a` INT, `b``c` STRING");
}

TEST(ValueFormat, RejectsBadDdl) {
  EXPECT_THROW(Schema::parse_ddl(""), SchemaError);
  EXPECT_THROW(Schema::parse_ddl("a"), SchemaError);
  EXPECT_THROW(Schema::parse_ddl("a VARIANTX"), SchemaError);
  EXPECT_THROW(Schema::parse_ddl("a STRUCT<b: INT>"), SchemaError);
  EXPECT_THROW(Schema::parse_ddl("a INT, a STRING"), SchemaError);
  EXPECT_THROW(Schema::parse_ddl("a INT,, b INT"), SchemaError);
  EXPECT_THROW(Schema::parse_ddl("_corrupt_record STRING"), SchemaError);
  EXPECT_THROW(Schema::parse_ddl("a INT PRIMARY"), SchemaError);
}

TEST(ValueFormat, DecodesTheDemoEvent) {
  auto d = demo_decoder();
  auto v = d.decode(R"({"user_id":"u-7","amount":12.5,"action":"purchase","event_ts":1714557600000,"extra":[1]})");
  ASSERT_EQ(v.cells.size(), 4u);
  EXPECT_EQ(std::get<std::string>(v.cells[0]), "u-7");
  EXPECT_DOUBLE_EQ(std::get<double>(v.cells[1]), 12.5);
  EXPECT_EQ(std::get<std::string>(v.cells[2]), "purchase");
  EXPECT_EQ(std::get<std::int64_t>(v.cells[3]), 1714557600000);
  EXPECT_FALSE(v.corrupt_record);
  std::string out;
  d.append_json_members(out, v);
  EXPECT_EQ(out, R"("user_id":"u-7","amount":12.5,"action":"purchase","event_ts":1714557600000)");
}

TEST(ValueFormat, MissingFieldIsNullAndNotCorrupt) {
  auto d = demo_decoder();
  auto v = d.decode(R"({"user_id":"u","amount":null})");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(v.cells[1]));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(v.cells[2]));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(v.cells[3]));
  EXPECT_FALSE(v.corrupt_record);
}

TEST(ValueFormat, WrongTypeIsNullKeepsOtherFieldsAndMarksCorrupt) {
  auto d = demo_decoder();
  const std::string text = R"({"user_id":"u","amount":"lots","action":"view","event_ts":1.5})";
  auto v = d.decode(text);
  EXPECT_EQ(std::get<std::string>(v.cells[0]), "u");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(v.cells[1]));
  EXPECT_EQ(std::get<std::string>(v.cells[2]), "view");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(v.cells[3]));
  ASSERT_TRUE(v.corrupt_record);
  EXPECT_EQ(*v.corrupt_record, text);
}

TEST(ValueFormat, UnparseableValueGivesAllNullAndRawText) {
  auto d = demo_decoder();
  for (std::string text : {"not json", "{\"user_id\":", "[1,2]", "42", "\"s\""}) {
    auto v = d.decode(text);
    for (auto& c : v.cells) EXPECT_TRUE(std::holds_alternative<std::monostate>(c)) << text;
    ASSERT_TRUE(v.corrupt_record) << text;
    EXPECT_EQ(*v.corrupt_record, text);
  }
  // Null cells are left out, as Spark's JSON writer does (ignoreNullFields).
  EXPECT_EQ(members(d, "oops"), R"("_corrupt_record":"oops")");
}

TEST(ValueFormat, NullOrEmptyValueIsAllNullWithoutCorruptRecord) {
  auto d = demo_decoder();
  auto v = d.decode(std::nullopt);
  EXPECT_FALSE(v.corrupt_record);
  v = d.decode("  ");
  EXPECT_FALSE(v.corrupt_record);
  for (auto& c : v.cells) EXPECT_TRUE(std::holds_alternative<std::monostate>(c));
  // An all-null row has no members at all.
  std::string out;
  EXPECT_EQ(d.append_json_members(out, v), 0u);
  EXPECT_EQ(out, "");
  auto partial = d.decode(R"({"action":"view"})");
  EXPECT_EQ(d.append_json_members(out, partial), 1u);
  EXPECT_EQ(out, R"("action":"view")");
}

TEST(ValueFormat, StringColumnTakesOtherJsonAsText) {
  JsonValueDecoder d(Schema::parse_ddl("s STRING"));
  EXPECT_EQ(std::get<std::string>(d.decode(R"({"s":5})").cells[0]), "5");
  EXPECT_EQ(std::get<std::string>(d.decode(R"({"s":{"a":[1, true]}})").cells[0]), R"({"a":[1,true]})");
  EXPECT_EQ(std::get<std::string>(d.decode(R"({"s":"a\"b"})").cells[0]), "a\"b");
  EXPECT_FALSE(d.decode(R"({"s":true})").corrupt_record);
}

TEST(ValueFormat, IntegerRangesAndFloats) {
  JsonValueDecoder d(Schema::parse_ddl("i INT, l BIGINT, t TINYINT, f FLOAT, x DOUBLE, b BOOLEAN"));
  auto v = d.decode(R"({"i":2147483647,"l":-9223372036854775808,"t":127,"f":1.1,"x":3,"b":false})");
  EXPECT_FALSE(v.corrupt_record);
  EXPECT_EQ(std::get<std::int64_t>(v.cells[0]), 2147483647);
  EXPECT_EQ(std::get<std::int64_t>(v.cells[1]), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(std::get<std::int64_t>(v.cells[2]), 127);
  EXPECT_EQ(std::get<bool>(v.cells[5]), false);
  std::string out;
  d.append_json_members(out, v);
  EXPECT_EQ(out, R"("i":2147483647,"l":-9223372036854775808,"t":127,"f":1.1,"x":3.0,"b":false)");

  v = d.decode(R"({"i":2147483648,"t":128,"l":1.0,"b":"true"})");
  ASSERT_TRUE(v.corrupt_record);
  for (int i : {0, 1, 2, 5}) EXPECT_TRUE(std::holds_alternative<std::monostate>(v.cells[i])) << i;

  v = d.decode(R"({"x":"NaN","f":"-Infinity"})");
  EXPECT_FALSE(v.corrupt_record);
  EXPECT_TRUE(std::isnan(std::get<double>(v.cells[4])));
  out.clear();
  d.append_json_members(out, v);
  EXPECT_NE(out.find(R"("f":"-Infinity")"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("x":"NaN")"), std::string::npos) << out;
}

TEST(ValueFormat, DuplicateKeyLastWins) {
  JsonValueDecoder d(Schema::parse_ddl("a INT"));
  EXPECT_EQ(std::get<std::int64_t>(d.decode(R"({"a":1,"a":2})").cells[0]), 2);
}

TEST(ValueFormat, Timestamps) {
  EXPECT_EQ(parse_timestamp_ms("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parse_timestamp_ms("2024-05-01T10:00:00Z"), 1714557600000);
  EXPECT_EQ(parse_timestamp_ms("2024-05-01 12:00:00.5+02:00"), 1714557600500);
  EXPECT_EQ(parse_timestamp_ms("2024-05-01T10:00:00.123456"), 1714557600123);
  EXPECT_EQ(parse_timestamp_ms("2024-05-01T05:30-0430"), 1714557600000);
  EXPECT_EQ(parse_timestamp_ms("2024-05-01"), 1714521600000);
  EXPECT_EQ(parse_timestamp_ms("1969-12-31T23:59:59.999Z"), -1);
  EXPECT_FALSE(parse_timestamp_ms("2024-02-30"));
  EXPECT_FALSE(parse_timestamp_ms("yesterday"));
  EXPECT_FALSE(parse_timestamp_ms("2024-05-01T25:00:00"));
  EXPECT_EQ(format_timestamp_ms(1714557600123), "2024-05-01T10:00:00.123Z");
  EXPECT_EQ(format_timestamp_ms(-1), "1969-12-31T23:59:59.999Z");

  JsonValueDecoder d(Schema::parse_ddl("ts TIMESTAMP"));
  // A JSON number in a timestamp column counts seconds (Spark's parser rule).
  EXPECT_EQ(std::get<std::int64_t>(d.decode(R"({"ts":1714557600})").cells[0]), 1714557600000);
  EXPECT_EQ(std::get<std::int64_t>(d.decode(R"({"ts":"2024-05-01T10:00:00Z"})").cells[0]), 1714557600000);
  auto bad = d.decode(R"({"ts":"soon"})");
  EXPECT_TRUE(bad.corrupt_record);
  std::string out;
  d.append_json_members(out, d.decode(R"({"ts":"2024-05-01T10:00:00.250Z"})"));
  EXPECT_EQ(out, R"("ts":"2024-05-01T10:00:00.250Z")");
}

TEST(ValueFormat, MembersWrittenStraightFromTheTextEqualTheCellsOnes) {
  JsonValueDecoder d(Schema::parse_ddl(
      "id BIGINT, name STRING, ts TIMESTAMP, x DOUBLE, f FLOAT, ok BOOLEAN, t TINYINT, `we\"ird` STRING"));
  // In schema order, out of order, repeated keys (the last wins), nulls,
  // wrong types (the raw text in _corrupt_record), unknown fields, text that
  // is not an object, and empty or missing values.
  EXPECT_EQ(members(d, R"({"id":7,"name":"a\nb","ts":"2024-05-01T10:00:00.250Z","x":2,"f":0.1,"ok":true,"t":-3})"),
            R"("id":7,"name":"a\nb","ts":"2024-05-01T10:00:00.250Z","x":2.0,"f":0.1,"ok":true,"t":-3)");
  EXPECT_EQ(members(d, R"({"ok":false,"id":1,"name":"n"})"), R"("id":1,"name":"n","ok":false)");
  EXPECT_EQ(members(d, R"({"id":1,"id":2})"), R"("id":2)");
  EXPECT_EQ(members(d, R"({"id":1,"name":"n","id":null})"), R"("name":"n")");
  EXPECT_EQ(
      members(d, R"({"id":"one","name":{"a":[1, 2]},"x":"NaN"})"),
      R"("name":"{\"a\":[1,2]}","x":"NaN","_corrupt_record":"{\"id\":\"one\",\"name\":{\"a\":[1, 2]},\"x\":\"NaN\"}")");
  EXPECT_EQ(members(d, R"({"other":1,"t":300,"we\"ird":"w"})"),
            R"("we\"ird":"w","_corrupt_record":"{\"other\":1,\"t\":300,\"we\\\"ird\":\"w\"}")");
  EXPECT_EQ(members(d, R"({"ts":1714557600,"x":null,"f":1e40})"), R"("ts":"2024-05-01T10:00:00.000Z","f":"Infinity")");
  for (std::optional<std::string_view> text :
       {std::optional<std::string_view>{}, std::optional<std::string_view>{""}, std::optional<std::string_view>{" \n"},
        std::optional<std::string_view>{"[1]"}, std::optional<std::string_view>{"{\"id\":"},
        std::optional<std::string_view>{"{}"}, std::optional<std::string_view>{"{\"id\":1}{}"}})
    members(d, text);
  // Names longer than the writer's stack room for a member.
  const std::string long_name(60, 'n');
  JsonValueDecoder wide(
      Schema::parse_ddl(long_name + "1 BIGINT, " + long_name + "2 DOUBLE, " + long_name + "3 TIMESTAMP"));
  EXPECT_EQ(
      members(wide, "{\"" + long_name + "1\":-5,\"" + long_name + "2\":0.25,\"" + long_name + "3\":0}"),
      "\"" + long_name + "1\":-5,\"" + long_name + "2\":0.25,\"" + long_name + "3\":\"1970-01-01T00:00:00.000Z\"");
  // The same after a value that took the cells (the scratch row is reused).
  members(d, R"({"x":1.5,"id":9})");
  EXPECT_EQ(members(d, R"({"id":9,"x":1.5})"), R"("id":9,"x":1.5)");
}
