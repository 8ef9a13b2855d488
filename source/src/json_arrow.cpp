// RecordJsonWriter::append_arrow_lines: Arrow record batches (C Data
// Interface) as JSON Lines, with the writer's rules for every cell.
#include <charconv>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "kwire/source/arrow.hpp"
#include "kwire/source/json_escape.hpp"
#include "kwire/source/json_writer.hpp"

namespace kwire::source {

namespace {

enum class Kind {
  null,
  boolean,
  i8,
  i16,
  i32,
  i64,
  u8,
  u16,
  u32,
  u64,
  f32,
  f64,
  utf8,
  large_utf8,
  binary,
  large_binary,
  timestamp,
  date32,
  list,
  large_list,
  map,
  decimal,
  duration,
  strct,
};

// One column's reader: its kind, its array and its children.
struct JsonColumn {
  Kind kind = Kind::null;
  std::string name;
  const ArrowArray* array = nullptr;
  std::int64_t unit_per_ms = 0;  // timestamps: units per ms (0: seconds)
  bool zoned = false;            // timestamps: has a zone (TIMESTAMP, not TIMESTAMP_NTZ)
  int scale = 0;                 // decimals
  std::vector<JsonColumn> children;
};

const void* buffer(const ArrowArray& a, int i) { return i < a.n_buffers ? a.buffers[i] : nullptr; }

bool is_null(const JsonColumn& c, std::int64_t row) {
  const ArrowArray& a = *c.array;
  if (c.kind == Kind::null) return true;
  if (a.null_count == 0) return false;
  const auto* bits = static_cast<const std::uint8_t*>(buffer(a, 0));
  if (!bits) return false;
  const std::int64_t i = row + a.offset;
  return !(bits[i >> 3] & (1u << (i & 7)));
}

JsonColumn make_column(const ArrowSchema& s, const ArrowArray& a, const std::string& path) {
  JsonColumn c;
  c.name = s.name ? s.name : "";
  c.array = &a;
  const std::string_view f = s.format ? s.format : "";
  const std::string here = path.empty() ? c.name : path + "." + c.name;
  auto unsupported = [&] {
    return JsonWriterError(fmt::format("cannot write column '{}' as JSON: Arrow type '{}' is not supported", here, f));
  };
  if (f == "n") c.kind = Kind::null;
  else if (f == "b") c.kind = Kind::boolean;
  else if (f == "c") c.kind = Kind::i8;
  else if (f == "s") c.kind = Kind::i16;
  else if (f == "i") c.kind = Kind::i32;
  else if (f == "l") c.kind = Kind::i64;
  else if (f == "C") c.kind = Kind::u8;
  else if (f == "S") c.kind = Kind::u16;
  else if (f == "I") c.kind = Kind::u32;
  else if (f == "L") c.kind = Kind::u64;
  else if (f == "f") c.kind = Kind::f32;
  else if (f == "g") c.kind = Kind::f64;
  else if (f == "u") c.kind = Kind::utf8;
  else if (f == "U") c.kind = Kind::large_utf8;
  else if (f == "z") c.kind = Kind::binary;
  else if (f == "Z") c.kind = Kind::large_binary;
  else if (f == "tdD") c.kind = Kind::date32;
  else if (f.size() >= 4 && f.substr(0, 2) == "ts" && f[3] == ':') {
    c.kind = Kind::timestamp;
    switch (f[2]) {
      case 's': c.unit_per_ms = 0; break;
      case 'm': c.unit_per_ms = 1; break;
      case 'u': c.unit_per_ms = 1000; break;
      case 'n': c.unit_per_ms = 1000000; break;
      default: throw unsupported();
    }
    c.zoned = f.size() > 4;
  } else if (f == "+l" || f == "+L") {
    c.kind = f == "+l" ? Kind::list : Kind::large_list;
  } else if (f == "+s") {
    c.kind = Kind::strct;
  } else if (f == "+m") {
    c.kind = Kind::map;
  } else if (f == "tDu") {
    c.kind = Kind::duration;
  } else if (f.starts_with("d:")) {
    // decimal128(p, s) only ("d:p,s" or "d:p,s,128").
    int p = 0, sc = 0, bits = 128;
    if (std::sscanf(std::string(f.substr(2)).c_str(), "%d,%d,%d", &p, &sc, &bits) < 2 || bits != 128)
      throw unsupported();
    c.kind = Kind::decimal;
    c.scale = sc;
  } else {
    throw unsupported();
  }
  if (s.dictionary || a.dictionary) throw unsupported();
  const int expect_children = (c.kind == Kind::list || c.kind == Kind::large_list || c.kind == Kind::map) ? 1 : -1;
  if (c.kind == Kind::list || c.kind == Kind::large_list || c.kind == Kind::strct || c.kind == Kind::map) {
    if (s.n_children != a.n_children || (expect_children > 0 && s.n_children != expect_children) ||
        (c.kind == Kind::map && s.children[0]->n_children != 2))
      throw JsonWriterError(fmt::format("cannot write column '{}' as JSON: its array does not match its schema", here));
    for (std::int64_t i = 0; i < s.n_children; ++i)
      c.children.push_back(make_column(*s.children[i], *a.children[i], here));
  }
  return c;
}

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_uint(std::string& out, std::uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

template <typename T>
T value_at(const JsonColumn& c, std::int64_t row) {
  const auto* data = static_cast<const T*>(buffer(*c.array, 1));
  return data[row + c.array->offset];
}

// Offsets of a variable-size cell (utf8, binary, list): [begin, end).
template <typename O>
std::pair<std::int64_t, std::int64_t> span_at(const JsonColumn& c, std::int64_t row) {
  const auto* offs = static_cast<const O*>(buffer(*c.array, 1));
  const std::int64_t i = row + c.array->offset;
  return {static_cast<std::int64_t>(offs[i]), static_cast<std::int64_t>(offs[i + 1])};
}

class ArrowJson {
 public:
  explicit ArrowJson(const RecordJsonWriter& writer) : w_(writer) {}

  void cell(std::string& out, const JsonColumn& c, std::int64_t row) const {
    switch (c.kind) {
      case Kind::null: out += "null"; return;
      case Kind::boolean: {
        const auto* bits = static_cast<const std::uint8_t*>(buffer(*c.array, 1));
        const std::int64_t i = row + c.array->offset;
        out += (bits[i >> 3] & (1u << (i & 7))) ? "true" : "false";
        return;
      }
      case Kind::i8: append_int(out, value_at<std::int8_t>(c, row)); return;
      case Kind::i16: append_int(out, value_at<std::int16_t>(c, row)); return;
      case Kind::i32: append_int(out, value_at<std::int32_t>(c, row)); return;
      case Kind::i64: append_int(out, value_at<std::int64_t>(c, row)); return;
      case Kind::u8: append_uint(out, value_at<std::uint8_t>(c, row)); return;
      case Kind::u16: append_uint(out, value_at<std::uint16_t>(c, row)); return;
      case Kind::u32: append_uint(out, value_at<std::uint32_t>(c, row)); return;
      case Kind::u64: append_uint(out, value_at<std::uint64_t>(c, row)); return;
      case Kind::f32: RecordJsonWriter::append_double(out, value_at<float>(c, row), true); return;
      case Kind::f64: RecordJsonWriter::append_double(out, value_at<double>(c, row)); return;
      case Kind::utf8:
      case Kind::large_utf8:
      case Kind::binary:
      case Kind::large_binary: {
        const bool large = c.kind == Kind::large_utf8 || c.kind == Kind::large_binary;
        auto [b, e] = large ? span_at<std::int64_t>(c, row) : span_at<std::int32_t>(c, row);
        const auto* data = static_cast<const std::uint8_t*>(buffer(*c.array, 2));
        protocol::ByteSpan bytes(data + b, static_cast<std::size_t>(e - b));
        if (c.kind == Kind::utf8 || c.kind == Kind::large_utf8)
          append_json_string(out, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
        else w_.append_binary(out, bytes);
        return;
      }
      case Kind::timestamp: {
        const std::int64_t v = value_at<std::int64_t>(c, row);
        std::int64_t ms = 0;
        if (c.unit_per_ms == 0) ms = v * 1000;
        else {
          ms = v / c.unit_per_ms;
          if (v % c.unit_per_ms < 0) --ms;  // toward the past
        }
        if (c.zoned) {
          w_.append_timestamp_ms(out, ms);
        } else {
          // TIMESTAMP_NTZ: the wall-clock time as stored, no zone.
          std::string tmp;
          RecordJsonWriter utc;
          utc.append_timestamp_ms(tmp, ms);  // "yyyy-MM-ddTHH:mm:ss.SSSZ"
          tmp.erase(tmp.size() - 2, 1);      // drop the Z
          out += tmp;
        }
        return;
      }
      case Kind::date32: {
        const std::int64_t days = value_at<std::int32_t>(c, row);
        std::string tmp;
        RecordJsonWriter utc;
        utc.append_timestamp_ms(tmp, days * 86400000);
        out += tmp.substr(0, 11);  // the quote and yyyy-MM-dd
        out += '"';
        return;
      }
      case Kind::list:
      case Kind::large_list: {
        auto [b, e] = c.kind == Kind::large_list ? span_at<std::int64_t>(c, row) : span_at<std::int32_t>(c, row);
        out += '[';
        const JsonColumn& item = c.children[0];
        for (std::int64_t i = b; i < e; ++i) {
          if (i > b) out += ',';
          if (is_null(item, i)) out += "null";
          else cell(out, item, i);
        }
        out += ']';
        return;
      }
      case Kind::map: {
        // As Spark's JSON writer: an object of the entries (keys as text).
        auto [b, e] = span_at<std::int32_t>(c, row);
        const JsonColumn& entries = c.children[0];
        const JsonColumn& key = entries.children[0];
        const JsonColumn& value = entries.children[1];
        out += '{';
        for (std::int64_t i = b; i < e; ++i) {
          const std::int64_t at = i + entries.array->offset;
          if (i > b) out += ',';
          if (key.kind == Kind::utf8 || key.kind == Kind::large_utf8) {
            cell(out, key, at);
          } else {
            // A key written as a JSON string already (binary, timestamps) stays one.
            std::string text;
            cell(text, key, at);
            if (text.starts_with('"')) out += text;
            else append_json_string(out, text);
          }
          out += ':';
          if (is_null(value, at)) out += "null";
          else cell(out, value, at);
        }
        out += '}';
        return;
      }
      case Kind::decimal: {
        // The unscaled 128-bit value with the point `scale` digits from the right, as a JSON number.
        const auto* data = static_cast<const std::uint8_t*>(buffer(*c.array, 1)) + (row + c.array->offset) * 16;
        unsigned __int128 u = 0;
        for (int i = 15; i >= 0; --i) u = (u << 8) | data[i];
        const bool negative = (data[15] & 0x80) != 0;
        if (negative) u = ~u + 1;
        std::string digits;
        do {
          digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
          u /= 10;
        } while (u != 0);
        if (c.scale > 0) {
          if (static_cast<int>(digits.size()) <= c.scale)
            digits.insert(0, static_cast<std::size_t>(c.scale + 1 - digits.size()), '0');
          digits.insert(digits.size() - static_cast<std::size_t>(c.scale), 1, '.');
        } else if (c.scale < 0 && digits != "0") {
          digits.append(static_cast<std::size_t>(-c.scale), '0');  // unscaled × 10^-scale
        }
        if (negative) out += '-';
        out += digits;
        return;
      }
      case Kind::duration: {
        // As Spark's JSON writer writes a DAY TO SECOND interval.
        const std::int64_t v = value_at<std::int64_t>(c, row);
        const bool negative = v < 0;
        const std::uint64_t us = negative ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
        const std::uint64_t secs = us / 1000000, frac = us % 1000000;
        std::string fraction;
        if (frac) {
          fraction = fmt::format(".{:06d}", frac);
          while (fraction.back() == '0') fraction.pop_back();
        }
        out += fmt::format("\"INTERVAL '{}{} {:02d}:{:02d}:{:02d}{}' DAY TO SECOND\"", negative ? "-" : "",
                           secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60, fraction);
        return;
      }
      case Kind::strct: object(out, c.children, row + c.array->offset); return;
    }
  }

  // Fields of a struct at `row` (the children's own offsets apply on top);
  // null fields left out.
  void object(std::string& out, const std::vector<JsonColumn>& fields, std::int64_t row) const {
    out += '{';
    bool any = false;
    for (const JsonColumn& f : fields) {
      if (is_null(f, row)) continue;
      if (any) out += ',';
      any = true;
      append_json_string(out, f.name);
      out += ':';
      cell(out, f, row);
    }
    out += '}';
  }

 private:
  const RecordJsonWriter& w_;
};

}  // namespace

std::int64_t RecordJsonWriter::append_arrow_lines(std::string& out, const ArrowSchema& schema,
                                                  const ArrowArray& batch) const {
  if (!schema.format || std::strcmp(schema.format, "+s") != 0)
    throw JsonWriterError(
        fmt::format("cannot write Arrow data as JSON lines: expected a record batch (struct "
                    "array '+s'), got type '{}'",
                    schema.format ? schema.format : ""));
  if (batch.release == nullptr) throw JsonWriterError("cannot write Arrow data as JSON lines: the array is released");
  if (schema.n_children != batch.n_children)
    throw JsonWriterError("cannot write Arrow data as JSON lines: the batch does not match its schema");
  std::vector<JsonColumn> columns;
  for (std::int64_t i = 0; i < schema.n_children; ++i)
    columns.push_back(make_column(*schema.children[i], *batch.children[i], ""));
  ArrowJson json(*this);
  for (std::int64_t row = 0; row < batch.length; ++row) {
    json.object(out, columns, row + batch.offset);
    out += '\n';
  }
  return batch.length;
}

}  // namespace kwire::source
