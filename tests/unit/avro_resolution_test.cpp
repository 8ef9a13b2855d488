// Avro schema resolution (a writer schema read as a reader schema: promotions,
// defaults, aliases, enums, unions), logical types and schema errors, on
// hand-encoded values.
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "avro_test_support.hpp"

namespace {

using namespace kwire_avro_test;
using kwire::source::AvroSchemaError;

// ---- schema resolution ----

const std::string kUserV1 = R"({"type": "record", "name": "User", "namespace": "ex", "fields": [
  {"name": "id", "type": "int"},
  {"name": "fullname", "type": "string"},
  {"name": "gone", "type": {"type": "map", "values": {"type": "array", "items": {"type": "record", "name": "G",
    "fields": [{"name": "a", "type": "long"}, {"name": "b", "type": ["null", "string"]}]}}}},
  {"name": "score", "type": "float"},
  {"name": "big", "type": "long"},
  {"name": "small", "type": "int"},
  {"name": "i2f", "type": "int"},
  {"name": "l2f", "type": "long"},
  {"name": "blob", "type": "bytes"},
  {"name": "text", "type": "string"},
  {"name": "last", "type": "int"}]})";

const std::string kUserV2 = R"({"type": "record", "name": "User", "namespace": "ex", "fields": [
  {"name": "id", "type": "long"},
  {"name": "name", "type": "string", "aliases": ["fullname"]},
  {"name": "score", "type": "double"},
  {"name": "big", "type": "double"},
  {"name": "small", "type": "double"},
  {"name": "i2f", "type": "float"},
  {"name": "l2f", "type": "float"},
  {"name": "blob", "type": "string"},
  {"name": "text", "type": "bytes"},
  {"name": "last", "type": "int"},
  {"name": "n", "type": "int", "default": 7},
  {"name": "s", "type": "string", "default": "dflt"},
  {"name": "r", "type": {"type": "record", "name": "R", "fields": [
    {"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": "q"}]}, "default": {"a": 1}},
  {"name": "arr", "type": {"type": "array", "items": "int"}, "default": [1, 2]},
  {"name": "u", "type": ["null", "string"], "default": null},
  {"name": "u2", "type": ["string", "null"], "default": "first"},
  {"name": "m", "type": {"type": "map", "values": "long"}, "default": {"x": 5}},
  {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}, "default": "B"},
  {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 1},
   "default": "\u0001"}]})";

Bytes user_v1(std::int32_t id, std::string_view blob) {
  Enc e;
  e.l(id).s("Ada");
  // gone: {"k": [{a: 1, b: "x"}, {a: 2, b: null}], "j": []}, in blocks with byte sizes.
  e.l(-2).l(13).s("k").l(2).l(1).l(1).s("x").l(2).l(0).l(0).s("j").l(0).l(0);
  e.f(0.5f).l((std::int64_t{1} << 53) + 1).l(-3).l(16777217).l(3).s(blob).s("hi").l(99);
  return e.b;
}

TEST(AvroResolution, WriterV1ReadAsReaderV2) {
  AvroDecoder dec(AvroSchema::parse(kUserV2));
  const int v1 = dec.add_writer(AvroSchema::parse(kUserV1));
  EXPECT_EQ(v1, 1);
  std::string error;
  EXPECT_TRUE(dec.append(view(user_v1(5, "AB")), v1, &error)) << error;
  // bytes read as string must be UTF-8.
  EXPECT_FALSE(dec.append(view(user_v1(6, "\xff")), v1, &error));
  EXPECT_NE(error.find("UTF-8"), std::string::npos) << error;
  // A value written with the reader's own schema (writer 0) in the same batch.
  Enc own;
  own.l(-9).s("Bo").d(1).d(2).d(3).f(4).f(5).s("b").s("t").l(1).l(8).s("s").l(2).s("rb");
  own.l(0).l(0).l(0).s("u").l(0).l(0).s("\xff");  // arr [], u null, u2 "u", m {}, e A, dec -0.1
  EXPECT_TRUE(dec.append(view(own.b), 0, &error)) << error;
  Decoded out;
  finish_into(dec, out);
  ASSERT_EQ(out.rows(), 3);
  const char* formats[] = {"l", "u", "g",  "g",  "g", "f", "f",  "u", "z",    "i",
                           "i", "u", "+s", "+l", "u", "u", "+m", "u", "d:4,1"};
  ASSERT_EQ(out.columns(), 19);
  for (int k = 0; k < 19; ++k) EXPECT_EQ(out.format(k), formats[k]) << out.field(k).name;
  EXPECT_EQ(out.row(0),
            "{id:5,name:\"Ada\",score:0.5,big:9007199254740992,small:-3,i2f:16777216,l2f:3,blob:\"AB\",text:0x6869,"
            "last:99,n:7,s:\"dflt\",r:{a:1,b:\"q\"},arr:[1,2],u:null,u2:\"first\",m:{\"x\":5},e:\"B\",dec:0.1}");
  EXPECT_EQ(out.row(1), null_row(out));
  EXPECT_EQ(out.row(2),
            "{id:-9,name:\"Bo\",score:1,big:2,small:3,i2f:4,l2f:5,blob:\"b\",text:0x74,last:1,n:8,s:\"s\","
            "r:{a:2,b:\"rb\"},arr:[],u:null,u2:\"u\",m:{},e:\"A\",dec:-0.1}");
}

