#include "kwire/source/value_format.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <simdjson.h>

#include "kwire/source/json_escape.hpp"
#include "kwire/source/json_writer.hpp"

namespace kwire::source {

namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Whitespace only (or empty). A JSON value mostly starts with a brace.
bool is_blank(std::string_view s) {
  for (char c : s)
    if (!is_space(c)) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::optional<ColumnType> type_from_name(std::string_view name) {
  const std::string u = upper(name);
  if (u == "STRING" || u == "VARCHAR" || u == "CHAR" || u == "TEXT") return ColumnType::string;
  if (u == "TINYINT" || u == "BYTE") return ColumnType::int8;
  if (u == "SMALLINT" || u == "SHORT") return ColumnType::int16;
  if (u == "INT" || u == "INTEGER") return ColumnType::int32;
  if (u == "BIGINT" || u == "LONG") return ColumnType::int64;
  if (u == "FLOAT" || u == "REAL") return ColumnType::float32;
  if (u == "DOUBLE") return ColumnType::float64;
  if (u == "BOOLEAN" || u == "BOOL") return ColumnType::boolean;
  if (u == "TIMESTAMP" || u == "TIMESTAMP_LTZ") return ColumnType::timestamp;
  return std::nullopt;
}

// Splits on commas that are outside backticks, quotes and angle/round brackets.
std::vector<std::string_view> split_top_level(std::string_view s) {
  std::vector<std::string_view> parts;
  int depth = 0;
  char quote = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '`' || c == '\'' || c == '"') {
      quote = c;
    } else if (c == '<' || c == '(') {
      ++depth;
    } else if (c == '>' || c == ')') {
      --depth;
    } else if (c == ',' && depth == 0) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(s.substr(start));
  return parts;
}

// Days since 1970-01-01 of a proleptic Gregorian date.
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

bool is_leap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned days_in_month(std::int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : kDays[m - 1];
}

// Reads exactly `n` digits at s[i].
bool read_digits(std::string_view s, std::size_t& i, std::size_t n, int& out) {
  if (i + n > s.size()) return false;
  int v = 0;
  for (std::size_t k = 0; k < n; ++k) {
    char c = s[i + k];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  i += n;
  return true;
}

}  // namespace

std::string_view column_type_name(ColumnType type) {
  switch (type) {
    case ColumnType::string: return "STRING";
    case ColumnType::int8: return "TINYINT";
    case ColumnType::int16: return "SMALLINT";
    case ColumnType::int32: return "INT";
    case ColumnType::int64: return "BIGINT";
    case ColumnType::float32: return "FLOAT";
    case ColumnType::float64: return "DOUBLE";
    case ColumnType::boolean: return "BOOLEAN";
    case ColumnType::timestamp: return "TIMESTAMP";
  }
  return "?";
}

Schema Schema::parse_ddl(std::string_view ddl) {
  Schema schema;
  if (trim(ddl).empty()) throw SchemaError("empty schema: expected e.g. 'user_id STRING, amount DOUBLE'");
  for (auto part : split_top_level(ddl)) {
    std::string_view item = trim(part);
    if (item.empty()) throw SchemaError(fmt::format("empty column definition in schema '{}'", ddl));
    std::string name;
    std::size_t i = 0;
    if (item.front() == '`') {
      // `name`, with `` as an escaped backtick.
      ++i;
      bool closed = false;
      while (i < item.size()) {
        if (item[i] == '`') {
          if (i + 1 < item.size() && item[i + 1] == '`') {
            name += '`';
            i += 2;
            continue;
          }
          closed = true;
          ++i;
          break;
        }
        name += item[i++];
      }
      if (!closed) throw SchemaError(fmt::format("unclosed backtick in column '{}'", item));
    } else {
      while (i < item.size() && !is_space(item[i]) && item[i] != ':') name += item[i++];
    }
    if (name.empty()) throw SchemaError(fmt::format("missing column name in '{}'", item));
    std::string_view rest = trim(item.substr(i));
    if (!rest.empty() && rest.front() == ':') rest = trim(rest.substr(1));
    std::size_t t = 0;
    while (t < rest.size() && !is_space(rest[t])) ++t;
    std::string_view type_text = rest.substr(0, t);
    std::string_view tail = trim(rest.substr(t));
    if (type_text.empty()) throw SchemaError(fmt::format("missing type for column '{}'", name));
    auto type = type_from_name(type_text);
    if (!type) {
      if (type_text.find('<') != std::string_view::npos || type_text.find('(') != std::string_view::npos)
        throw SchemaError(
            fmt::format("column '{}': type '{}' is not supported (only flat columns of STRING, "
                        "TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, BOOLEAN, TIMESTAMP)",
                        name, type_text));
      throw SchemaError(fmt::format("column '{}': unknown type '{}'", name, type_text));
    }
    const std::string tail_upper = upper(tail);
    if (!tail.empty() && tail_upper != "NOT NULL" && tail_upper.rfind("COMMENT ", 0) != 0 &&
        tail_upper.rfind("NOT NULL COMMENT ", 0) != 0)
      throw SchemaError(fmt::format("column '{}': unexpected '{}' after the type", name, tail));
    for (auto& c : schema.columns)
      if (c.name == name) throw SchemaError(fmt::format("duplicate column '{}' in schema", name));
    if (name == JsonValueDecoder::kCorruptRecordColumn)
      throw SchemaError(fmt::format("column name '{}' is reserved for malformed records", name));
    schema.columns.push_back({std::move(name), *type});
  }
  return schema;
}

std::string Schema::to_ddl() const {
  std::string out;
  for (auto& c : columns) {
    if (!out.empty()) out += ", ";
    std::string quoted;
    for (char ch : c.name) {
      quoted += ch;
      if (ch == '`') quoted += '`';
    }
    out += fmt::format("`{}` {}", quoted, column_type_name(c.type));
  }
  return out;
}

std::optional<std::int64_t> parse_timestamp_ms(std::string_view text) {
  std::string_view s = trim(text);
  std::size_t i = 0;
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (!read_digits(s, i, 4, y) || i >= s.size() || s[i++] != '-') return std::nullopt;
  if (!read_digits(s, i, 2, mo) || i >= s.size() || s[i++] != '-') return std::nullopt;
  if (!read_digits(s, i, 2, d)) return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || static_cast<unsigned>(d) > days_in_month(y, static_cast<unsigned>(mo)))
    return std::nullopt;
  std::int64_t frac_ms = 0;
  if (i < s.size() && (s[i] == 'T' || s[i] == ' ')) {
    ++i;
    if (!read_digits(s, i, 2, h) || i >= s.size() || s[i++] != ':') return std::nullopt;
    if (!read_digits(s, i, 2, mi)) return std::nullopt;
    if (i < s.size() && s[i] == ':') {
      ++i;
      if (!read_digits(s, i, 2, sec)) return std::nullopt;
      if (i < s.size() && s[i] == '.') {
        ++i;
        std::size_t digits = 0;
        std::int64_t scale = 100;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
          if (digits < 3) frac_ms += (s[i] - '0') * scale;
          scale /= 10;
          ++digits;
          ++i;
        }
        if (digits == 0 || digits > 9) return std::nullopt;
      }
    }
    if (h > 23 || mi > 59 || sec > 59) return std::nullopt;
  }
  std::int64_t offset_s = 0;
  std::string_view zone = trim(s.substr(i));
  if (!zone.empty()) {
    const std::string zu = upper(zone);
    if (zu == "Z" || zu == "UTC" || zu == "GMT") {
      offset_s = 0;
    } else if (zone[0] == '+' || zone[0] == '-') {
      std::size_t k = 1;
      int zh = 0, zm = 0;
      if (!read_digits(zone, k, 2, zh)) return std::nullopt;
      if (k < zone.size() && zone[k] == ':') ++k;
      if (k < zone.size() && !read_digits(zone, k, 2, zm)) return std::nullopt;
      if (k != zone.size() || zh > 18 || zm > 59) return std::nullopt;
      offset_s = (zh * 3600 + zm * 60) * (zone[0] == '-' ? -1 : 1);
    } else {
      return std::nullopt;
    }
  }
  const std::int64_t days = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  const std::int64_t secs = days * 86400 + h * 3600 + mi * 60 + sec - offset_s;
  return secs * 1000 + frac_ms;
}

