// RecordJsonWriter: rows and decoded values as JSON objects (the Arrow path
// is in json_arrow.cpp).
#include "kwire/source/json_writer.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "kwire/source/json_escape.hpp"

namespace kwire::source {

namespace {

// Two / three / four digits, zero-padded.
char* put2(char* p, unsigned v) {
  p[0] = static_cast<char>('0' + v / 10);
  p[1] = static_cast<char>('0' + v % 10);
  return p + 2;
}

char* put3(char* p, unsigned v) {
  p[0] = static_cast<char>('0' + v / 100);
  return put2(p + 1, v % 100);
}

// Days since 1970-01-01 to a civil date (proleptic Gregorian; H. Hinnant's
// algorithm).
void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2) ++y;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b, std::int64_t& rem) {
  std::int64_t q = a / b;
  rem = a % b;
  if (rem < 0) {
    rem += b;
    --q;
  }
  return q;
}

void append_year(std::string& out, std::int64_t y) {
  if (y >= 0 && y <= 9999) {
    char buf[4];
    put2(buf, static_cast<unsigned>(y / 100));
    put2(buf + 2, static_cast<unsigned>(y % 100));
    out.append(buf, 4);
  } else {
    // Java's yyyy outside 0000-9999: a sign and at least four digits.
    out += fmt::format("{}{:04}", y < 0 ? '-' : '+', y < 0 ? -y : y);
  }
}

// "yyyy-MM-dd'T'HH:mm:ss.SSS" for local seconds and milliseconds.
void append_local_time(std::string& out, std::int64_t local_secs, unsigned millis, bool date_only = false) {
  std::int64_t sod = 0;
  const std::int64_t days = floor_div(local_secs, 86400, sod);
  // Rows of a batch mostly share their day: its "yyyy-MM-dd" is kept.
  thread_local std::int64_t cached_days = std::numeric_limits<std::int64_t>::min();
  thread_local std::string cached_date;
  if (days != cached_days) {
    std::int64_t y = 0;
    unsigned m = 0, d = 0;
    civil_from_days(days, y, m, d);
    cached_date.clear();
    append_year(cached_date, y);
    char date[6];
    date[0] = '-';
    put2(date + 1, m);
    date[3] = '-';
    put2(date + 4, d);
    cached_date.append(date, 6);
    cached_days = days;
  }
  out += cached_date;
  char buf[20];
  char* p = buf;
  if (!date_only) {
    *p++ = 'T';
    p = put2(p, static_cast<unsigned>(sod / 3600));
    *p++ = ':';
    p = put2(p, static_cast<unsigned>((sod / 60) % 60));
    *p++ = ':';
    p = put2(p, static_cast<unsigned>(sod % 60));
    *p++ = '.';
    p = put3(p, millis);
  }
  out.append(buf, p);
}

// XXX: "Z", or +HH:MM, with :ss when the offset has seconds.
void append_offset(std::string& out, std::int32_t offset) {
  if (offset == 0) {
    out += 'Z';
    return;
  }
  const unsigned a = static_cast<unsigned>(offset < 0 ? -offset : offset);
  char buf[10];
  char* p = buf;
  *p++ = offset < 0 ? '-' : '+';
  p = put2(p, a / 3600);
  *p++ = ':';
  p = put2(p, (a / 60) % 60);
  if (a % 60) {
    *p++ = ':';
    p = put2(p, a % 60);
  }
  out.append(buf, p);
}

}  // namespace

