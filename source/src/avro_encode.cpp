// AvroEncoder (avro.hpp): Arrow rows -> Avro binary, as Spark's to_avro
// writes them. The Arrow field and the Avro schema are matched once per
// batch schema into a tree of steps, then each row is written by walking it.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "arrow_cells.hpp"
#include "arrow_detail.hpp"
#include "avro_schema.hpp"
#include "kwire/source/arrow_records.hpp"
#include "kwire/source/avro.hpp"

namespace kwire::source {

using namespace avro_detail;

namespace {

[[noreturn]] void mismatch(const std::string& path, std::string_view arrow, const Node& n, std::string_view why = "") {
  throw AvroSchemaError(fmt::format("to_avro: column \"{}\" of Arrow type '{}' cannot be written as Avro {}{}{}", path,
                                    arrow, spark_type(n), why.empty() ? "" : ": ", why));
}

using arrow_cells::In;

enum class Out : std::uint8_t {
  null,
  boolean,
  int_,
  long_,
  float_,
  double_,
  bytes,
  string,
  fixed,
  enumeration,
  decimal_bytes,
  decimal_fixed,
  record,
  array,
  map,
  union_
};

struct Step {
  In in = In::null;
  Out out = Out::null;
  const ArrowArray* array = nullptr;
  const Node* node = nullptr;
  std::string path;
  std::int64_t ts_div = 1, ts_mul = 1;  // Arrow timestamp unit -> the Avro logical unit
  int scale_from = 0;                   // decimals: the Arrow scale (must equal the Avro one)
  std::vector<Step> children;           // record: per Avro field; array/map: [items] (map: [key, value])
  std::vector<int> field_of;            // record: Avro field -> Arrow child
  std::vector<std::int64_t> branch_of;  // union: child i -> branch index; null_branch for nulls
  std::int64_t null_branch = -1;
  bool members = false;  // union written from a struct of member0..N
};

In in_kind(std::string_view f, std::int64_t* unit_per_second) {
  const In k = arrow_cells::in_kind(f, unit_per_second);
  if (k == In::unsupported || k == In::duration)
    throw AvroSchemaError(fmt::format("to_avro: Arrow type '{}' is not supported", f));
  return k;
}

using arrow_cells::at;
using arrow_cells::is_bin;
using arrow_cells::is_int;
using arrow_cells::is_long;
using arrow_cells::is_text;
using arrow_cells::range;
using arrow_cells::valid;

Step compile(const ArrowSchema& s, const ArrowArray& a, const Node& n, const std::string& path);

Step compile_union(const ArrowSchema& s, const ArrowArray& a, const Node& n, const std::string& path) {
  Step u;
  u.out = Out::union_;
  u.node = &n;
  u.array = &a;
  u.path = path;
  std::vector<std::size_t> non_null;
  for (std::size_t i = 0; i < n.branches.size(); ++i) {
    if (n.branches[i]->type == Type::null) u.null_branch = static_cast<std::int64_t>(i);
    else non_null.push_back(i);
  }
  std::int64_t unused = 0;
  const std::string_view f = s.format ? s.format : "";
  u.in = in_kind(f, &unused);
  // A struct of member0..memberN written into a union of N+1 non-null branches.
  if (u.in == In::strct && non_null.size() > 1 && static_cast<std::size_t>(s.n_children) == non_null.size()) {
    bool named = true;
    for (std::int64_t i = 0; i < s.n_children; ++i)
      named = named && s.children[i]->name && std::string_view(s.children[i]->name) == fmt::format("member{}", i);
    if (named) {
      u.members = true;
      for (std::int64_t i = 0; i < s.n_children; ++i) {
        u.children.push_back(compile(*s.children[i], *a.children[i], *n.branches[non_null[static_cast<std::size_t>(i)]],
                                     path + "." + s.children[i]->name));
        u.branch_of.push_back(static_cast<std::int64_t>(non_null[static_cast<std::size_t>(i)]));
      }
      return u;
    }
  }
  if (u.in == In::null) return u;
  std::string last;
  for (std::size_t i : non_null) {
    try {
      u.children.push_back(compile(s, a, *n.branches[i], path));
      u.branch_of.push_back(static_cast<std::int64_t>(i));
      return u;
    } catch (const AvroSchemaError& e) {
      last = e.what();
    }
  }
  mismatch(path, f, n, last.empty() ? "no branch of the union takes it" : last);
}

Step compile(const ArrowSchema& s, const ArrowArray& a, const Node& n, const std::string& path) {
  if (n.type == Type::union_) return compile_union(s, a, n, path);
  Step st;
  st.node = &n;
  st.array = &a;
  st.path = path;
  const std::string_view f = s.format ? s.format : "";
  std::int64_t per_second = 0;
  st.in = in_kind(f, &per_second);
  if (s.dictionary || a.dictionary) mismatch(path, f, n, "dictionary arrays are not supported");
  auto need = [&](bool ok) {
    if (!ok) mismatch(path, f, n);
  };
  switch (n.type) {
    case Type::null:
      need(st.in == In::null);
      st.out = Out::null;
      break;
    case Type::boolean:
      need(st.in == In::boolean);
      st.out = Out::boolean;
      break;
    case Type::int_:
      need(is_int(st.in) || st.in == In::date32);  // Spark: a date into any int, as days
      st.out = Out::int_;
      break;
    case Type::long_:
      if (st.in == In::ts) {
        // A long without a logical type takes milliseconds, as Spark's
        // AvroSerializer keeps for older schemas.
        const bool millis = n.logical == Logical::timestamp_millis || n.logical == Logical::local_timestamp_millis ||
                            n.logical == Logical::none;
        const bool micros = n.logical == Logical::timestamp_micros || n.logical == Logical::local_timestamp_micros;
        need(millis || micros);
        const std::int64_t want = millis ? 1000 : 1000000;
        if (per_second > want) st.ts_div = per_second / want;
        else st.ts_mul = want / per_second;
      } else {
        need(is_long(st.in));
      }
      st.out = Out::long_;
      break;
    case Type::float_:
      need(st.in == In::f32 || is_long(st.in));
      st.out = Out::float_;
      break;
    case Type::double_:
      need(st.in == In::f32 || st.in == In::f64 || is_long(st.in));
      st.out = Out::double_;
      break;
    case Type::string:
      need(is_text(st.in));
      st.out = Out::string;
      break;
    case Type::enumeration:
      need(is_text(st.in));
      st.out = Out::enumeration;
      break;
    case Type::bytes:
    case Type::fixed: {
      const bool fixed = n.type == Type::fixed;
      if (n.logical == Logical::decimal) {
        need(st.in == In::decimal);
        const auto comma = f.find(',');
        int p = 0, sc = 0;
        if (std::sscanf(std::string(f.substr(2)).c_str(), "%d,%d", &p, &sc) < 1 || comma == std::string_view::npos)
          mismatch(path, f, n);
        if (f.find(',', comma + 1) != std::string_view::npos && !f.ends_with(",128"))
          mismatch(path, f, n, "only decimal128");
        if (sc != n.scale) mismatch(path, f, n, fmt::format("its scale {} is not the schema's {}", sc, n.scale));
        st.out = fixed ? Out::decimal_fixed : Out::decimal_bytes;
      } else {
        need(is_bin(st.in) || (!fixed && is_text(st.in)));
        st.out = fixed ? Out::fixed : Out::bytes;
      }
      break;
    }
    case Type::record: {
      need(st.in == In::strct);
      st.out = Out::record;
      for (const Field& fld : n.fields) {
        int found = -1;
        for (std::int64_t i = 0; i < s.n_children; ++i)
          if (s.children[i]->name && fld.name == s.children[i]->name) found = static_cast<int>(i);
        if (found < 0) {
          const bool nullable =
              fld.type->type == Type::null ||
              (fld.type->type == Type::union_ && std::any_of(fld.type->branches.begin(), fld.type->branches.end(),
                                                             [](const Node* b) { return b->type == Type::null; }));
          if (!nullable)
            throw AvroSchemaError(
                fmt::format("to_avro: the Avro field \"{}\" has no column \"{}\" to take it from (and cannot be null)",
                            path.empty() ? fld.name : path + "." + fld.name, fld.name));
        }
        st.field_of.push_back(found);
        st.children.push_back(found < 0 ? Step{}
                                        : compile(*s.children[found], *a.children[found], *fld.type,
                                                  path.empty() ? fld.name : path + "." + fld.name));
      }
      break;
    }
    case Type::array:
      need(st.in == In::list || st.in == In::large_list);
      st.out = Out::array;
      st.children.push_back(compile(*s.children[0], *a.children[0], *n.items, path + "[]"));
      break;
    case Type::map: {
      need(st.in == In::map && s.n_children == 1 && s.children[0]->n_children == 2);
      st.out = Out::map;
      const ArrowSchema& entries = *s.children[0];
      const ArrowArray& entry_array = *a.children[0];
      std::int64_t unused = 0;
      if (!is_text(in_kind(entries.children[0]->format, &unused))) mismatch(path, f, n, "Avro map keys are strings");
      Step key;
      key.in = in_kind(entries.children[0]->format, &unused);
      key.array = entry_array.children[0];
      st.children.push_back(std::move(key));
      st.children.push_back(compile(*entries.children[1], *entry_array.children[1], *n.items, path + "{}"));
      break;
    }
    case Type::union_: break;
  }
  return st;
}

// ---- writing ----

std::string_view bytes_at(const Step& s, std::int64_t i) {
  return arrow_cells::bytes(*s.array, i, s.in == In::large_utf8 || s.in == In::large_binary);
}

std::int64_t int_at(const Step& s, std::int64_t i) {
  const ArrowArray& a = *s.array;
  switch (s.in) {
    case In::i8: return at<std::int8_t>(a, i);
    case In::i16: return at<std::int16_t>(a, i);
    case In::i32:
    case In::date32: return at<std::int32_t>(a, i);
    case In::u8: return at<std::uint8_t>(a, i);
    case In::u16: return at<std::uint16_t>(a, i);
    case In::u32: return at<std::uint32_t>(a, i);
    case In::u64: {
      const std::uint64_t v = at<std::uint64_t>(a, i);
      if (v > static_cast<std::uint64_t>(INT64_MAX))
        throw ArrowRecordError(fmt::format("to_avro: column \"{}\": {} does not fit an Avro long", s.path, v));
      return static_cast<std::int64_t>(v);
    }
    default: return at<std::int64_t>(a, i);
  }
}

void put_long(std::string& out, std::int64_t v) {
  std::uint64_t z = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  while (z >= 0x80) {
    out.push_back(static_cast<char>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  out.push_back(static_cast<char>(z));
}

void put_raw(std::string& out, const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); }

// A decimal128's unscaled value, big-endian two's complement: the fewest
// bytes (as Java's BigInteger.toByteArray), or `size` bytes sign-extended.
void put_decimal(std::string& out, const Step& s, std::int64_t i, std::int64_t size) {
  std::uint8_t le[16];
  std::memcpy(le, static_cast<const std::uint8_t*>(s.array->buffers[1]) + (i + s.array->offset) * 16, 16);
  const std::uint8_t sign = (le[15] & 0x80) ? 0xff : 0;
  int n = 16;
  while (n > 1 && le[n - 1] == sign && ((le[n - 2] & 0x80) == (sign & 0x80))) --n;
  if (size >= 0) {
    if (n > size)
      throw ArrowRecordError(fmt::format("to_avro: column \"{}\": a decimal does not fit fixed({})", s.path, size));
    out.append(static_cast<std::size_t>(size - n), static_cast<char>(sign));
  } else {
    put_long(out, n);
  }
  for (int k = n - 1; k >= 0; --k) out.push_back(static_cast<char>(le[k]));
}

void write(const Step& s, std::int64_t i, std::string& out);

void write_union(const Step& s, std::int64_t i, std::string& out) {
  if (!valid(*s.array, i) || s.in == In::null) {
    if (s.null_branch < 0)
      throw ArrowRecordError(fmt::format("to_avro: column \"{}\" is null and the Avro union has no null", s.path));
    put_long(out, s.null_branch);
    return;
  }
  if (s.members) {
    for (std::size_t k = 0; k < s.children.size(); ++k) {
      const std::int64_t child_row = i + s.array->offset;
      if (valid(*s.children[k].array, child_row)) {
        put_long(out, s.branch_of[k]);
        write(s.children[k], child_row, out);
        return;
      }
    }
    if (s.null_branch < 0) throw ArrowRecordError(fmt::format("to_avro: column \"{}\": no member is set", s.path));
    put_long(out, s.null_branch);
    return;
  }
  put_long(out, s.branch_of[0]);
  write(s.children[0], i, out);
}

void write(const Step& s, std::int64_t i, std::string& out) {
  if (s.out == Out::union_) return write_union(s, i, out);
  if (s.out != Out::null && !valid(*s.array, i))
    throw ArrowRecordError(
        fmt::format("to_avro: column \"{}\" is null but its Avro type {} cannot be", s.path, spark_type(*s.node)));
  const ArrowArray& a = *s.array;
  switch (s.out) {
    case Out::null: return;
    case Out::boolean: out.push_back(arrow_cells::bit(a, i) ? 1 : 0); return;
    case Out::int_:
    case Out::long_: {
      if (s.in == In::ts) {
        const std::int64_t v = at<std::int64_t>(a, i);
        std::int64_t scaled = 0;
        if (s.ts_div > 1) {
          scaled = v / s.ts_div - ((v % s.ts_div) < 0 ? 1 : 0);  // floor, as Spark's conversions
        } else if (__builtin_mul_overflow(v, s.ts_mul, &scaled)) {
          throw ArrowRecordError(fmt::format("to_avro: column \"{}\": timestamp {} overflows", s.path, v));
        }
        put_long(out, scaled);
      } else {
        put_long(out, int_at(s, i));
      }
      return;
    }
    case Out::float_: {
      const float f = s.in == In::f32 ? at<float>(a, i) : static_cast<float>(int_at(s, i));
      put_raw(out, &f, 4);
      return;
    }
    case Out::double_: {
      const double d = s.in == In::f64   ? at<double>(a, i)
                       : s.in == In::f32 ? static_cast<double>(at<float>(a, i))
                                         : static_cast<double>(int_at(s, i));
      put_raw(out, &d, 8);
      return;
    }
    case Out::bytes:
    case Out::string: {
      const std::string_view b = bytes_at(s, i);
      put_long(out, static_cast<std::int64_t>(b.size()));
      out += b;
      return;
    }
    case Out::fixed: {
      const std::string_view b = bytes_at(s, i);
      if (static_cast<std::int64_t>(b.size()) != s.node->size)
        throw ArrowRecordError(
            fmt::format("to_avro: column \"{}\": {} bytes for a fixed of {}", s.path, b.size(), s.node->size));
      out += b;
      return;
    }
    case Out::enumeration: {
      const std::string_view b = bytes_at(s, i);
      for (std::size_t k = 0; k < s.node->symbols.size(); ++k) {
        if (s.node->symbols[k] == b) {
          put_long(out, static_cast<std::int64_t>(k));
          return;
        }
      }
      throw ArrowRecordError(
          fmt::format("to_avro: column \"{}\": \"{}\" is not a symbol of enum {}", s.path, b, s.node->name));
    }
    case Out::decimal_bytes: put_decimal(out, s, i, -1); return;
    case Out::decimal_fixed: put_decimal(out, s, i, s.node->size); return;
    case Out::record:
      for (std::size_t k = 0; k < s.children.size(); ++k) {
        if (s.field_of[k] < 0) {
          // An Avro field no column gives: null (its union's null branch).
          const Node& t = *s.node->fields[k].type;
          if (t.type == Type::union_) {
            for (std::size_t b = 0; b < t.branches.size(); ++b)
              if (t.branches[b]->type == Type::null) put_long(out, static_cast<std::int64_t>(b));
          }
          continue;
        }
        write(s.children[k], i + a.offset, out);
      }
      return;
    case Out::array: {
      auto [b, e] = range(a, i, s.in == In::large_list);
      if (e > b) {
        put_long(out, e - b);
        for (std::int64_t k = b; k < e; ++k) write(s.children[0], k, out);
      }
      out.push_back(0);
      return;
    }
    case Out::map: {
      auto [b, e] = range(a, i, false);
      if (e > b) {
        put_long(out, e - b);
        const ArrowArray& entries = *a.children[0];
        for (std::int64_t k = b; k < e; ++k) {
          const std::int64_t row = k + entries.offset;
          const std::string_view key = bytes_at(s.children[0], row);
          put_long(out, static_cast<std::int64_t>(key.size()));
          out += key;
          write(s.children[1], row, out);
        }
      }
      out.push_back(0);
      return;
    }
    case Out::union_: return;
  }
}

// ---- Spark's Avro schema of an Arrow type (SchemaConverters.toAvroType) ----

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

int min_bytes_for_precision(int precision) {
  int n = 1;
  while (std::pow(2.0, 8.0 * n - 1) < std::pow(10.0, precision)) ++n;
  return n;
}

std::string avro_type_of(const ArrowSchema& s, const std::string& record_name, const std::string& ns) {
  const std::string_view f = s.format ? s.format : "";
  const bool nullable = (s.flags & ARROW_FLAG_NULLABLE) != 0;
  std::string t;
  std::int64_t unit = 0;
  const In in = in_kind(f, &unit);
  switch (in) {
    case In::unsupported:
    case In::duration: return "\"null\"";  // in_kind throws for these
    case In::null: return "\"null\"";
    case In::boolean: t = "\"boolean\""; break;
    case In::i8:
    case In::i16:
    case In::i32:
    case In::u8:
    case In::u16: t = "\"int\""; break;
    case In::i64:
    case In::u32:
    case In::u64: t = "\"long\""; break;
    case In::f32: t = "\"float\""; break;
    case In::f64: t = "\"double\""; break;
    case In::utf8:
    case In::large_utf8: t = "\"string\""; break;
    case In::binary:
    case In::large_binary: t = "\"bytes\""; break;
    case In::date32: t = "{\"type\":\"int\",\"logicalType\":\"date\"}"; break;
    case In::ts:
      t = fmt::format("{{\"type\":\"long\",\"logicalType\":\"{}\"}}",
                      f.size() > 4 ? "timestamp-micros" : "local-timestamp-micros");
      break;
    case In::decimal: {
      int p = 0, sc = 0;
      if (std::sscanf(std::string(f.substr(2)).c_str(), "%d,%d", &p, &sc) < 2)
        throw AvroSchemaError(fmt::format("to_avro: bad decimal type '{}'", f));
      const std::string name = ns.empty() ? record_name + ".fixed" : ns + "." + record_name + ".fixed";
      t = fmt::format(
          "{{\"type\":\"fixed\",\"name\":{},\"size\":{},\"logicalType\":\"decimal\",\"precision\":{},"
          "\"scale\":{}}}",
          json_quote(name), min_bytes_for_precision(p), p, sc);
      break;
    }
    case In::list:
    case In::large_list:
      t = fmt::format("{{\"type\":\"array\",\"items\":{}}}", avro_type_of(*s.children[0], record_name, ns));
      break;
    case In::map: {
      const ArrowSchema& entries = *s.children[0];
      std::int64_t unused = 0;
      if (entries.n_children != 2 || !is_text(in_kind(entries.children[0]->format, &unused)))
        throw AvroSchemaError("to_avro: only maps with string keys have an Avro type");
      t = fmt::format("{{\"type\":\"map\",\"values\":{}}}", avro_type_of(*entries.children[1], record_name, ns));
      break;
    }
    case In::strct: {
      const std::string child_ns = ns.empty() ? record_name : ns + "." + record_name;
      t = fmt::format("{{\"type\":\"record\",\"name\":{}", json_quote(record_name));
      if (!ns.empty()) t += fmt::format(",\"namespace\":{}", json_quote(ns));
      t += ",\"fields\":[";
      for (std::int64_t i = 0; i < s.n_children; ++i) {
        const std::string name = s.children[i]->name ? s.children[i]->name : "";
        if (i) t += ",";
        t += fmt::format("{{\"name\":{},\"type\":{}}}", json_quote(name), avro_type_of(*s.children[i], name, child_ns));
      }
      t += "]}";
      break;
    }
  }
  return nullable ? "[" + t + ",\"null\"]" : t;
}

}  // namespace

std::string avro_schema_of(const ArrowSchema& schema) {
  ArrowSchema top = schema;
  top.flags &= ~ARROW_FLAG_NULLABLE;  // the record itself is not null
  return avro_type_of(top, "topLevelRecord", "");
}

struct AvroEncoder::Impl {
  std::shared_ptr<const Tree> tree;
};

AvroEncoder::AvroEncoder(const AvroSchema& writer) : impl_(std::make_unique<Impl>()) { impl_->tree = writer.tree_; }
AvroEncoder::~AvroEncoder() = default;
AvroEncoder::AvroEncoder(AvroEncoder&&) noexcept = default;
AvroEncoder& AvroEncoder::operator=(AvroEncoder&&) noexcept = default;

void AvroEncoder::export_schema(ArrowSchema* out) { arrow_detail::export_value_schema(out); }

ArrowBatch AvroEncoder::encode(const ArrowSchema& schema, const ArrowArray& batch,
                               std::span<const std::uint8_t> prefix) {
  const Node& root = *impl_->tree->root;
  // A record schema takes the batch's columns; so does a union with a record
  // branch, or one given several columns (Spark's member0..N struct). Any
  // other schema takes the batch's only column.
  bool whole = root.type == Type::record;
  if (root.type == Type::union_) {
    whole = schema.n_children != 1;
    for (const Node* b : root.branches) whole = whole || b->type == Type::record;
  }
  Step step;
  if (whole) {
    step = compile(schema, batch, root, "");
  } else {
    if (schema.n_children != 1)
      throw AvroSchemaError(
          fmt::format("to_avro: a {} schema takes one column, not {}", spark_type(root), schema.n_children));
    step = compile(*schema.children[0], *batch.children[0], root, schema.children[0]->name);
  }
  arrow_detail::BinaryColumn values;
  std::string buf;
  for (std::int64_t row = 0; row < batch.length; ++row) {
    buf.assign(reinterpret_cast<const char*>(prefix.data()), prefix.size());
    if (whole) {
      write(step, row, buf);
    } else {
      write(step, row + batch.offset, buf);
    }
    values.append(buf);
  }
  return arrow_detail::value_batch(std::move(values), batch.length);
}

bool AvroSchema::is_record() const { return tree_->root->type == Type::record; }

}  // namespace kwire::source