std::string format_timestamp_ms(std::int64_t ms) {
  // Floor division by remainders, which cannot overflow (negating the
  // smallest int64 would).
  std::int64_t secs = ms / 1000;
  std::int64_t millis = ms % 1000;
  if (millis < 0) {
    millis += 1000;
    --secs;
  }
  std::int64_t days = secs / 86400;
  std::int64_t sod = secs % 86400;
  if (sod < 0) {
    sod += 86400;
    --days;
  }
  std::int64_t y = 0;
  unsigned m = 0, d = 0;
  civil_from_days(days, y, m, d);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", y, m, d, sod / 3600, (sod / 60) % 60, sod % 60,
                     millis);
}

// ------------------------------------------------------------------ decoder

struct JsonValueDecoder::Impl {
  simdjson::dom::parser parser;
  std::unordered_map<std::string_view, std::size_t> index;  // views into schema_ names
  std::vector<std::string> member_names;                    // ,"name": per column, then _corrupt_record's
  DecodedValue scratch;                                     // append_decoded_json's cells, when it needs them
};

JsonValueDecoder::JsonValueDecoder(Schema schema) : schema_(std::move(schema)), impl_(std::make_unique<Impl>()) {
  for (std::size_t i = 0; i < schema_.columns.size(); ++i) impl_->index[schema_.columns[i].name] = i;
  auto member_name = [](std::string_view name) {
    std::string json(1, ',');
    append_json_string(json, name);
    json += ':';
    return json;
  };
  for (auto& c : schema_.columns) impl_->member_names.push_back(member_name(c.name));
  impl_->member_names.push_back(member_name(kCorruptRecordColumn));
}

