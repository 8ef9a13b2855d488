// AvroDecoder against Apache Avro C (Debian's libavro-dev) as an independent
// encoder: every Avro type written by Avro C and read back from the exported
// Arrow buffers, a few hundred random records compared value by value, and
// malformed values (hand-encoded) that must leave their neighbours intact.
#include <avro.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "avro_test_support.hpp"

namespace {

using namespace kwire_avro_test;

// ---- Avro C ----

void ok(int rc) {
  if (rc != 0) throw std::runtime_error(std::string("Avro C: ") + avro_strerror());
}

/// One generic Avro C value of a schema, written with avro_value_write.
class AvroC {
 public:
  explicit AvroC(const std::string& json) {
    ok(avro_schema_from_json_length(json.data(), json.size(), &schema_));
    iface_ = avro_generic_class_from_schema(schema_);
    if (!iface_) ok(EINVAL);
    ok(avro_generic_value_new(iface_, &value_));
  }
  ~AvroC() {
    avro_value_decref(&value_);
    avro_value_iface_decref(iface_);
    avro_schema_decref(schema_);
  }
  AvroC(const AvroC&) = delete;
  AvroC& operator=(const AvroC&) = delete;

  avro_value_t& value() { return value_; }
  void reset() { ok(avro_value_reset(&value_)); }
  Bytes write() {
    std::vector<char> buf(1 << 16);
    avro_writer_t w = avro_writer_memory(buf.data(), static_cast<std::int64_t>(buf.size()));
    const int rc = avro_value_write(w, &value_);
    const auto n = avro_writer_tell(w);
    avro_writer_free(w);
    ok(rc);
    return Bytes(buf.begin(), buf.begin() + n);
  }