TEST(AvroResolution, EnumSymbolsByName) {
  const std::string writer = R"({"type": "enum", "name": "Suit", "symbols": ["SPADES", "HEARTS", "DIAMONDS"]})";
  AvroDecoder with_default(AvroSchema::parse(
      R"({"type": "enum", "name": "Suit", "symbols": ["HEARTS", "SPADES", "OTHER"], "default": "OTHER"})"));
  AvroDecoder without(AvroSchema::parse(R"({"type": "enum", "name": "Suit", "symbols": ["HEARTS", "SPADES"]})"));
  std::string error;
  for (AvroDecoder* d : {&with_default, &without}) {
    const int w = d->add_writer(AvroSchema::parse(writer));
    EXPECT_TRUE(d->append(view(enc().l(0).b), w, &error)) << error;
    EXPECT_TRUE(d->append(view(enc().l(1).b), w, &error)) << error;
    error.clear();
    EXPECT_EQ(d->append(view(enc().l(2).b), w, &error), d == &with_default);
    EXPECT_FALSE(d->append(view(enc().l(3).b), w, &error));  // no such writer symbol
    EXPECT_NE(error.find("enum index 3"), std::string::npos) << error;
  }
  EXPECT_FALSE(without.append(view(enc().l(2).b), 1, &error));
  EXPECT_EQ(error, "symbol \"DIAMONDS\" is not in the reader's enum, which has no default");
  Decoded a, b;
  finish_into(with_default, a);
  finish_into(without, b);
  EXPECT_EQ(a.format(0), "u");
  EXPECT_EQ(a.field(0).name, std::string("value"));
  const char* want_a[] = {"\"SPADES\"", "\"HEARTS\"", "\"OTHER\"", "null"};
  const char* want_b[] = {"\"SPADES\"", "\"HEARTS\"", "null", "null", "null"};
  ASSERT_EQ(a.rows(), 4);
  ASSERT_EQ(b.rows(), 5);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(a.cell(0, r), want_a[r]) << r;
  for (int r = 0; r < 5; ++r) EXPECT_EQ(b.cell(0, r), want_b[r]) << r;
}

TEST(AvroResolution, SchemasThatDoNotResolve) {
  const AvroSchema reader = AvroSchema::parse(R"({"type": "record", "name": "T", "fields": [
    {"name": "a", "type": "int"}, {"name": "added", "type": "string"}]})");
  auto error_of = [&](const std::string& writer) {
    AvroDecoder d(reader);
    try {
      d.add_writer(AvroSchema::parse(writer));
    } catch (const AvroSchemaError& e) {
      return std::string(e.what());
    }
    return std::string("(resolved)");
  };
  EXPECT_EQ(error_of(R"({"type": "record", "name": "T", "fields": [{"name": "a", "type": "int"}]})"),
            "Avro schema resolution: field \"T.added\" is not in the writer's schema and has no default");
  EXPECT_NE(error_of(R"({"type": "record", "name": "T", "fields": [{"name": "a", "type": "string"},
              {"name": "added", "type": "string"}]})")
                .find("the writer's string cannot be read as the reader's int"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"type": "record", "name": "Other", "fields": [{"name": "a", "type": "int"}]})")
                .find("record Other cannot be read as the reader's record T"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"type": "record", "name": "T", "fields": [{"name": "a", "type": "long"},
              {"name": "added", "type": "string"}]})")
                .find("long cannot be read as the reader's int"),
            std::string::npos);
  // A record alias of the reader's matches the writer's name.
  AvroDecoder aliased(AvroSchema::parse(R"({"type": "record", "name": "New", "aliases": ["Old"], "fields": [
    {"name": "a", "type": "int"}]})"));
  EXPECT_NO_THROW(aliased.add_writer(AvroSchema::parse(R"({"type": "record", "name": "Old", "fields": [
    {"name": "a", "type": "int"}]})")));
}