JsonValueDecoder::~JsonValueDecoder() = default;
JsonValueDecoder::JsonValueDecoder(JsonValueDecoder&&) noexcept = default;
JsonValueDecoder& JsonValueDecoder::operator=(JsonValueDecoder&&) noexcept = default;

namespace {

// The one conversion of a JSON element to a column's type (the rules at the
// top of value_format.hpp). Calls `put` once with the value: std::monostate
// for JSON null, std::string_view (a JSON string) or std::string (any other
// JSON text) for STRING, std::int64_t for the integer types and TIMESTAMP
// (in ms), double for FLOAT / DOUBLE, bool for BOOLEAN. Returns false, without
// calling `put`, when the element does not fit the column.
template <class Put>
bool convert(simdjson::dom::element e, ColumnType type, Put&& put) {
  using simdjson::dom::element_type;
  const element_type et = e.type();
  if (et == element_type::NULL_VALUE) {
    put(std::monostate{});
    return true;
  }
  switch (type) {
    case ColumnType::string:
      if (et == element_type::STRING) put(std::string_view(e.get_string().value_unsafe()));
      else put(simdjson::minify(e));
      return true;
    case ColumnType::int8:
    case ColumnType::int16:
    case ColumnType::int32:
    case ColumnType::int64: {
      if (et != element_type::INT64) return false;  // floats, strings, uint64 > int64 max: no
      const std::int64_t v = e.get_int64().value_unsafe();
      std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
      if (type == ColumnType::int8) lo = -128, hi = 127;
      if (type == ColumnType::int16) lo = -32768, hi = 32767;
      if (type == ColumnType::int32)
        lo = std::numeric_limits<std::int32_t>::min(), hi = std::numeric_limits<std::int32_t>::max();
      if (v < lo || v > hi) return false;
      put(v);
      return true;
    }
    case ColumnType::float32:
    case ColumnType::float64: {
      double v = 0;
      if (et == element_type::INT64) {
        v = static_cast<double>(e.get_int64().value_unsafe());
      } else if (et == element_type::UINT64) {
        v = static_cast<double>(e.get_uint64().value_unsafe());
      } else if (et == element_type::DOUBLE) {
        v = e.get_double().value_unsafe();
      } else if (et == element_type::STRING) {
        const std::string_view s = e.get_string().value_unsafe();
        if (s == "NaN") v = std::numeric_limits<double>::quiet_NaN();
        else if (s == "Infinity" || s == "+Infinity" || s == "INF" || s == "+INF")
          v = std::numeric_limits<double>::infinity();
        else if (s == "-Infinity" || s == "-INF") v = -std::numeric_limits<double>::infinity();
        else return false;
      } else {
        return false;
      }
      if (type == ColumnType::float32) v = static_cast<double>(static_cast<float>(v));
      put(v);
      return true;
    }
    case ColumnType::boolean:
      if (et != element_type::BOOL) return false;
      put(e.get_bool().value_unsafe());
      return true;
    case ColumnType::timestamp:
      if (et == element_type::INT64) {
        const std::int64_t secs = e.get_int64().value_unsafe();
        if (secs > std::numeric_limits<std::int64_t>::max() / 1000 ||
            secs < std::numeric_limits<std::int64_t>::min() / 1000)
          return false;
        put(secs * 1000);
        return true;
      }
      if (et == element_type::STRING) {
        auto ms = parse_timestamp_ms(e.get_string().value_unsafe());
        if (!ms) return false;
        put(*ms);
        return true;
      }
      return false;
  }
  return false;
}

// Parses `text` into an object; false when it is not a JSON object.
bool parse_object(simdjson::dom::parser& parser, std::string_view text, simdjson::dom::object& object) {
  simdjson::dom::element doc;
  if (parser.parse(text.data(), text.size(), true).get(doc)) return false;
  return doc.type() == simdjson::dom::element_type::OBJECT && !doc.get_object().get(object);
}

// Converts each field of `object` that names a column of `columns` and hands
// it over as put(column, value); a field that does not fit its column is
// handed over as null (std::monostate). Returns whether one did not fit.
// With `in_order`, stops at the first field whose column is not after the
// last one handed over (fields out of schema order, or a repeated key) and
// returns nullopt. Values of one topic mostly list their fields in one
// order: the column after the last one found is tried before the name index.
template <class Index, class Put>
std::optional<bool> convert_fields(const simdjson::dom::object& object, const std::vector<Column>& columns,
                                   const Index& index, bool in_order, Put&& put) {
  bool bad = false;
  std::size_t next = 0;
  for (auto field : object) {
    std::size_t column = next;
    if (column >= columns.size() || columns[column].name != field.key) {
      auto it = index.find(field.key);
      if (it == index.end()) continue;
      column = it->second;
    }
    if (in_order && column < next) return std::nullopt;
    next = column + 1;
    if (!convert(field.value, columns[column].type, [&](auto&& v) { put(column, std::forward<decltype(v)>(v)); })) {
      put(column, std::monostate{});
      bad = true;
    }
  }
  return bad;
}

}  // namespace

