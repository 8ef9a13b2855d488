// PostgresSink's decoded Avro / Protobuf columns: Arrow rows of the value
// decoder (postgres_sink.hpp, ArrowValueDecoder) as COPY text, nested
// columns as the JSON RecordJsonWriter writes for them.
#include <charconv>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string_view>

#include <fmt/format.h>

#include "kwire/source/json_escape.hpp"
#include "kwire/source/postgres_sink.hpp"

namespace kwire::source {

namespace {

bool bit(const void* bits, std::int64_t i) { return (static_cast<const std::uint8_t*>(bits)[i >> 3] >> (i & 7)) & 1; }

// Whether row `i` (the array's offset included) is set.
bool is_set(const ArrowArray& a, std::string_view format, std::int64_t i) {
  if (format == "n") return false;
  if (a.null_count == 0 || a.buffers[0] == nullptr) return true;
  return bit(a.buffers[0], i);
}

template <class T>
T load(const ArrowArray& a, int buffer, std::int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const std::uint8_t*>(a.buffers[buffer]) + i * static_cast<std::int64_t>(sizeof(T)),
              sizeof(T));
  return v;
}

bool nested(std::string_view format) { return format == "+s" || format == "+l" || format == "+m"; }

template <class T>
void append_number(std::string& out, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return void(out += "NaN");
    if (std::isinf(v)) return void(out += v > 0 ? "Infinity" : "-Infinity");
  }
  char buf[48];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

// y-m-d of a day count since 1970-01-01 (proleptic Gregorian; H. Hinnant's
// civil_from_days).
void civil(std::int64_t days, std::int64_t& y, unsigned& m, unsigned& d) {
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2);
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

// A date as PostgreSQL reads it: "2024-02-29", "0044-03-15 BC" (year 0 is
// 1 BC). `bc` is appended by the caller after any time of day.
void append_date(std::string& out, std::int64_t days, bool& bc) {
  std::int64_t y;
  unsigned m, d;
  civil(days, y, m, d);
  bc = y <= 0;
  fmt::format_to(std::back_inserter(out), "{:04}-{:02}-{:02}", bc ? 1 - y : y, m, d);
}

// Microseconds since the epoch as a PostgreSQL timestamp: "2024-05-01
// 10:00:00.123456", with "+00" for a timestamptz (the value is in UTC).
void append_timestamp(std::string& out, std::int64_t us, bool utc) {
  const std::int64_t days = floor_div(us, 86400000000);
  const std::int64_t in_day = us - days * 86400000000;
  bool bc = false;
  append_date(out, days, bc);
  const std::int64_t s = in_day / 1000000;
  fmt::format_to(std::back_inserter(out), " {:02}:{:02}:{:02}.{:06}", s / 3600, s / 60 % 60, s % 60, in_day % 1000000);
  if (utc) out += "+00";
  if (bc) out += " BC";
}

// Microseconds as a PostgreSQL interval: "[-]H:MM:SS.ffffff".
void append_interval(std::string& out, std::int64_t us) {
  const bool negative = us < 0;
  const unsigned __int128 u = negative ? 0 - static_cast<unsigned __int128>(us) : static_cast<unsigned __int128>(us);
  const auto s = static_cast<std::uint64_t>(u / 1000000);
  fmt::format_to(std::back_inserter(out), "{}{}:{:02}:{:02}.{:06}", negative ? "-" : "", s / 3600, s / 60 % 60, s % 60,
                 static_cast<std::uint64_t>(u % 1000000));
}

// A decimal128's unscaled value with `scale` digits after the point.
void append_decimal(std::string& out, __int128 v, int scale) {
  const bool negative = v < 0;
  unsigned __int128 u = negative ? 0 - static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  } while (u);
  if (scale > 0) {
    if (digits.size() <= static_cast<std::size_t>(scale))
      digits.insert(0, static_cast<std::size_t>(scale) + 1 - digits.size(), '0');
    digits.insert(digits.size() - static_cast<std::size_t>(scale), 1, '.');
  } else if (scale < 0) {
    digits.append(static_cast<std::size_t>(-scale), '0');
  }
  if (negative) out += '-';
  out += digits;
}