TEST(AvroResolution, WriterUnionBranchTheReaderCannotTake) {
  AvroDecoder dec(
      AvroSchema::parse(R"({"type": "record", "name": "W", "fields": [{"name": "v", "type": ["null", "long"]}]})"));
  const int w = dec.add_writer(AvroSchema::parse(
      R"({"type": "record", "name": "W", "fields": [{"name": "v", "type": ["null", "int", "string"]}]})"));
  std::string error;
  EXPECT_TRUE(dec.append(view(enc().l(0).b), w, &error)) << error;
  EXPECT_TRUE(dec.append(view(enc().l(1).l(5).b), w, &error)) << error;
  EXPECT_FALSE(dec.append(view(enc().l(2).s("x").b), w, &error));
  EXPECT_NE(error.find("the writer's union branch string does not fit"), std::string::npos) << error;
  EXPECT_TRUE(dec.append(view(enc().l(1).l(-6).b), w, &error)) << error;
  Decoded out;
  finish_into(dec, out);
  EXPECT_EQ(out.format(0), "l");
  const char* want[] = {"null", "5", "null", "-6"};
  for (int r = 0; r < 4; ++r) EXPECT_EQ(out.cell(0, r), want[r]) << r;
}

TEST(AvroResolution, NonUnionWriterIntoReaderUnion) {
  AvroDecoder dec(AvroSchema::parse(R"(["null", "string", "long"])"));
  const int from_int = dec.add_writer(AvroSchema::parse(R"("int")"));
  const int from_bytes = dec.add_writer(AvroSchema::parse(R"("bytes")"));
  std::string error;
  EXPECT_TRUE(dec.append(view(enc().l(-7).b), from_int, &error)) << error;
  EXPECT_TRUE(dec.append(view(enc().s("b").b), from_bytes, &error)) << error;
  EXPECT_TRUE(dec.append(view(enc().l(0).b), 0, &error)) << error;
  Decoded out;
  finish_into(dec, out);
  EXPECT_EQ(out.cell(0, 0), "{member0:null,member1:-7}");
  EXPECT_EQ(out.cell(0, 1), "{member0:\"b\",member1:null}");
  EXPECT_EQ(out.cell(0, 2), "null");
  EXPECT_THROW(dec.add_writer(AvroSchema::parse(R"("boolean")")), AvroSchemaError);
}

// Found while writing these tests: both were resolved to the wrong field or branch.
TEST(AvroResolution, ExactNamesBeforeAliasesAndShortNames) {
  // A field named as another field's alias: each value stays in its own field.
  const std::string fields = R"({"type": "record", "name": "A", "fields": [
    {"name": "a", "type": "int", "aliases": ["b"]}, {"name": "b", "type": "string"}]})";
  std::string error;
  AvroDecoder f(AvroSchema::parse(fields));
  EXPECT_TRUE(f.append(view(enc().l(3).s("x").b), 0, &error)) << error;
  Decoded fo;
  finish_into(f, fo);
  EXPECT_EQ(fo.row(0), "{a:3,b:\"x\"}");

  // Two records named R in different namespaces: the value's own branch.
  const std::string two = R"({"type": "record", "name": "Top", "fields": [{"name": "v", "type": [
    {"type": "record", "name": "R", "namespace": "a", "fields": [{"name": "x", "type": "int"}]},
    {"type": "record", "name": "R", "namespace": "b", "fields": [{"name": "y", "type": "string"}]}]}]})";
  AvroDecoder u(AvroSchema::parse(two));
  const int again = u.add_writer(AvroSchema::parse(two));
  EXPECT_TRUE(u.append(view(enc().l(1).s("hi").b), 0, &error)) << error;
  EXPECT_TRUE(u.append(view(enc().l(0).l(4).b), again, &error)) << error;
  EXPECT_TRUE(u.append(view(enc().l(1).s("yo").b), again, &error)) << error;
  Decoded uo;
  finish_into(u, uo);
  EXPECT_EQ(uo.cell("v", 0), "{member0:null,member1:{y:\"hi\"}}");
  EXPECT_EQ(uo.cell("v", 1), "{member0:{x:4},member1:null}");
  EXPECT_EQ(uo.cell("v", 2), "{member0:null,member1:{y:\"yo\"}}");
}