void JsonValueDecoder::decode(std::optional<std::string_view> text, DecodedValue& out) {
  out.cells.assign(schema_.columns.size(), Cell{});
  out.corrupt_record.reset();
  if (!text) return;
  if (is_blank(*text)) return;  // Spark: no token, no row (all null)
  simdjson::dom::object object;
  if (!parse_object(impl_->parser, *text, object)) {
    out.corrupt_record = std::string(*text);
    return;
  }
  const bool bad = *convert_fields(object, schema_.columns, impl_->index, false, [&](std::size_t column, auto&& v) {
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<V, std::string_view>) out.cells[column] = std::string(v);
    else out.cells[column] = std::forward<decltype(v)>(v);
  });
  if (bad) out.corrupt_record = std::string(*text);
}

std::size_t JsonValueDecoder::append_decoded_json(std::string& out, std::optional<std::string_view> text,
                                                  const RecordJsonWriter& writer) {
  if (!text || is_blank(*text)) return 0;
  const auto& names = impl_->member_names;
  std::size_t written = 0;
  auto name = [&](std::size_t column) {
    return written++ ? std::string_view(names[column]) : std::string_view(names[column]).substr(1);
  };
  simdjson::dom::object object;
  if (!parse_object(impl_->parser, *text, object)) {
    out.append(name(schema_.columns.size()));
    append_json_string(out, *text);
    return written;
  }
  // Fields in schema order, each key once: each is written as it is
  // converted. Any other order takes the cells (a repeated key's last value
  // wins, and members are written in schema order).
  const std::size_t start = out.size();
  const auto& columns = schema_.columns;
  const auto bad = convert_fields(object, columns, impl_->index, true, [&](std::size_t column, auto&& v) {
    if constexpr (!std::is_same_v<std::decay_t<decltype(v)>, std::monostate>)  // null: left out
      writer.append_column(out, name(column), columns[column].type, v);
  });
  if (!bad) {
    out.resize(start);
    decode(text, impl_->scratch);
    return writer.append_members(out, schema_, impl_->scratch);
  }
  if (*bad) {
    out.append(name(columns.size()));
    append_json_string(out, *text);
  }
  return written;
}

DecodedValue JsonValueDecoder::decode(std::optional<std::string_view> text) {
  DecodedValue out;
  decode(text, out);
  return out;
}

std::size_t JsonValueDecoder::append_json_members(std::string& out, const DecodedValue& value) const {
  return RecordJsonWriter().append_members(out, schema_, value);
}

}  // namespace kwire::source