// The JSON of a nested column, row by row: lines of {"name":JSON} from
// append_arrow_lines over a one-column struct, cut to the JSON ("" when null).
std::vector<std::string> nested_json(const RecordJsonWriter& writer, ArrowSchema& field, ArrowArray& column,
                                     std::int64_t rows, std::int64_t offset) {
  ArrowSchema* schema_children[] = {&field};
  ArrowArray* array_children[] = {&column};
  const void* no_buffers[] = {nullptr};
  ArrowSchema schema{};
  schema.format = "+s";
  schema.name = "";
  schema.n_children = 1;
  schema.children = schema_children;
  schema.release = [](ArrowSchema*) {};  // a view: the decoder's batch owns the data
  ArrowArray array{};
  array.length = rows;
  array.offset = offset;
  array.n_buffers = 1;
  array.buffers = no_buffers;
  array.n_children = 1;
  array.children = array_children;
  array.release = [](ArrowArray*) {};
  std::string lines;
  writer.append_arrow_lines(lines, schema, array);
  std::string prefix = "{";
  append_json_string(prefix, field.name ? field.name : "");
  prefix += ':';
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(rows));
  std::size_t at = 0;
  while (at < lines.size()) {
    const std::size_t end = lines.find('\n', at);
    std::string_view line(lines.data() + at, end - at);
    if (line.size() > prefix.size() && line.substr(0, prefix.size()) == prefix) {
      line.remove_prefix(prefix.size());
      line.remove_suffix(1);  // '}'
      out.emplace_back(line);
    } else {
      out.emplace_back();  // {}: null
    }
    at = end + 1;
  }
  return out;
}

// The writer of nested columns' JSON: bytes in base64 (JsonRowBuilder's
// form), timestamps in UTC.
const RecordJsonWriter& nested_writer() {
  static const RecordJsonWriter writer([] {
    JsonWriterOptions o;
    o.binary = BinaryFormat::base64;
    o.kafka_columns = {};
    return o;
  }());
  return writer;
}

}  // namespace

std::string postgres_arrow_type(const ArrowSchema& field) {
  const std::string_view f = field.format ? field.format : "";
  if (f == "b") return "boolean";
  if (f == "c" || f == "C" || f == "s") return "smallint";
  if (f == "i" || f == "S") return "integer";
  if (f == "l" || f == "I") return "bigint";
  if (f == "f") return "real";
  if (f == "g") return "double precision";
  if (f == "u" || f == "U" || f == "n") return "text";
  if (f == "z" || f == "Z") return "bytea";
  if (f == "tdD") return "date";
  if (f == "tsu:") return "timestamp";
  if (f.starts_with("tsu:")) return "timestamptz";
  if (f == "tDu") return "interval";
  if (f.starts_with("d:")) {
    const auto comma = f.find(',');
    if (comma != std::string_view::npos && f.find(',', comma + 1) == std::string_view::npos)
      return fmt::format("numeric({},{})", f.substr(2, comma - 2), f.substr(comma + 1));
  }
  if (nested(f)) return "jsonb";
  throw SinkOptionError(
      fmt::format("PostgreSQL sink: decoded column \"{}\" has Arrow type '{}', which has no "
                  "PostgreSQL column type here",
                  field.name ? field.name : "", f));
}