void append_base64(std::string& out, protocol::ByteSpan bytes) {
  static constexpr char kTable[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::size_t n = bytes.size();
  const std::size_t start = out.size();
  out.resize(start + (n + 2) / 3 * 4);
  char* p = out.data() + start;
  std::size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const std::uint32_t v = (std::uint32_t{bytes[i]} << 16) | (std::uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
    *p++ = kTable[v >> 18];
    *p++ = kTable[(v >> 12) & 63];
    *p++ = kTable[(v >> 6) & 63];
    *p++ = kTable[v & 63];
  }
  if (i < n) {
    std::uint32_t v = std::uint32_t{bytes[i]} << 16;
    if (i + 1 < n) v |= std::uint32_t{bytes[i + 1]} << 8;
    *p++ = kTable[v >> 18];
    *p++ = kTable[(v >> 12) & 63];
    *p++ = i + 1 < n ? kTable[(v >> 6) & 63] : '=';
    *p++ = '=';
  }
}

BinaryFormat parse_binary_format(std::string_view name) {
  if (name == "text") return BinaryFormat::text;
  if (name == "base64") return BinaryFormat::base64;
  throw JsonWriterError(fmt::format("unknown binary format '{}': expected text or base64", name));
}

std::string_view kafka_column_name(KafkaColumn column) {
  switch (column) {
    case KafkaColumn::key: return "key";
    case KafkaColumn::value: return "value";
    case KafkaColumn::topic: return "topic";
    case KafkaColumn::partition: return "partition";
    case KafkaColumn::offset: return "offset";
    case KafkaColumn::timestamp: return "timestamp";
    case KafkaColumn::timestamp_type: return "timestampType";
    case KafkaColumn::headers: return "headers";
  }
  return "?";
}

const std::vector<KafkaColumn>& all_kafka_columns() {
  static const std::vector<KafkaColumn> all = {
      KafkaColumn::key,    KafkaColumn::value,     KafkaColumn::topic,          KafkaColumn::partition,
      KafkaColumn::offset, KafkaColumn::timestamp, KafkaColumn::timestamp_type, KafkaColumn::headers};
  return all;
}

std::vector<KafkaColumn> parse_kafka_columns(std::string_view list) {
  std::vector<KafkaColumn> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    std::string_view item = list.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    start = end + 1;
    if (item.empty() || item == "none") continue;
    bool found = false;
    for (KafkaColumn c : all_kafka_columns()) {
      if (kafka_column_name(c) != item) continue;
      found = true;
      if (std::find(out.begin(), out.end(), c) != out.end())
        throw JsonWriterError(fmt::format("Kafka column '{}' is listed twice", item));
      out.push_back(c);
    }
    if (!found)
      throw JsonWriterError(fmt::format(
          "unknown Kafka column '{}': expected key, value, topic, partition, offset, timestamp, timestampType or "
          "headers",
          item));
  }
  return out;
}

RecordJsonWriter::RecordJsonWriter(JsonWriterOptions options) : options_(std::move(options)) {
  utc_ = options_.time_zone.id() == "UTC" && options_.time_zone.offset_at(0) == 0;
  for (KafkaColumn c : all_kafka_columns()) {
    const auto i = static_cast<std::size_t>(c);
    member_names_[i] = fmt::format(",\"{}\":", kafka_column_name(c));
    if (member_names_[i].size() > kMemberBlock) member_blocks_fit_ = false;
    else std::memcpy(member_blocks_[i].data(), member_names_[i].data(), member_names_[i].size());
  }
}

namespace {

// Room for a member's name before a value formatted on the stack; longer
// names take their own append.
constexpr std::size_t kShortMember = 48;

// Copies `member` to the start of `buf` when it is short; else appends it
// to `out`. Returns where the value goes.
char* put_member(std::string& out, char* buf, std::string_view member) {
  if (member.size() > kShortMember) {
    out.append(member);
    return buf;
  }
  if (!member.empty()) std::memcpy(buf, member.data(), member.size());  // a default view's data() is null
  return buf + member.size();
}

}  // namespace

void RecordJsonWriter::append_integer(std::string& out, std::int64_t v, std::string_view member) {
  char buf[kShortMember + 20];
  char* p = put_member(out, buf, member);
  p = std::to_chars(p, buf + sizeof buf, v).ptr;
  out.append(buf, static_cast<std::size_t>(p - buf));
}