 private:
  avro_schema_t schema_ = nullptr;
  avro_value_iface_t* iface_ = nullptr;
  avro_value_t value_{};
};

// avro_value_t is a handle (interface and object): passed by value.
avro_value_t field(avro_value_t rec, const char* name) {
  avro_value_t child;
  ok(avro_value_get_by_name(&rec, name, &child, nullptr));
  return child;
}
avro_value_t branch(avro_value_t u, int i) {
  avro_value_t b;
  ok(avro_value_set_branch(&u, i, &b));
  return b;
}
avro_value_t append(avro_value_t arr) {
  avro_value_t item;
  ok(avro_value_append(&arr, &item, nullptr));
  return item;
}
avro_value_t add(avro_value_t map, const char* key) {
  avro_value_t v;
  ok(avro_value_add(&map, key, &v, nullptr, nullptr));
  return v;
}
void set_null(avro_value_t v) { ok(avro_value_set_null(&v)); }
void set_bool(avro_value_t v, bool b) { ok(avro_value_set_boolean(&v, b ? 1 : 0)); }
void set_int(avro_value_t v, std::int32_t x) { ok(avro_value_set_int(&v, x)); }
void set_long(avro_value_t v, std::int64_t x) { ok(avro_value_set_long(&v, x)); }
void set_float(avro_value_t v, float x) { ok(avro_value_set_float(&v, x)); }
void set_double(avro_value_t v, double x) { ok(avro_value_set_double(&v, x)); }
void set_string(avro_value_t v, const char* s) { ok(avro_value_set_string(&v, s)); }
void set_enum(avro_value_t v, int e) { ok(avro_value_set_enum(&v, e)); }
void set_bytes(avro_value_t v, Bytes b, bool fixed = false) {
  b.reserve(1);  // Avro C refuses a null pointer, even for no bytes
  ok(fixed ? avro_value_set_fixed(&v, b.data(), b.size()) : avro_value_set_bytes(&v, b.data(), b.size()));
}

/// The text render() gives for the Arrow cell of an Avro C value: the
/// expectation, from Avro C's own getters and Spark's mapping of unions.
std::string render_avro(avro_value_t& v) {
  switch (avro_value_get_type(&v)) {
    case AVRO_NULL: return "null";
    case AVRO_BOOLEAN: {
      int b = 0;
      ok(avro_value_get_boolean(&v, &b));
      return b ? "true" : "false";
    }
    case AVRO_INT32: {
      std::int32_t i = 0;
      ok(avro_value_get_int(&v, &i));
      return std::to_string(i);
    }
    case AVRO_INT64: {
      std::int64_t l = 0;
      ok(avro_value_get_long(&v, &l));
      return std::to_string(l);
    }
    case AVRO_FLOAT: {
      float f = 0;
      ok(avro_value_get_float(&v, &f));
      return render_number(f, true);
    }
    case AVRO_DOUBLE: {
      double d = 0;
      ok(avro_value_get_double(&v, &d));
      return render_number(d, false);
    }
    case AVRO_STRING: {
      const char* s = nullptr;
      std::size_t n = 0;  // with the terminating NUL
      ok(avro_value_get_string(&v, &s, &n));
      return quote(std::string_view(s, n ? n - 1 : 0));
    }
    case AVRO_BYTES:
    case AVRO_FIXED: {
      const void* p = nullptr;
      std::size_t n = 0;
      ok(avro_value_get_type(&v) == AVRO_BYTES ? avro_value_get_bytes(&v, &p, &n) : avro_value_get_fixed(&v, &p, &n));
      return hex({static_cast<const std::uint8_t*>(p), n});
    }
    case AVRO_ENUM: {
      int e = 0;
      ok(avro_value_get_enum(&v, &e));
      return quote(avro_schema_enum_get(avro_value_get_schema(&v), e));
    }
    case AVRO_RECORD:
    case AVRO_ARRAY:
    case AVRO_MAP: {
      const avro_type_t t = avro_value_get_type(&v);
      std::size_t n = 0;
      ok(avro_value_get_size(&v, &n));
      std::string out = t == AVRO_ARRAY ? "[" : "{";
      for (std::size_t i = 0; i < n; ++i) {
        avro_value_t child;
        const char* name = nullptr;
        ok(avro_value_get_by_index(&v, i, &child, &name));
        if (i) out += ",";
        if (t == AVRO_RECORD) out += std::string(name) + ":";
        if (t == AVRO_MAP) out += quote(name) + ":";
        out += render_avro(child);
      }
      return out + (t == AVRO_ARRAY ? "]" : "}");
    }
    case AVRO_UNION: {
      avro_schema_t u = avro_value_get_schema(&v);
      int disc = 0;
      avro_value_t b;
      ok(avro_value_get_discriminant(&v, &disc));
      ok(avro_value_get_current_branch(&v, &b));
      if (avro_value_get_type(&b) == AVRO_NULL) return "null";
      std::vector<int> non_null;
      for (std::size_t i = 0; i < avro_schema_union_size(u); ++i)
        if (!is_avro_null(avro_schema_union_branch(u, static_cast<int>(i)))) non_null.push_back(static_cast<int>(i));
      if (non_null.size() == 1) return render_avro(b);
      if (non_null.size() == 2) {
        auto type = [&](int k) {
          return avro_typeof(avro_schema_union_branch(u, non_null[static_cast<std::size_t>(k)]));
        };
        if ((type(0) == AVRO_INT32 && type(1) == AVRO_INT64) || (type(0) == AVRO_INT64 && type(1) == AVRO_INT32))
          return render_avro(b);
        if ((type(0) == AVRO_FLOAT && type(1) == AVRO_DOUBLE) || (type(0) == AVRO_DOUBLE && type(1) == AVRO_FLOAT)) {
          float f = 0;
          if (avro_value_get_type(&b) == AVRO_FLOAT && avro_value_get_float(&b, &f) == 0)
            return render_number(f, false);
          return render_avro(b);
        }
      }
      std::string out = "{";
      for (std::size_t k = 0; k < non_null.size(); ++k)
        out += (k ? ",member" : "member") + std::to_string(k) + ":" + (non_null[k] == disc ? render_avro(b) : "null");
      return out + "}";
    }
    default: throw std::runtime_error("Avro C: unexpected type");
  }
}

/// Sets `v` (any type) to a random value: extremes, multi-byte UTF-8, empty
/// and non-empty collections, every union branch.
void randomize(avro_value_t& v, std::mt19937_64& rng, int depth) {
  auto pick = [&](auto... options) {
    const std::int64_t all[] = {static_cast<std::int64_t>(options)...};
    return all[rng() % sizeof...(options)];
  };
  switch (avro_value_get_type(&v)) {
    case AVRO_NULL: ok(avro_value_set_null(&v)); return;
    case AVRO_BOOLEAN: ok(avro_value_set_boolean(&v, static_cast<int>(rng() & 1))); return;
    case AVRO_INT32:
      ok(avro_value_set_int(
          &v, static_cast<std::int32_t>(pick(0, -1, 1, INT32_MIN, INT32_MAX, static_cast<std::int32_t>(rng())))));
      return;
    case AVRO_INT64:
      ok(avro_value_set_long(&v, pick(0, -1, 63, INT64_MIN, INT64_MAX, static_cast<std::int64_t>(rng()))));
      return;
    case AVRO_FLOAT: {
      const auto bits = static_cast<std::uint32_t>(rng());
      float f;
      std::memcpy(&f, &bits, 4);
      ok(avro_value_set_float(&v,
                              rng() % 2 ? f : static_cast<float>(static_cast<std::int32_t>(rng() % 2001) - 1000) / 8));
      return;
    }
    case AVRO_DOUBLE: {
      const std::uint64_t bits = rng();
      double d;
      std::memcpy(&d, &bits, 8);
      ok(avro_value_set_double(
          &v, rng() % 2 ? d : static_cast<double>(static_cast<std::int64_t>(rng() % 20001) - 10000) / 3));
      return;
    }
    case AVRO_STRING: {
      static const char* const pieces[] = {
          "a", "Z", "0", " ", "\"", "\\", "\x01", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9d\x84\x9e"};
      std::string s;
      for (auto n = rng() % 7; n > 0; --n) s += pieces[rng() % 10];
      ok(avro_value_set_string(&v, s.c_str()));
      return;
    }
    case AVRO_BYTES:
    case AVRO_FIXED: {
      const bool fixed = avro_value_get_type(&v) == AVRO_FIXED;
      Bytes b(fixed ? static_cast<std::size_t>(avro_schema_fixed_size(avro_value_get_schema(&v))) : rng() % 7);
      for (auto& x : b) x = static_cast<std::uint8_t>(rng());
      b.reserve(1);  // Avro C refuses a null pointer, even for no bytes
      ok(fixed ? avro_value_set_fixed(&v, b.data(), b.size()) : avro_value_set_bytes(&v, b.data(), b.size()));
      return;
    }
    case AVRO_ENUM:
      ok(avro_value_set_enum(&v, static_cast<int>(rng() % static_cast<std::uint64_t>(avro_schema_enum_number_of_symbols(
                                                              avro_value_get_schema(&v))))));
      return;
    case AVRO_RECORD: {
      std::size_t n = 0;
      ok(avro_value_get_size(&v, &n));
      for (std::size_t i = 0; i < n; ++i) {
        avro_value_t child;
        ok(avro_value_get_by_index(&v, i, &child, nullptr));
        randomize(child, rng, depth + 1);
      }
      return;
    }
    case AVRO_ARRAY:
      for (auto n = depth > 4 ? 0 : rng() % 4; n > 0; --n) {
        avro_value_t item = append(v);
        randomize(item, rng, depth + 1);
      }
      return;
    case AVRO_MAP:
      for (auto n = depth > 4 ? 0 : rng() % 4; n > 0; --n) {
        const std::string key = "k" + std::to_string(rng() % 5) + (rng() % 2 ? "\xc3\xa9" : "");
        avro_value_t value = add(v, key.c_str());
        randomize(value, rng, depth + 1);
      }
      return;
    case AVRO_UNION: {
      avro_value_t b = branch(v, static_cast<int>(rng() % avro_schema_union_size(avro_value_get_schema(&v))));
      randomize(b, rng, depth + 1);
      return;
    }
    default: throw std::runtime_error("Avro C: unexpected type");
  }
}

// Every Avro type and every union shape Spark distinguishes.
const std::string kEverything = R"({"type": "record", "name": "Everything", "namespace": "t", "fields": [
  {"name": "n", "type": "null"},
  {"name": "b", "type": "boolean"},
  {"name": "i", "type": "int"},
  {"name": "l", "type": "long"},
  {"name": "f", "type": "float"},
  {"name": "d", "type": "double"},
  {"name": "by", "type": "bytes"},
  {"name": "s", "type": "string"},
  {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
  {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
  {"name": "arr", "type": {"type": "array", "items": "int"}},
  {"name": "m", "type": {"type": "map", "values": "string"}},
  {"name": "opt", "type": ["null", "string"]},
  {"name": "il", "type": ["int", "long"]},
  {"name": "fd", "type": ["null", "float", "double"]},
  {"name": "p", "type": {"type": "record", "name": "Point", "fields": [
    {"name": "x", "type": "int"}, {"name": "y", "type": "double"},
    {"name": "tags", "type": {"type": "array", "items": "string"}}]}},
  {"name": "three", "type": ["null", "int", "string", "Point"]},
  {"name": "optrec", "type": ["null", "t.Point"]},
  {"name": "mm", "type": {"type": "map", "values": {"type": "array", "items": "long"}}},
  {"name": "deep", "type": {"type": "array", "items": {"type": "map", "values": ["null", "long", "Color"]}}}]})";

// One Everything value set through Avro C's setters.
struct EverythingRow {
  bool b;
  std::int32_t i;
  std::int64_t l;
  float f;
  double d;
  int e;
  std::vector<std::int32_t> arr;
  int opt;  // 0: null, 1: "some"
  int il;   // branch of [int, long]
  int three;
};

void set_everything(AvroC& c, const EverythingRow& r) {
  c.reset();
  const avro_value_t v = c.value();
  set_null(field(v, "n"));
  set_bool(field(v, "b"), r.b);
  set_int(field(v, "i"), r.i);
  set_long(field(v, "l"), r.l);
  set_float(field(v, "f"), r.f);
  set_double(field(v, "d"), r.d);
  set_bytes(field(v, "by"), r.b ? Bytes{0x00, 0xff, 0x10} : Bytes{});
  set_string(field(v, "s"), r.b ? "h\xc3\xa9llo \xe2\x82\xac" : "");
  set_enum(field(v, "e"), r.e);
  set_bytes(field(v, "fx"), Bytes{1, 2, 3, static_cast<std::uint8_t>(r.i)}, true);
  for (const auto x : r.arr) set_int(append(field(v, "arr")), x);
  if (r.b) {
    set_string(add(field(v, "m"), "a"), "x");
    set_string(add(field(v, "m"), "b"), "");
  }
  if (r.opt) set_string(branch(field(v, "opt"), 1), "some");
  else set_null(branch(field(v, "opt"), 0));
  if (r.il == 0) set_int(branch(field(v, "il"), 0), r.i);
  else set_long(branch(field(v, "il"), 1), r.l);
  if (r.b) set_float(branch(field(v, "fd"), 1), r.f);
  else set_double(branch(field(v, "fd"), 2), r.d);
  const avro_value_t p = field(v, "p");
  set_int(field(p, "x"), r.i);
  set_double(field(p, "y"), 2.5);
  set_string(append(field(p, "tags")), "t1");
  const avro_value_t three = branch(field(v, "three"), r.three);
  if (r.three == 0) set_null(three);
  if (r.three == 1) set_int(three, 42);
  if (r.three == 2) set_string(three, "s");
  if (r.three == 3) {
    set_int(field(three, "x"), 5);
    set_double(field(three, "y"), -0.5);
  }
  if (r.b) set_int(field(branch(field(v, "optrec"), 1), "x"), -1);
  else set_null(branch(field(v, "optrec"), 0));
  if (r.b) {
    const avro_value_t k = add(field(v, "mm"), "k");
    set_long(append(k), 1);
    set_long(append(k), r.l);
    add(field(v, "mm"), "e");
    const avro_value_t m0 = append(field(v, "deep"));
    set_null(branch(add(m0, "n"), 0));
    set_long(branch(add(m0, "l"), 1), 7);
    set_enum(branch(add(m0, "c"), 2), 1);
  }
}

TEST(AvroDecoder, EveryTypeWrittenByAvroC) {
  const AvroSchema schema = AvroSchema::parse(kEverything);
  EXPECT_EQ(schema.spark_type(),
            "STRUCT<n: VOID, b: BOOLEAN, i: INT, l: BIGINT, f: FLOAT, d: DOUBLE, by: BINARY, s: STRING, e: STRING, "
            "fx: BINARY, arr: ARRAY<INT>, m: MAP<STRING, STRING>, opt: STRING, il: BIGINT, fd: DOUBLE, "
            "p: STRUCT<x: INT, y: DOUBLE, tags: ARRAY<STRING>>, three: STRUCT<member0: INT, member1: STRING, "
            "member2: STRUCT<x: INT, y: DOUBLE, tags: ARRAY<STRING>>>, optrec: STRUCT<x: INT, y: DOUBLE, tags: "
            "ARRAY<STRING>>, mm: MAP<STRING, ARRAY<BIGINT>>, deep: ARRAY<MAP<STRING, STRUCT<member0: BIGINT, member1: "
            "STRING>>>>");
  AvroC c(kEverything);
  AvroDecoder dec(schema);
  const EverythingRow rows[] = {
      {true, -123456, std::int64_t{1} << 40, 1.5f, -2.25, 2, {1, -2, 3}, 1, 1, 2},
      {false, INT32_MIN, INT64_MIN, -0.0f, 1e300, 0, {}, 0, 0, 0},
      {true, INT32_MAX, INT64_MAX, 3.0e38f, -0.1, 1, {7}, 1, 0, 1},
      {false, 0, -1, 0.25f, 0, 1, {0, 0}, 0, 1, 3},
  };
  std::vector<std::string> expected;
  for (const auto& r : rows) {
    set_everything(c, r);
    expected.push_back(render_avro(c.value()));
    std::string error;
    EXPECT_TRUE(dec.append(view(c.write()), 0, &error)) << error;
  }
  Decoded out;
  finish_into(dec, out);
  ASSERT_EQ(out.rows(), 4);
  EXPECT_EQ(out.schema.format, std::string("+s"));
  const char* formats[] = {"n",  "b",  "i", "l", "f", "g",  "z",  "u",  "u",  "z",
                           "+l", "+m", "u", "l", "g", "+s", "+s", "+s", "+m", "+l"};
  ASSERT_EQ(out.columns(), 20);
  for (int k = 0; k < 20; ++k) {
    EXPECT_EQ(out.format(k), formats[k]) << out.field(k).name;
    EXPECT_TRUE(out.field(k).flags & ARROW_FLAG_NULLABLE) << out.field(k).name;
  }
  // The map's entries and keys are not nullable (Arrow's map layout).
  EXPECT_EQ(out.field(11).children[0]->flags & ARROW_FLAG_NULLABLE, 0);
  EXPECT_STREQ(out.field(11).children[0]->children[0]->name, "key");
  EXPECT_STREQ(out.field(16).children[2]->name, "member2");

  EXPECT_EQ(
      out.row(0),
      "{n:null,b:true,i:-123456,l:1099511627776,f:1.5,d:-2.25,by:0x00ff10,s:\"h\xc3\xa9llo \xe2\x82\xac\",e:\"BLUE\","
      "fx:0x010203c0,arr:[1,-2,3],m:{\"a\":\"x\",\"b\":\"\"},opt:\"some\",il:1099511627776,fd:1.5,"
      "p:{x:-123456,y:2.5,tags:[\"t1\"]},three:{member0:null,member1:\"s\",member2:null},"
      "optrec:{x:-1,y:0,tags:[]},mm:{\"k\":[1,1099511627776],\"e\":[]},"
      "deep:[{\"n\":null,\"l\":{member0:7,member1:null},\"c\":{member0:null,member1:\"GREEN\"}}]}");
  EXPECT_EQ(out.row(1),
            "{n:null,b:false,i:-2147483648,l:-9223372036854775808,f:-0,d:1e+300,by:0x,s:\"\",e:\"RED\",fx:0x01020300,"
            "arr:[],m:{},opt:null,il:-2147483648,fd:1e+300,p:{x:-2147483648,y:2.5,tags:[\"t1\"]},three:null,"
            "optrec:null,mm:{},deep:[]}");
  for (int r = 0; r < 4; ++r) EXPECT_EQ(out.row(r), expected[static_cast<std::size_t>(r)]) << r;
  EXPECT_EQ(out.cell("three", 2), "{member0:42,member1:null,member2:null}");
  EXPECT_EQ(out.cell("three", 3), "{member0:null,member1:null,member2:{x:5,y:-0.5,tags:[]}}");

  // The buffers themselves: int32 values, the string offsets, validity bitmaps.
  const ArrowArray& i = out.column(2);
  EXPECT_EQ(i.null_count, 0);
  EXPECT_EQ(i.buffers[0], nullptr);
  EXPECT_EQ(load<std::int32_t>(i, 1, 3), 0);
  const ArrowArray& s = out.column(7);
  ASSERT_EQ(s.n_buffers, 3);
  EXPECT_EQ(load<std::int32_t>(s, 1, 0), 0);
  EXPECT_EQ(load<std::int32_t>(s, 1, 1), 10);  // "héllo €": 10 bytes
  EXPECT_EQ(load<std::int32_t>(s, 1, 4), 20);
  const ArrowArray& opt = out.column(12);
  EXPECT_EQ(opt.null_count, 2);
  EXPECT_EQ(static_cast<const std::uint8_t*>(opt.buffers[0])[0], 0b0101);
  const ArrowArray& arr = out.column(10);
  EXPECT_EQ(arr.children[0]->length, 6);
  const std::int32_t list_offsets[] = {0, 3, 3, 4, 6};
  for (int k = 0; k < 5; ++k) EXPECT_EQ(load<std::int32_t>(arr, 1, k), list_offsets[k]);
  const ArrowArray& three = out.column(16);
  EXPECT_EQ(three.null_count, 1);
  EXPECT_EQ(three.children[0]->null_count, 3);  // member0 only in row 2
  EXPECT_EQ(out.column(0).n_buffers, 0);        // Arrow's null type has no buffers
  EXPECT_EQ(out.column(0).null_count, 4);
}

TEST(AvroDecoder, RandomRecordsMatchAvroC) {
  const AvroSchema schema = AvroSchema::parse(kEverything);
  AvroC c(kEverything);
  AvroDecoder dec(schema);
  std::mt19937_64 rng(20240501);
  std::vector<std::string> expected;
  for (int n = 0; n < 400; ++n) {
    c.reset();
    randomize(c.value(), rng, 0);
    expected.push_back(render_avro(c.value()));
    std::string error;
    ASSERT_TRUE(dec.append(view(c.write()), 0, &error)) << n << ": " << error;
    if (n == 199) {  // two batches
      Decoded out;
      finish_into(dec, out);
      ASSERT_EQ(out.rows(), 200);
      for (int r = 0; r < 200; ++r) ASSERT_EQ(out.row(r), expected[static_cast<std::size_t>(r)]) << "row " << r;
    }
  }
  Decoded out;
  finish_into(dec, out);
  ASSERT_EQ(out.rows(), 200);
  for (int r = 0; r < 200; ++r) ASSERT_EQ(out.row(r), expected[static_cast<std::size_t>(200 + r)]) << "row " << 200 + r;
}

// ---- malformed values ----

const std::string kNested = R"({"type": "record", "name": "M", "fields": [
  {"name": "id", "type": "long"},
  {"name": "tags", "type": {"type": "array", "items": "string"}},
  {"name": "attrs", "type": {"type": "map", "values": {"type": "array", "items": "int"}}},
  {"name": "name", "type": "string"},
  {"name": "u", "type": ["null", "string", "int"]}]})";