void PostgresSink::write_decoded(std::span<const Row> rows) {
  const ArrowValueDecoder& decoder = *columns_.decoded;
  std::vector<const Row*> kept;
  try {
    for (const Row& row : rows) {
      if (filter_ && !filter_(row, decoded_)) continue;
      std::optional<std::span<const std::uint8_t>> value;
      if (row.value) value = std::span<const std::uint8_t>(row.value->data(), row.value->size());
      decoder.append(value, row.topic, row.partition, row.offset);
      kept.push_back(&row);
    }
  } catch (...) {
    (void)decoder.finish();  // no half batch left for the next one
    throw;
  }
  ArrowBatch batch = decoder.finish();
  if (kept.empty()) return;
  ArrowSchema schema{};
  decoder.export_schema(&schema);
  struct Release {
    ArrowSchema* s;
    ~Release() {
      if (s->release) s->release(s);
    }
  } release{&schema};
  ArrowArray& a = batch.array();
  const auto columns = static_cast<std::size_t>(schema.n_children);
  if (a.n_children != schema.n_children || a.length != static_cast<std::int64_t>(kept.size()))
    throw std::logic_error("PostgresSink: the value decoder's batch does not match its rows");
  std::vector<std::vector<std::string>> json(columns);
  for (std::size_t c = 0; c < columns; ++c)
    if (nested(schema.children[c]->format))
      json[c] = nested_json(nested_writer(), *schema.children[c], *a.children[c], a.length, a.offset);
  for (std::int64_t r = 0; r < a.length; ++r) {
    const bool row_set = is_set(a, "+s", r + a.offset);
    for (std::size_t c = 0; c < columns; ++c) {
      if (c) buffer_ += '\t';
      const ArrowArray& col = *a.children[c];
      const std::string_view f = schema.children[c]->format;
      const std::int64_t i = r + a.offset + col.offset;
      if (!row_set || !is_set(col, f, i)) {
        buffer_ += "\\N";
        continue;
      }
      if (nested(f)) {
        append_copy_text(buffer_, json[c][static_cast<std::size_t>(r)]);
      } else if (f == "b") {
        buffer_ += bit(col.buffers[1], i) ? 't' : 'f';
      } else if (f == "c") {
        append_number(buffer_, load<std::int8_t>(col, 1, i));
      } else if (f == "C") {
        append_number(buffer_, load<std::uint8_t>(col, 1, i));
      } else if (f == "s") {
        append_number(buffer_, load<std::int16_t>(col, 1, i));
      } else if (f == "S") {
        append_number(buffer_, load<std::uint16_t>(col, 1, i));
      } else if (f == "i") {
        append_number(buffer_, load<std::int32_t>(col, 1, i));
      } else if (f == "I") {
        append_number(buffer_, load<std::uint32_t>(col, 1, i));
      } else if (f == "l") {
        append_number(buffer_, load<std::int64_t>(col, 1, i));
      } else if (f == "f") {
        append_number(buffer_, load<float>(col, 1, i));
      } else if (f == "g") {
        append_number(buffer_, load<double>(col, 1, i));
      } else if (f == "u" || f == "z" || f == "U" || f == "Z") {
        const bool large = f == "U" || f == "Z";
        const std::int64_t from = large ? load<std::int64_t>(col, 1, i) : load<std::int32_t>(col, 1, i);
        const std::int64_t to = large ? load<std::int64_t>(col, 1, i + 1) : load<std::int32_t>(col, 1, i + 1);
        const auto* p = static_cast<const std::uint8_t*>(col.buffers[2]) + from;
        const auto size = static_cast<std::size_t>(to - from);
        if (f == "u" || f == "U") append_copy_text(buffer_, {reinterpret_cast<const char*>(p), size});
        else append_copy_bytea(buffer_, {p, size});
      } else if (f == "tdD") {
        bool bc = false;
        append_date(buffer_, load<std::int32_t>(col, 1, i), bc);
        if (bc) buffer_ += " BC";
      } else if (f.starts_with("tsu:")) {
        append_timestamp(buffer_, load<std::int64_t>(col, 1, i), f.size() > 4);
      } else if (f == "tDu") {
        append_interval(buffer_, load<std::int64_t>(col, 1, i));
      } else if (f.starts_with("d:")) {
        append_decimal(buffer_, load<__int128>(col, 1, i), std::stoi(std::string(f.substr(f.find(',') + 1))));
      } else {
        throw SinkOptionError(
            fmt::format("PostgreSQL sink: decoded column \"{}\" has Arrow type '{}', which the "
                        "sink cannot write",
                        schema.children[c]->name, f));
      }
    }
    append_kafka_columns(*kept[static_cast<std::size_t>(r)], columns == 0);
    buffer_ += '\n';
    ++rows_;
    if (buffer_.size() >= (std::size_t{1} << 20)) flush_copy(false);
  }
}

}  // namespace kwire::source
