// JsonRowBuilder (json_rows.hpp): JSON texts -> Arrow rows of a given shape,
// built with the decoders' column tree (avro_columns.hpp).
#include "kwire/source/json_rows.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "arrow_detail.hpp"
#include "avro_columns.hpp"

namespace kwire::source {

using avro_detail::Col;
using avro_detail::Kind;
using simdjson::dom::element;
using simdjson::dom::element_type;

JsonRowError::JsonRowError(std::string field, const std::string& reason)
    : std::invalid_argument(field.empty() ? reason : fmt::format("field \"{}\": {}", field, reason)),
      field_(std::move(field)),
      reason_(reason) {}

namespace {

bool has_offsets(Kind k) { return k == Kind::binary || k == Kind::utf8 || k == Kind::list || k == Kind::map; }

// The column tree of an Arrow field, for the formats a Col can hold.
Col col_of(const ArrowSchema& s, const std::string& path) {
  Col c;
  c.name = s.name ? s.name : "";
  c.nullable = (s.flags & ARROW_FLAG_NULLABLE) != 0;
  const std::string_view f = s.format ? s.format : "";
  const std::string here = path.empty() ? c.name : path + "." + c.name;
  std::size_t children = 0;
  if (f == "n") c.kind = Kind::null;
  else if (f == "b") c.kind = Kind::boolean;
  else if (f == "i") c.kind = Kind::int32;
  else if (f == "l") c.kind = Kind::int64;
  else if (f == "f") c.kind = Kind::float32;
  else if (f == "g") c.kind = Kind::float64;
  else if (f == "z") c.kind = Kind::binary;
  else if (f == "u") c.kind = Kind::utf8;
  else if (f == "tdD") c.kind = Kind::date32;
  else if (f == "tsu:") c.kind = Kind::ts_ntz;
  else if (f.starts_with("tsu:")) c.kind = Kind::ts_utc;
  else if (f == "tDu") c.kind = Kind::duration_us;
  else if (f == "+l") c.kind = Kind::list, children = 1;
  else if (f == "+m") c.kind = Kind::map, children = 1;
  else if (f == "+s") c.kind = Kind::strct, children = static_cast<std::size_t>(s.n_children);
  else if (f.starts_with("d:")) {
    int p = 0, sc = 0, bits = 128;
    if (std::sscanf(std::string(f.substr(2)).c_str(), "%d,%d,%d", &p, &sc, &bits) < 2 || bits != 128 || p < 1 ||
        p > 38 || sc < 0 || sc > p)
      throw SchemaError(fmt::format("JSON rows: column '{}' has the unsupported decimal type '{}'", here, f));
    c.kind = Kind::decimal;
    c.precision = p;
    c.scale = sc;
  } else {
    throw SchemaError(fmt::format("JSON rows: column '{}' has the unsupported Arrow type '{}'", here, f));
  }
  if (static_cast<std::size_t>(s.n_children) != children ||
      (c.kind == Kind::map &&
       (s.children[0]->n_children != 2 || !s.children[0]->format || std::string_view(s.children[0]->format) != "+s")))
    throw SchemaError(fmt::format("JSON rows: column '{}' of type '{}' has {} children", here, f, s.n_children));
  if (has_offsets(c.kind)) c.end_offset(0);
  for (std::size_t i = 0; i < children; ++i) c.children.push_back(col_of(*s.children[i], here));
  return c;
}

std::string type_name(element_type t) {
  switch (t) {
    case element_type::ARRAY: return "an array";
    case element_type::OBJECT: return "an object";
    case element_type::INT64:
    case element_type::UINT64: return "an integer";
    case element_type::DOUBLE: return "a number";
    case element_type::STRING: return "a string";
    case element_type::BOOL: return "a boolean";
    case element_type::NULL_VALUE: return "null";
  }
  return "a value";
}

std::string what_column_takes(const Col& c) {
  switch (c.kind) {
    case Kind::null: return "null";
    case Kind::boolean: return "true or false";
    case Kind::int32: return "an integer (int32)";
    case Kind::int64: return "an integer (int64)";
    case Kind::float32:
    case Kind::float64: return "a number";
    case Kind::binary: return "a base64 string";
    case Kind::utf8: return "a string";
    case Kind::date32: return "a date string yyyy-MM-dd";
    case Kind::ts_utc:
    case Kind::ts_ntz: return "an ISO-8601 timestamp string or seconds since the epoch";
    case Kind::duration_us: return "an interval string (INTERVAL 'D HH:MM:SS' DAY TO SECOND, or 1.5s)";
    case Kind::decimal: return fmt::format("a decimal({}, {}) number", c.precision, c.scale);
    case Kind::list: return "an array";
    case Kind::map:
    case Kind::strct: return "an object";
  }
  return "a value";
}

[[noreturn]] void wrong(const std::string& path, const Col& c, element_type got) {
  throw JsonRowError(path, fmt::format("expected {}, got {}", what_column_takes(c), type_name(got)));
}

int base64_digit(char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9') return ch - '0' + 52;
  if (ch == '+' || ch == '-') return 62;
  if (ch == '/' || ch == '_') return 63;
  return -1;
}

std::optional<std::string> base64_decode(std::string_view s) {
  while (!s.empty() && s.back() == '=') s.remove_suffix(1);
  if (s.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(s.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (const char ch : s) {
    const int d = base64_digit(ch);
    if (d < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

// Microseconds since the epoch of an ISO-8601 text (parse_timestamp_ms, and
// the fraction's digits 4 to 6).
std::optional<std::int64_t> parse_timestamp_us(std::string_view text) {
  const auto ms = parse_timestamp_ms(text);
  if (!ms) return std::nullopt;
  std::int64_t extra = 0;
  if (const auto dot = text.find('.'); dot != std::string_view::npos) {
    std::size_t i = dot + 1;
    std::int64_t scale = 100;
    for (std::size_t n = 0; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++n)
      if (n >= 3 && n < 6) extra += (text[i] - '0') * scale, scale /= 10;
  }
  std::int64_t us = 0;
  if (__builtin_mul_overflow(*ms, std::int64_t{1000}, &us) || __builtin_add_overflow(us, extra, &us))
    return std::nullopt;
  return us;
}

// Digits [first, last) as an unsigned number; false on overflow.
bool add_digits(std::string_view digits, unsigned __int128& v) {
  for (const char ch : digits) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + static_cast<unsigned>(ch - '0');
    if (v > static_cast<unsigned __int128>(1) << 126) return false;
  }
  return true;
}

// A decimal text ("-12.50", "3e2" is refused) as the unscaled value at `scale`.
std::optional<__int128> parse_decimal(std::string_view s, int precision, int scale, std::string& why) {
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) negative = s[0] == '-', s.remove_prefix(1);
  const auto dot = s.find('.');
  std::string_view whole = s.substr(0, dot), frac = dot == std::string_view::npos ? "" : s.substr(dot + 1);
  if (whole.empty() && frac.empty()) {
    why = "not a decimal number";
    return std::nullopt;
  }
  while (!frac.empty() && frac.back() == '0' && static_cast<int>(frac.size()) > scale) frac.remove_suffix(1);
  if (static_cast<int>(frac.size()) > scale) {
    why = fmt::format("{} digits after the point, the column's scale is {}", frac.size(), scale);
    return std::nullopt;
  }
  unsigned __int128 v = 0;
  if (!add_digits(whole, v) || !add_digits(frac, v)) {
    why = "not a decimal number (digits, one point, no exponent)";
    return std::nullopt;
  }
  for (int i = static_cast<int>(frac.size()); i < scale; ++i) v *= 10;
  unsigned __int128 limit = 1;
  for (int i = 0; i < precision; ++i) limit *= 10;
  if (v >= limit) {
    why = fmt::format("more than {} digits (precision {})", precision, precision);
    return std::nullopt;
  }
  const auto signed_v = static_cast<__int128>(v);
  return negative ? -signed_v : signed_v;
}

// Spark's "INTERVAL '[-]D HH:MM:SS[.f]' DAY TO SECOND", or Protobuf's "[-]S[.f]s".
std::optional<std::int64_t> parse_duration_us(std::string_view s) {
  auto fraction = [](std::string_view f) -> std::optional<std::int64_t> {
    if (f.empty() || f.size() > 9) return std::nullopt;
    std::int64_t us = 0, scale = 100000;
    for (std::size_t i = 0; i < f.size(); ++i) {
      if (f[i] < '0' || f[i] > '9') return std::nullopt;
      if (i < 6) us += (f[i] - '0') * scale, scale /= 10;
    }
    return us;
  };
  auto number = [](std::string_view d) -> std::optional<std::int64_t> {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(d.data(), d.data() + d.size(), v);
    if (d.empty() || ec != std::errc() || end != d.data() + d.size() || v < 0) return std::nullopt;
    return v;
  };
  bool negative = false;
  std::int64_t secs = 0, us = 0;
  if (s.starts_with("INTERVAL '") && s.ends_with("' DAY TO SECOND")) {
    s = s.substr(10, s.size() - 10 - 15);
    if (!s.empty() && s[0] == '-') negative = true, s.remove_prefix(1);
    const auto space = s.find(' ');
    if (space == std::string_view::npos || s.size() < space + 9 || s[space + 3] != ':' || s[space + 6] != ':')
      return std::nullopt;
    const auto d = number(s.substr(0, space)), h = number(s.substr(space + 1, 2)), m = number(s.substr(space + 4, 2)),
               sec = number(s.substr(space + 7, 2));
    if (!d || !h || !m || !sec || *h > 23 || *m > 59 || *sec > 59) return std::nullopt;
    std::string_view rest = s.substr(space + 9);
    if (!rest.empty()) {
      if (rest[0] != '.') return std::nullopt;
      auto f = fraction(rest.substr(1));
      if (!f) return std::nullopt;
      us = *f;
    }
    if (*d > 106751991) return std::nullopt;
    secs = *d * 86400 + *h * 3600 + *m * 60 + *sec;
  } else if (s.size() > 1 && s.back() == 's') {
    s.remove_suffix(1);
    if (s[0] == '-') negative = true, s.remove_prefix(1);
    const auto dot = s.find('.');
    const auto whole = number(s.substr(0, dot));
    if (!whole || *whole > 9223372036854LL) return std::nullopt;
    secs = *whole;
    if (dot != std::string_view::npos) {
      auto f = fraction(s.substr(dot + 1));
      if (!f) return std::nullopt;
      us = *f;
    }
  } else {
    return std::nullopt;
  }
  const std::int64_t v = secs * 1000000 + us;
  return negative ? -v : v;
}

class Filler {
 public:
  // One cell of column `c` from `e` (not null).
  void put(Col& c, element e, const std::string& path) {
    const element_type t = e.type();
    switch (c.kind) {
      case Kind::null: wrong(path, c, t);
      case Kind::boolean:
        if (t != element_type::BOOL) wrong(path, c, t);
        c.push_bool(e.get_bool().value_unsafe());
        return;
      case Kind::int32:
      case Kind::int64: {
        if (t != element_type::INT64) {
          if (t == element_type::UINT64) throw JsonRowError(path, "the integer does not fit the column (int64)");
          wrong(path, c, t);
        }
        const std::int64_t v = e.get_int64().value_unsafe();
        if (c.kind == Kind::int32) {
          if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
            throw JsonRowError(path, fmt::format("{} does not fit the column (int32)", v));
          c.push<std::int32_t>(static_cast<std::int32_t>(v));
        } else {
          c.push<std::int64_t>(v);
        }
        return;
      }
      case Kind::float32:
      case Kind::float64: {
        double v = 0;
        if (t == element_type::INT64) v = static_cast<double>(e.get_int64().value_unsafe());
        else if (t == element_type::UINT64) v = static_cast<double>(e.get_uint64().value_unsafe());
        else if (t == element_type::DOUBLE) v = e.get_double().value_unsafe();
        else if (t == element_type::STRING) {
          const std::string_view s = e.get_string().value_unsafe();
          if (s == "NaN") v = std::numeric_limits<double>::quiet_NaN();
          else if (s == "Infinity" || s == "+Infinity") v = std::numeric_limits<double>::infinity();
          else if (s == "-Infinity") v = -std::numeric_limits<double>::infinity();
          else throw JsonRowError(path, fmt::format("\"{}\" is not a number (nor NaN, Infinity, -Infinity)", s));
        } else {
          wrong(path, c, t);
        }
        if (c.kind == Kind::float32) c.push<float>(static_cast<float>(v));
        else c.push<double>(v);
        return;
      }
      case Kind::utf8: {
        if (t != element_type::STRING) wrong(path, c, t);
        bytes(c, e.get_string().value_unsafe());
        return;
      }
      case Kind::binary: {
        if (t != element_type::STRING) wrong(path, c, t);
        const auto raw = base64_decode(e.get_string().value_unsafe());
        if (!raw) throw JsonRowError(path, "the string is not base64");
        bytes(c, *raw);
        return;
      }
      case Kind::date32: {
        if (t != element_type::STRING) wrong(path, c, t);
        const std::string_view s = e.get_string().value_unsafe();
        const auto ms = s.size() == 10 ? parse_timestamp_ms(s) : std::nullopt;
        if (!ms) throw JsonRowError(path, fmt::format("\"{}\" is not a date yyyy-MM-dd", s));
        c.push<std::int32_t>(static_cast<std::int32_t>(*ms / 86400000));
        return;
      }
      case Kind::ts_utc:
      case Kind::ts_ntz: {
        std::int64_t us = 0;
        if (t == element_type::INT64) {
          if (__builtin_mul_overflow(e.get_int64().value_unsafe(), std::int64_t{1000000}, &us))
            throw JsonRowError(path, "the timestamp is out of range");
        } else if (t == element_type::STRING) {
          const std::string_view s = e.get_string().value_unsafe();
          const auto v = parse_timestamp_us(s);
          if (!v) throw JsonRowError(path, fmt::format("\"{}\" is not an ISO-8601 timestamp", s));
          us = *v;
        } else {
          wrong(path, c, t);
        }
        c.push<std::int64_t>(us);
        return;
      }
      case Kind::duration_us: {
        if (t != element_type::STRING) wrong(path, c, t);
        const std::string_view s = e.get_string().value_unsafe();
        const auto v = parse_duration_us(s);
        if (!v) throw JsonRowError(path, fmt::format("\"{}\" is not an interval", s));
        c.push<std::int64_t>(*v);
        return;
      }
      case Kind::decimal: {
        std::string text;
        if (t == element_type::STRING) text = std::string(e.get_string().value_unsafe());
        else if (t == element_type::INT64 || t == element_type::UINT64 || t == element_type::DOUBLE)
          text = simdjson::minify(e);  // the number's text as written
        else wrong(path, c, t);
        std::string why;
        const auto v = parse_decimal(text, c.precision, c.scale, why);
        if (!v) throw JsonRowError(path, fmt::format("{}: {}", text, why));
        std::uint8_t le[16];
        std::memcpy(le, &*v, 16);
        c.values.insert(c.values.end(), le, le + 16);
        c.valid(true);
        return;
      }
      case Kind::list: {
        if (t != element_type::ARRAY) wrong(path, c, t);
        Col& items = c.children[0];
        std::size_t i = 0;
        const simdjson::dom::array array = e.get_array().value_unsafe();
        for (element item : array) {
          const std::string here = fmt::format("{}[{}]", path, i++);
          if (item.is_null()) items.append_null();
          else put(items, item, here);
        }
        c.end_offset(items.length);
        c.valid(true);
        return;
      }
      case Kind::map: {
        if (t != element_type::OBJECT) wrong(path, c, t);
        Col& entries = c.children[0];
        Col& key = entries.children[0];
        Col& value = entries.children[1];
        const simdjson::dom::object members = e.get_object().value_unsafe();
        for (auto member : members) {
          const std::string here = fmt::format("{}{{{}}}", path, std::string_view(member.key));
          map_key(key, member.key, here);
          if (member.value.is_null()) value.append_null();
          else put(value, member.value, here);
          entries.valid(true);
        }
        c.end_offset(entries.length);
        c.valid(true);
        return;
      }
      case Kind::strct: {
        if (t != element_type::OBJECT) wrong(path, c, t);
        object(c, e, path);
        return;
      }
    }
  }

  // The fields of struct `c` from the members of object `e`.
  void object(Col& c, element e, const std::string& path) {
    std::vector<std::optional<element>> cells(c.children.size());
    const simdjson::dom::object members = e.get_object().value_unsafe();
    for (auto member : members) {
      std::size_t i = 0;
      while (i < c.children.size() && c.children[i].name != member.key) ++i;
      if (i == c.children.size()) {
        const std::string name(member.key);
        throw JsonRowError(
            path.empty() ? name : path + "." + name,
            path.empty() ? "the schema has no field of this name" : "the schema has no field of this name in " + path);
      }
      cells[i] = member.value;  // a repeated member: the last one, as Spark's JSON reader
    }
    for (std::size_t i = 0; i < cells.size(); ++i) {
      Col& child = c.children[i];
      if (!cells[i] || cells[i]->is_null()) child.append_null();
      else put(child, *cells[i], path.empty() ? child.name : path + "." + child.name);
    }
    c.valid(true);
  }

 private:
  static void bytes(Col& c, std::string_view s) {
    c.values.insert(c.values.end(), s.begin(), s.end());
    if (c.values.size() > static_cast<std::size_t>(INT32_MAX))
      throw ArrowError("Arrow export: a column of one record batch passed 2 GiB");
    c.end_offset(static_cast<std::int64_t>(c.values.size()));
    c.valid(true);
  }

  // A map key, given as a JSON object's member name, as the key column's type.
  void map_key(Col& key, std::string_view k, const std::string& path) {
    if (key.kind == Kind::utf8) return bytes(key, k);
    if (key.kind == Kind::boolean && (k == "true" || k == "false")) return key.push_bool(k == "true");
    if (key.kind == Kind::int32 || key.kind == Kind::int64) {
      std::int64_t v = 0;
      auto [end, ec] = std::from_chars(k.data(), k.data() + k.size(), v);
      const bool fits = key.kind == Kind::int64 || (v >= std::numeric_limits<std::int32_t>::min() &&
                                                    v <= std::numeric_limits<std::int32_t>::max());
      if (!k.empty() && ec == std::errc() && end == k.data() + k.size() && fits) {
        if (key.kind == Kind::int32) key.push<std::int32_t>(static_cast<std::int32_t>(v));
        else key.push<std::int64_t>(v);
        return;
      }
    }
    throw JsonRowError(path, fmt::format("the key \"{}\" is not {}", k, what_column_takes(key)));
  }
};

}  // namespace

struct JsonRowBuilder::Impl {
  arrow_detail::OwnedField shape;
  Col root;
  bool single_value = false;
  std::vector<Col*> cols;
  std::vector<avro_detail::Mark> marks;
  simdjson::dom::parser parser;
};

JsonRowBuilder::JsonRowBuilder(const ArrowSchema& shape, bool single_value) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (!shape.format || std::string_view(shape.format) != "+s")
    throw SchemaError("JSON rows: the shape must be an Arrow struct (\"+s\") of the columns");
  if (single_value && shape.n_children != 1)
    throw SchemaError(
        fmt::format("JSON rows: a single value needs a shape of one column, not {} columns", shape.n_children));
  m.shape = arrow_detail::field_of(shape);
  m.root = col_of(shape, "");
  m.root.name.clear();
  m.single_value = single_value;
  avro_detail::collect(m.root, m.cols);
}

JsonRowBuilder::~JsonRowBuilder() = default;
JsonRowBuilder::JsonRowBuilder(JsonRowBuilder&&) noexcept = default;
JsonRowBuilder& JsonRowBuilder::operator=(JsonRowBuilder&&) noexcept = default;

void JsonRowBuilder::append(std::string_view json) {
  Impl& m = *impl_;
  // An empty view may have no data pointer at all, which the parser must not
  // be given.
  if (json.empty()) throw JsonRowError("", "is not JSON: the text is empty");
  element doc;
  if (auto err = m.parser.parse(json.data(), json.size(), true).get(doc))
    throw JsonRowError("", fmt::format("is not JSON: {}", simdjson::error_message(err)));
  if (!m.single_value && doc.type() != element_type::OBJECT)
    throw JsonRowError("", fmt::format("is {}, not a JSON object of the schema's fields", type_name(doc.type())));
  avro_detail::save(m.cols, m.marks);
  try {
    Filler filler;
    if (m.single_value) {
      Col& only = m.root.children[0];
      if (doc.is_null()) only.append_null();
      else filler.put(only, doc, only.name);
      m.root.valid(true);
    } else {
      filler.object(m.root, doc, "");
    }
  } catch (...) {
    avro_detail::restore(m.marks);
    throw;
  }
}

std::int64_t JsonRowBuilder::rows() const noexcept { return impl_->root.length; }

void JsonRowBuilder::export_schema(ArrowSchema* out) const { arrow_detail::export_field(impl_->shape, out); }

ArrowBatch JsonRowBuilder::finish() {
  ArrowBatch batch;
  arrow_detail::export_array(impl_->root.take(), &batch.array());
  return batch;
}

}  // namespace kwire::source