// id, tags ["a", "b"], attrs {"k": [1, 2], "j": []}, then the rest.
Enc nested_head(std::int64_t id) {
  return std::move(enc().l(id).l(2).s("a").s("b").l(0).l(2).s("k").l(2).l(1).l(2).l(0).s("j").l(0).l(0));
}
Bytes nested_good(std::int64_t id) { return nested_head(id).s("nm").l(2).l(300).b; }
std::string nested_row(std::int64_t id) {
  return "{id:" + std::to_string(id) +
         ",tags:[\"a\",\"b\"],attrs:{\"k\":[1,2],\"j\":[]},name:\"nm\",u:{member0:null,member1:300}}";
}

TEST(AvroDecoder, MalformedValueGivesNullRowAndKeepsItsNeighbours) {
  struct Case {
    const char* what;
    Bytes value;
    const char* error;
  };
  Bytes truncated = nested_good(1);
  truncated.pop_back();
  Bytes truncated_string = nested_head(1).l(10).raw("abc").b;
  const Case cases[] = {
      {"truncated number", truncated, "ends inside a number"},
      {"truncated string", truncated_string, "runs past the value's end"},
      {"negative length", nested_head(1).l(-1).b, "negative length"},
      {"bad union index", nested_head(1).s("nm").l(3).b, "union index 3"},
      {"negative union index", nested_head(1).s("nm").l(-1).b, "union index -1"},
      {"varint over 10 bytes",
       nested_head(1).s("nm").l(2).raw({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}).b,
       "64 bits"},
      {"varint inside a map's list",
       enc()
           .l(1)
           .l(0)
           .l(1)
           .s("k")
           .l(3)
           .l(5)
           .l(6)
           .raw({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80})
           .b,
       "64 bits"},
      {"int out of range", enc().l(1).l(0).l(1).s("k").l(1).l(std::int64_t{1} << 31).b, "out of range"},
      {"invalid UTF-8 item", enc().l(1).l(3).s("ok").s("\xff\xfe").s("x").b, "UTF-8"},
      {"invalid UTF-8 map key", enc().l(1).l(0).l(2).s("k").l(0).s("\xc3").l(0).l(0).b, "UTF-8"},
      {"block count over the bytes", enc().l(1).l(1000000).s("a").b, "longer than the value"},
      {"negative block count over the bytes", enc().l(1).l(-1000000).l(3).s("a").b, "longer than the value"},
      {"a valid value (control)", nested_head(1).s("nm").l(0).b, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    AvroDecoder dec(AvroSchema::parse(kNested));
    std::string error;
    EXPECT_TRUE(dec.append(view(nested_good(7)), 0, &error)) << error;
    error.clear();
    const bool control = std::string_view(c.error).empty();
    EXPECT_EQ(dec.append(view(c.value), 0, &error), control);
    EXPECT_NE(error.find(c.error), std::string::npos) << error;
    EXPECT_EQ(error.empty(), control) << error;
    EXPECT_TRUE(dec.append(std::nullopt));
    EXPECT_TRUE(dec.append(view(nested_good(8)), 0, &error)) << error;
    Decoded out;
    finish_into(dec, out);
    ASSERT_EQ(out.rows(), 4);
    // The tombstone's row is null; the malformed one's is a struct of nulls.
    EXPECT_EQ(out.array().null_count, 1);
    EXPECT_TRUE(is_valid(out.schema, out.array(), 1));
    EXPECT_FALSE(is_valid(out.schema, out.array(), 2));
    EXPECT_EQ(out.row(0), nested_row(7));
    if (!control) {
      EXPECT_EQ(out.row(1), null_row(out));
    }
    EXPECT_EQ(out.row(2), "null");
    for (std::int64_t k = 0; k < out.columns(); ++k) EXPECT_EQ(out.cell(k, 2), "null") << k;
    EXPECT_EQ(out.row(3), nested_row(8));
    if (control) continue;
    // Nothing of the failed row is left in the children.
    for (std::int64_t k = 0; k < out.columns(); ++k) EXPECT_EQ(out.column(k).null_count, 2) << k;
    const ArrowArray& tags = out.column(1);
    EXPECT_EQ(tags.children[0]->length, 4);
    EXPECT_EQ(load<std::int32_t>(tags, 1, 1), 2);
    EXPECT_EQ(load<std::int32_t>(tags, 1, 2), 2);
    EXPECT_EQ(load<std::int32_t>(*tags.children[0], 1, 4), 4);  // "a","b","a","b"
    const ArrowArray& entries = *out.column(2).children[0];
    EXPECT_EQ(entries.length, 4);
    EXPECT_EQ(entries.children[1]->length, 4);
    EXPECT_EQ(entries.children[1]->children[0]->length, 4);  // [1,2], [], [1,2], []
  }
}

TEST(AvroDecoder, ItemsThatTakeNoBytesAreBounded) {
  AvroDecoder dec(AvroSchema::parse(R"({"type": "array", "items": "null"})"));
  std::string error;
  EXPECT_TRUE(dec.append(view(enc().l(3).l(-2).l(0).l(0).b), 0, &error)) << error;
  EXPECT_FALSE(dec.append(view(enc().l((std::int64_t{1} << 20) + 1).l(0).b), 0, &error));
  EXPECT_NE(error.find("take no bytes"), std::string::npos) << error;
  // A second block whose count would overflow the running total.
  error.clear();
  EXPECT_FALSE(dec.append(view(enc().l(5).l(INT64_MAX).l(0).b), 0, &error));
  EXPECT_NE(error.find("take no bytes"), std::string::npos) << error;
  EXPECT_FALSE(dec.append(view(enc().l(5).l(-INT64_MAX).l(0).l(0).b), 0, &error));
  // Items of many columns count each column.
  AvroDecoder wide(AvroSchema::parse(R"({"type": "array", "items": {"type": "record", "name": "Z", "fields": [
    {"name": "a", "type": "null"}, {"name": "b", "type": "null"}, {"name": "c", "type": "null"},
    {"name": "d", "type": "null"}, {"name": "e", "type": "null"}, {"name": "f", "type": "null"}]}})"));
  EXPECT_TRUE(wide.append(view(enc().l(100000).l(0).b), 0, &error)) << error;
  EXPECT_FALSE(wide.append(view(enc().l(std::int64_t{1} << 19).l(0).b), 0, &error));
  EXPECT_NE(error.find("take no bytes"), std::string::npos) << error;
  EXPECT_EQ(wide.finish().array().children[0]->children[0]->length, 100000);

  Decoded out;
  finish_into(dec, out);
  ASSERT_EQ(out.rows(), 4);
  EXPECT_EQ(out.cell(0, 0), "[null,null,null,null,null]");
  EXPECT_EQ(out.column(0).children[0]->length, 5);
  for (int r = 1; r < 4; ++r) EXPECT_EQ(out.cell(0, r), "null");
}

}  // namespace