void RecordJsonWriter::append_binary(std::string& out, protocol::ByteSpan bytes) const {
  if (options_.binary == BinaryFormat::base64) {
    out += '"';
    append_base64(out, bytes);
    out += '"';
  } else {
    append_json_string(out, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
}

namespace {

// A second's "yyyy-MM-ddTHH:mm:ss. in UTC, with its opening quote, kept per
// thread: the rows of a batch mostly share their second.
struct UtcSecond {
  std::int64_t secs = std::numeric_limits<std::int64_t>::min();
  std::array<char, 40> text{};  // zero-filled past `size`: copied in blocks of 32
  std::size_t size = 0;         // 0 when the text is longer than 32 (a year of 10 digits or more)
};

const UtcSecond& utc_second(std::int64_t secs) {
  thread_local UtcSecond cached;
  if (cached.secs != secs) {
    std::string text(1, '"');
    append_local_time(text, secs, 0);
    text.resize(text.size() - 3);  // the milliseconds
    cached.text.fill(0);
    cached.size = text.size() <= 32 ? text.size() : 0;
    std::memcpy(cached.text.data(), text.data(), cached.size);
    cached.secs = secs;
  }
  return cached;
}

}  // namespace

void RecordJsonWriter::append_timestamp_ms(std::string& out, std::int64_t ms, std::string_view member) const {
  std::int64_t millis = 0;
  const std::int64_t secs = floor_div(ms, 1000, millis);
  if (utc_) {
    const UtcSecond& second = utc_second(secs);
    char buf[kShortMember + 40];
    char* p = put_member(out, buf, member);
    if (second.size == 0) {
      out.append(buf, static_cast<std::size_t>(p - buf));
      out += '"';
      append_local_time(out, secs, static_cast<unsigned>(millis));
      out += "Z\"";
      return;
    }
    std::memcpy(p, second.text.data(), second.size);
    p = put3(p + second.size, static_cast<unsigned>(millis));
    *p++ = 'Z';
    *p++ = '"';
    out.append(buf, static_cast<std::size_t>(p - buf));
    return;
  }
  out.append(member);
  const std::int32_t offset = options_.time_zone.offset_at(secs);
  out += '"';
  append_local_time(out, secs + offset, static_cast<unsigned>(millis));
  append_offset(out, offset);
  out += '"';
}

void RecordJsonWriter::append_timestamp_us(std::string& out, std::int64_t us) const {
  std::int64_t rem = 0;
  const std::int64_t ms = floor_div(us, 1000, rem);  // sub-millisecond digits dropped, toward the past
  append_timestamp_ms(out, ms);
}

namespace {

// The text std::to_chars gives for `v` (the shortest that reads back as v,
// fixed or scientific, whichever is shorter, fixed on a tie), computed
// directly for a common case: 1e-3 <= |v| with v * 10^k below 2^50 for the
// fewest fraction digits k <= 9 that read back as v, and fixed notation
// not longer than scientific. Writes it at `p` (at most 24 bytes) and
// returns its end; nullptr (nothing written) otherwise.
// Below 2^50 the scaled value's rounding errors stay under 1/4, so m is the
// one k-digit decimal that reads back as v and none with fewer digits does.
char* put_short_fixed(char* p, double v) {
  static constexpr double kPow10[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
  const double a = std::fabs(v);
  if (!(a >= 1e-3 && a < 0x1p50)) return nullptr;  // also NaN, infinities, 0
  for (int k = 0; k <= 9; ++k) {
    const double scaled = a * kPow10[k];
    if (scaled >= 0x1p50) return nullptr;
    const double m = std::nearbyint(scaled);
    if (m / kPow10[k] != a) continue;
    auto u = static_cast<std::uint64_t>(m);
    char digits[20];
    const auto end = std::to_chars(digits, digits + sizeof digits, u).ptr;
    const int n = static_cast<int>(end - digits);
    int significant = n;
    if (k == 0)
      while (significant > 1 && digits[significant - 1] == '0') --significant;
    const int fixed = a >= 1 ? (k == 0 ? n : n + 1) : 2 + k;
    const int scientific = significant + (significant > 1 ? 1 : 0) + 4;  // d.ddde+XX: |exponent| < 100 here
    if (fixed > scientific) return nullptr;
    if (v < 0) *p++ = '-';
    if (a >= 1) {
      std::memcpy(p, digits, static_cast<std::size_t>(n - k));
      p += n - k;
      *p++ = '.';
      if (k == 0) {
        *p++ = '0';
      } else {
        std::memcpy(p, digits + (n - k), static_cast<std::size_t>(k));
        p += k;
      }
    } else {
      *p++ = '0';
      *p++ = '.';
      std::memset(p, '0', static_cast<std::size_t>(k - n));
      p += k - n;
      std::memcpy(p, digits, static_cast<std::size_t>(n));
      p += n;
    }
    return p;
  }
  return nullptr;
}

}  // namespace

void RecordJsonWriter::append_double(std::string& out, double v, bool as_float, std::string_view member) {
  char buf[kShortMember + 64];
  char* p = put_member(out, buf, member);
  if (char* end = as_float ? nullptr : put_short_fixed(p, v)) {
    out.append(buf, static_cast<std::size_t>(end - buf));
    return;
  }
  if (std::isnan(v) || std::isinf(v)) {
    std::string_view text = std::isnan(v) ? "\"NaN\"" : v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    std::memcpy(p, text.data(), text.size());
    out.append(buf, static_cast<std::size_t>(p + text.size() - buf));
    return;
  }
  char* end = as_float ? std::to_chars(p, buf + sizeof buf - 2, static_cast<float>(v)).ptr
                       : std::to_chars(p, buf + sizeof buf - 2, v).ptr;
  if (std::string_view(p, static_cast<std::size_t>(end - p)).find_first_of(".eEn") == std::string_view::npos) {
    *end++ = '.';
    *end++ = '0';
  }
  out.append(buf, static_cast<std::size_t>(end - buf));
}

namespace {

// The JSON string of a topic name, kept per thread: a batch's rows share a few topics.
const std::string& topic_json(std::string_view topic) {
  thread_local std::string cached_topic;
  thread_local std::string cached_json;
  if (topic != cached_topic || cached_json.empty()) {
    cached_topic.assign(topic);
    cached_json.clear();
    append_json_string(cached_json, topic);
  }
  return cached_json;
}

}  // namespace

// The Kafka members written straight into room made once for all of them:
// no append per member. For the common case only (UTC, binary as text, no
// headers, short member names); returns false, with `out` as it was, for
// anything else, or for a key or value that needs \u00XX escapes beyond the
// room.
bool RecordJsonWriter::write_kafka_members(std::string& out, const Row& row, bool any) const {
  if (!utc_ || options_.binary != BinaryFormat::text || !member_blocks_fit_) return false;
  // The room: each member's block, the most each value can take, and the
  // last member's block beyond it (members are copied in whole blocks).
  std::size_t room = kMemberBlock;
  const UtcSecond* second = nullptr;
  std::int64_t millis = 0;
  for (KafkaColumn c : options_.kafka_columns) {
    room += kMemberBlock;
    switch (c) {
      case KafkaColumn::key:
        if (row.key) room += 2 * row.key->size() + 2;
        break;
      case KafkaColumn::value:
        if (row.value) room += 2 * row.value->size() + 2;
        break;
      case KafkaColumn::topic: room += topic_json(row.topic).size(); break;
      case KafkaColumn::timestamp:
        second = &utc_second(floor_div(row.timestamp, 1000, millis));
        if (second->size == 0) return false;
        room += 32 + 5;
        break;
      case KafkaColumn::headers:
        if (row.headers) return false;
        break;
      default: room += 20; break;  // an int64 in decimal
    }
  }
  const std::size_t at = out.size();
  out.resize(at + room);
  char* w = out.data() + at;
  char* const limit = out.data() + out.size();
  // A key or value gets the room counted for it, no more.
  auto string = [&](protocol::ByteSpan bytes) {
    w = write_json_string(w, w + 2 * bytes.size() + 2,
                          std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    return w != nullptr;
  };
  for (KafkaColumn c : options_.kafka_columns) {
    if ((c == KafkaColumn::key && !row.key) || (c == KafkaColumn::value && !row.value) || c == KafkaColumn::headers)
      continue;
    // ,"name": (without the comma first)
    const auto i = static_cast<std::size_t>(c);
    const std::size_t skip = any ? 0 : 1;
    std::memcpy(w, member_blocks_[i].data() + skip, kMemberBlock);
    w += member_names_[i].size() - skip;
    any = true;
    switch (c) {
      case KafkaColumn::key:
        if (!string(*row.key)) {
          out.resize(at);
          return false;
        }
        break;
      case KafkaColumn::value:
        if (!string(*row.value)) {
          out.resize(at);
          return false;
        }
        break;
      case KafkaColumn::topic: {
        const std::string& topic = topic_json(row.topic);
        std::memcpy(w, topic.data(), topic.size());
        w += topic.size();
        break;
      }
      case KafkaColumn::partition: w = std::to_chars(w, limit, row.partition).ptr; break;
      case KafkaColumn::offset: w = std::to_chars(w, limit, row.offset).ptr; break;
      case KafkaColumn::timestamp:
        std::memcpy(w, second->text.data(), 32);
        w = put3(w + second->size, static_cast<unsigned>(millis));
        *w++ = 'Z';
        *w++ = '"';
        break;
      case KafkaColumn::timestamp_type: w = std::to_chars(w, limit, row.timestamp_type).ptr; break;
      case KafkaColumn::headers: break;
    }
  }
  out.resize(static_cast<std::size_t>(w - out.data()));
  return true;
}

void RecordJsonWriter::append_kafka_members(std::string& out, const Row& row, bool any) const {
  if (write_kafka_members(out, row, any)) return;
  for (KafkaColumn c : options_.kafka_columns) {
    switch (c) {
      case KafkaColumn::key:
        if (!row.key) continue;
        break;
      case KafkaColumn::value:
        if (!row.value) continue;
        break;
      case KafkaColumn::headers:
        if (!row.headers) continue;
        break;
      default: break;
    }
    // ,"name":
    std::string_view member = member_names_[static_cast<std::size_t>(c)];
    if (!any) member.remove_prefix(1);
    any = true;
    switch (c) {
      case KafkaColumn::key:
        out.append(member);
        append_binary(out, *row.key);
        break;
      case KafkaColumn::value:
        out.append(member);
        append_binary(out, *row.value);
        break;
      case KafkaColumn::topic:
        out.append(member);
        out += topic_json(row.topic);
        break;
      case KafkaColumn::partition: append_integer(out, row.partition, member); break;
      case KafkaColumn::offset: append_integer(out, row.offset, member); break;
      case KafkaColumn::timestamp: append_timestamp_ms(out, row.timestamp, member); break;
      case KafkaColumn::timestamp_type: append_integer(out, row.timestamp_type, member); break;
      case KafkaColumn::headers:
        out.append(member);
        out += '[';
        for (std::size_t i = 0; i < row.headers->size(); ++i) {
          auto& h = (*row.headers)[i];
          out += i ? ",{\"key\":" : "{\"key\":";
          append_json_string(out, h.key);
          if (h.value) {
            out += ",\"value\":";
            append_binary(out, *h.value);
          }
          out += '}';
        }
        out += ']';
        break;
    }
  }
}

void RecordJsonWriter::append(std::string& out, const Row& row) const {
  out += '{';
  append_kafka_members(out, row, false);
  out += '}';
}

void RecordJsonWriter::append(std::string& out, const Row& row, const Schema& schema, const DecodedValue& value) const {
  out += '{';
  const bool any = append_members(out, schema, value) > 0;
  append_kafka_members(out, row, any);
  out += '}';
}

void RecordJsonWriter::append(std::string& out, const Row& row, JsonValueDecoder& decoder) const {
  out += '{';
  std::optional<std::string_view> text;
  if (row.value) text = row.value_string();
  const bool any = decoder.append_decoded_json(out, text, *this) > 0;
  append_kafka_members(out, row, any);
  out += '}';
}

void RecordJsonWriter::append_column(std::string& out, std::string_view member, ColumnType, std::string_view v) const {
  out.append(member);
  append_json_string(out, v);
}

void RecordJsonWriter::append_column(std::string& out, std::string_view member, ColumnType type, std::int64_t v) const {
  if (type == ColumnType::timestamp) append_timestamp_ms(out, v, member);
  else append_integer(out, v, member);
}

void RecordJsonWriter::append_column(std::string& out, std::string_view member, ColumnType type, double v) const {
  append_double(out, v, type == ColumnType::float32, member);
}

void RecordJsonWriter::append_column(std::string& out, std::string_view member, ColumnType, bool v) const {
  out.append(member);
  out += v ? "true" : "false";
}

std::size_t RecordJsonWriter::append_members(std::string& out, const Schema& schema, const DecodedValue& value) const {
  std::size_t written = 0;
  // The columns' ,"name": texts, kept per thread for the last schema written.
  thread_local std::vector<std::pair<std::string, std::string>> names;
  auto name = [&](std::string_view n, std::size_t i) {
    if (i >= names.size()) names.resize(i + 1);
    auto& [raw, json] = names[i];
    if (raw != n || json.empty()) {
      raw.assign(n);
      json.assign(1, ',');
      append_json_string(json, n);
      json += ':';
    }
    return written++ ? std::string_view(json) : std::string_view(json).substr(1);
  };
  for (std::size_t i = 0; i < schema.columns.size(); ++i) {
    const auto& col = schema.columns[i];
    const Cell& c = i < value.cells.size() ? value.cells[i] : Cell{};
    if (std::holds_alternative<std::monostate>(c)) continue;
    const std::string_view member = name(col.name, i);
    std::visit(
        [&](const auto& v) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(v)>, std::monostate>)
            append_column(out, member, col.type, v);
        },
        c);
  }
  if (value.corrupt_record) {
    out.append(name(JsonValueDecoder::kCorruptRecordColumn, schema.columns.size()));
    append_json_string(out, *value.corrupt_record);
  }
  return written;
}

}  // namespace kwire::source