// ---- logical types (hand-encoded) ----

const std::string kLogical = R"({"type": "record", "name": "L", "fields": [
  {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
  {"name": "fdec", "type": {"type": "fixed", "name": "F17", "size": 17, "logicalType": "decimal", "precision": 38}},
  {"name": "day", "type": {"type": "int", "logicalType": "date"}},
  {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
  {"name": "ltm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
  {"name": "ltu", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
  {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
  {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
  {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
  {"name": "odec", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 1}]}]})";

Bytes logical_row(std::string_view dec, std::string_view fdec, std::int64_t tsm, bool odec) {
  Enc e;
  e.s(dec).raw(fdec).l(19000).l(tsm).l(1700000000123456).l(-1).l(5).s("123e4567-e89b-12d3-a456-426614174000");
  e.l(3723000).l(3723000001);
  if (odec) e.l(1).s("\xff\x85");
  else e.l(0);
  return e.b;
}

TEST(AvroDecoder, LogicalTypes) {
  const AvroSchema schema = AvroSchema::parse(kLogical);
  EXPECT_EQ(schema.spark_type(),
            "STRUCT<dec: DECIMAL(10,2), fdec: DECIMAL(38,0), day: DATE, tsm: TIMESTAMP, tsu: TIMESTAMP, ltm: "
            "TIMESTAMP_NTZ, ltu: TIMESTAMP_NTZ, id: STRING, tm: INT, tu: BIGINT, odec: DECIMAL(5,1)>");
  AvroDecoder dec(schema);
  const std::string ones(17, '\xff');
  const std::string max = std::string("\x00\x7f", 2) + std::string(15, '\xff');
  const std::string min = std::string("\xff\x80", 2) + std::string(15, '\0');
  const std::string over = std::string("\x00\x80", 2) + std::string(15, '\0');
  const std::string over2 = std::string("\x01", 1) + std::string(16, '\0');
  std::string error;
  EXPECT_TRUE(dec.append(view(logical_row("\x30\x39", ones, 1700000000123, true)), 0, &error)) << error;
  EXPECT_TRUE(dec.append(view(logical_row("\xff", max, -1, false)), 0, &error)) << error;
  EXPECT_TRUE(dec.append(view(logical_row("\x80", min, 0, false)), 0, &error)) << error;
  EXPECT_TRUE(dec.append(view(logical_row("", ones, 0, false)), 0, &error)) << error;
  EXPECT_TRUE(dec.append(view(logical_row(ones, ones, 0, false)), 0, &error)) << error;  // 17 bytes of -1 fit
  // Over 128 bits (bytes and fixed), and a timestamp whose microseconds overflow.
  for (const Bytes& bad : {logical_row(over, ones, 0, false), logical_row(over2, ones, 0, false),
                           logical_row("", over, 0, false), logical_row("", over2, 0, false)}) {
    error.clear();
    EXPECT_FALSE(dec.append(view(bad), 0, &error));
    EXPECT_NE(error.find("128 bits"), std::string::npos) << error;
  }
  EXPECT_FALSE(dec.append(view(logical_row("", ones, INT64_MAX / 100, false)), 0, &error));
  EXPECT_NE(error.find("overflows"), std::string::npos) << error;

  Decoded out;
  finish_into(dec, out);
  const char* formats[] = {"d:10,2", "d:38,0", "tdD", "tsu:UTC", "tsu:UTC", "tsu:", "tsu:", "u", "i", "l", "d:5,1"};
  ASSERT_EQ(out.columns(), 11);
  for (int k = 0; k < 11; ++k) EXPECT_EQ(out.format(k), formats[k]) << k;
  ASSERT_EQ(out.rows(), 10);
  EXPECT_EQ(out.row(0),
            "{dec:123.45,fdec:-1,day:19000,tsm:1700000000123000,tsu:1700000000123456,ltm:-1000,ltu:5,"
            "id:\"123e4567-e89b-12d3-a456-426614174000\",tm:3723000,tu:3723000001,odec:-12.3}");
  EXPECT_EQ(out.cell("dec", 1), "-0.01");
  EXPECT_EQ(out.cell("fdec", 1), "170141183460469231731687303715884105727");
  EXPECT_EQ(out.cell("tsm", 1), "-1000");
  EXPECT_EQ(out.cell("odec", 1), "null");
  EXPECT_EQ(out.cell("dec", 2), "-1.28");  // 0x80: sign-extended
  EXPECT_EQ(out.cell("fdec", 2), "-170141183460469231731687303715884105728");
  EXPECT_EQ(out.cell("dec", 3), "0.00");  // no bytes: zero
  EXPECT_EQ(out.cell("dec", 4), "-0.01");
  for (int r = 5; r < 10; ++r) EXPECT_EQ(out.row(r), null_row(out)) << r;
  // decimal128: 16 little-endian bytes a value (12345, then -1 sign-extended).
  const std::int64_t words[] = {12345, 0, -1, -1};
  for (int k = 0; k < 4; ++k) EXPECT_EQ(load<std::int64_t>(out.column(0), 1, k), words[k]) << k;
}

// ---- schema errors ----

TEST(AvroSchema, Errors) {
  auto parse_error = [](const std::string& json) {
    try {
      (void)AvroSchema::parse(json);
    } catch (const AvroSchemaError& e) {
      return std::string(e.what());
    }
    return std::string("(parsed)");
  };
  EXPECT_NE(parse_error(R"({"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]})")
                .find("recursive"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"type": "record", "name": "A", "fields": [{"name": "x", "type": "Missing"}]})")
                .find("unknown type \"Missing\""),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"type": "record", "name": "A", "fields": [{"name": "x", "type": "int"},
              {"name": "x", "type": "long"}]})")
                .find("the field \"x\" twice"),
            std::string::npos);
  EXPECT_NE(
      parse_error(R"({"type": "record", "name": "A", "fields": [{"name": "x", "type": "int", "default": "seven"}]})")
          .find("default \"seven\" does not fit"),
      std::string::npos);
  EXPECT_NE(
      parse_error(
          R"({"type": "record", "name": "A", "fields": [{"name": "x", "type": ["null", "int"], "default": 1.5}]})")
          .find("does not fit"),
      std::string::npos);
  EXPECT_NE(parse_error(R"({"type": "enum", "name": "E", "symbols": ["A"], "default": "B"})").find("not a symbol"),
            std::string::npos);
  EXPECT_NE(parse_error(R"(["int", ["long"]])").find("union"), std::string::npos);
  EXPECT_NE(parse_error(R"(["int", "int"])").find("same type twice"), std::string::npos);
  EXPECT_NE(parse_error(R"({"type": "fixed", "name": "F"})").find("size"), std::string::npos);
  EXPECT_NE(parse_error(R"({"type": "record", "name": "A", "fields": [)").find("invalid JSON"), std::string::npos);
  EXPECT_NE(parse_error(R"("nothing")").find("unknown type"), std::string::npos);

  // A decimal of 39 digits parses (it is valid Avro) but has no Spark type.
  const AvroSchema wide = AvroSchema::parse(R"({"type": "bytes", "logicalType": "decimal", "precision": 39})");
  try {
    AvroDecoder dec(wide);
    ADD_FAILURE() << "decimal(39) accepted";
  } catch (const AvroSchemaError& e) {
    EXPECT_NE(std::string(e.what()).find("over Spark's 38"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(
      { AvroDecoder dec(AvroSchema::parse(R"({"type": "bytes", "logicalType": "decimal", "precision": 38})")); });
}

// Records of ten fields, each of the record before: R_n has 11^n columns.
std::string nested_records(int levels) {
  std::string json = R"({"type": "record", "name": "R0", "fields": [{"name": "x", "type": "long"}]})";
  for (int r = 1; r <= levels; ++r) {
    std::string fields;
    for (int f = 0; f < 10; ++f) fields += fmt::format(R"(, {{"name": "f{}", "type": "R{}"}})", f, r - 1);
    json = fmt::format(R"({{"type": "record", "name": "R{}", "fields": [{{"name": "inner", "type": {}}}{}]}})", r, json,
                       fields);
  }
  return json;
}

TEST(AvroSchema, NamedTypesUsedOverAndOverAreBounded) {
  // 4 levels: 30746 types, decoded.
  const AvroSchema four = AvroSchema::parse(nested_records(4));
  AvroDecoder dec(four);
  EXPECT_EQ(dec.rows(), 0);
  // 10 levels: 10^10 columns from 3 KB of JSON, refused when parsed instead
  // of exhausting memory when decoded.
  const std::string ten = nested_records(10);
  EXPECT_LT(ten.size(), 4000u);
  try {
    (void)AvroSchema::parse(ten);
    ADD_FAILURE() << "parsed";
  } catch (const AvroSchemaError& e) {
    EXPECT_NE(std::string(e.what()).find("more than 100000"), std::string::npos) << e.what();
  }
}

}  // namespace
