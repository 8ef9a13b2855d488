// The one writer of records as JSON: every sink and tool that writes a
// record (or a decoded value, or an Arrow record batch) as a JSON object uses
// it, so that they all agree.
//
// The rules are those of Spark's JSON writer (JacksonGenerator, with
// JSONOptions' defaults), which writes a DataFrame of the `kafka` source's
// rows as `df.write.json(...)` does:
//  - one object per row, members in column order; a null column (or a null
//    field of a nested struct) is left out (ignoreNullFields=true); a null
//    element of an array is written as null;
//  - a TIMESTAMP as a string in the default timestampFormat
//    "yyyy-MM-dd'T'HH:mm:ss[.SSS][XXX]" in the session time zone: always
//    three fraction digits (sub-millisecond digits are dropped), then "Z"
//    for a zero offset or "+HH:MM" / "-HH:MM" (with ":ss" when the offset
//    has seconds), e.g. "2026-12-01T10:00:00.315Z"; a TIMESTAMP_NTZ (an Arrow
//    timestamp without a zone) as "yyyy-MM-dd'T'HH:mm:ss.SSS"; a DATE as
//    "yyyy-MM-dd";
//  - a DOUBLE / FLOAT as its shortest round-trip decimal, NaN and infinities
//    as the strings "NaN", "Infinity", "-Infinity";
//  - a BINARY column (key, value, a header's value) in base64 (RFC 4648
//    with padding, no line breaks) with BinaryFormat::base64. kwire's sinks
//    default to BinaryFormat::text instead: the bytes as a JSON string, as
//    Spark writes `CAST(value AS STRING)`, which is how Kafka's mostly UTF-8
//    keys and values are read by people (bytes that are not UTF-8 are
//    written as \u00XX escapes of the byte values).
//
// Sources: Spark's sql/catalyst JacksonGenerator and JSONOptions
// (timestampFormatInWrite, ignoreNullFields), Jackson's writeBinary
// (Base64Variants.MIME_NO_LINEFEEDS).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/protocol/bytes.hpp"
#include "kwire/source/row.hpp"
#include "kwire/source/value_format.hpp"

struct ArrowSchema;
struct ArrowArray;

namespace kwire::source {

/// A writer option that cannot be used (an unknown time zone or column
/// name), or an Arrow column type the writer does not know. what() names it.
class JsonWriterError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// The time zone timestamps are written in: Spark's session time zone
/// (spark.sql.session.timeZone).
class TimeZone {
 public:
  /// UTC (written with the "Z" suffix).
  TimeZone();
  ~TimeZone();
  TimeZone(const TimeZone&);
  TimeZone& operator=(const TimeZone&);

  /// Parses a zone as Spark's session time zone is given: "UTC", "Z",
  /// "GMT", a fixed offset ("+02:00", "-05:30", "+0530", "+02",
  /// "UTC+02:00", "GMT-3"), or a region ID ("Europe/Paris") read from the
  /// system's tz database (TZDIR, else /usr/share/zoneinfo; the database's
  /// transitions are used, and past its last one the last offset holds).
  /// Throws JsonWriterError naming the zone when it is none of these.
  static TimeZone parse(std::string_view id);
  /// The zone's ID as given ("UTC" for the default).
  const std::string& id() const noexcept;
  /// Offset from UTC, in seconds, at `epoch_seconds`.
  std::int32_t offset_at(std::int64_t epoch_seconds) const;

  struct Rules;  // a region's transitions (time_zone.cpp)

 private:
  std::string id_;
  std::int32_t fixed_ = 0;  // the offset when rules_ is null
  std::shared_ptr<const Rules> rules_;
};

/// How BINARY columns are written (see the top of this file).
enum class BinaryFormat {
  text,    // as CAST(col AS STRING): kwire's default
  base64,  // as Spark's JSON writer writes a binary column
};

/// Parses "text" | "base64"; throws JsonWriterError otherwise.
BinaryFormat parse_binary_format(std::string_view name);

/// The `kafka` source's columns, by Spark's names.
enum class KafkaColumn { key, value, topic, partition, offset, timestamp, timestamp_type, headers };

/// Spark's name of a column: "key", ..., "timestampType", "headers".
std::string_view kafka_column_name(KafkaColumn column);

/// All columns in Spark's order (key, value, topic, partition, offset,
/// timestamp, timestampType, headers).
const std::vector<KafkaColumn>& all_kafka_columns();

/// Parses a comma-separated list of column names ("topic, partition,
/// offset"); "none" or "" gives no column. Throws JsonWriterError for an
/// unknown or repeated name.
std::vector<KafkaColumn> parse_kafka_columns(std::string_view list);

struct JsonWriterOptions {
  BinaryFormat binary = BinaryFormat::text;
  TimeZone time_zone;  // UTC
  /// The Kafka columns written for a row, in this order (all by default).
  /// A `headers` column is written only for rows that carry headers (the
  /// source's includeHeaders option).
  std::vector<KafkaColumn> kafka_columns = all_kafka_columns();
};

/// Writes rows as JSON objects (no newline), with the rules above. Cheap to
/// copy; const methods may be called from several threads.
class RecordJsonWriter {
 public:
  explicit RecordJsonWriter(JsonWriterOptions options = {});

  const JsonWriterOptions& options() const noexcept { return options_; }

  /// {"key":...,"value":...,"topic":"t","partition":0,"offset":5,
  ///  "timestamp":"2026-12-01T10:00:00.315Z","timestampType":0,"headers":[...]}
  /// with the configured Kafka columns; null key, value or headers left out.
  void append(std::string& out, const Row& row) const;

  /// A decoded value's columns (value_format.hpp: non-null cells in schema
  /// order, then "_corrupt_record" when the value was malformed), then the
  /// configured Kafka columns of `row`: the line of `--value-format json`.
  void append(std::string& out, const Row& row, const Schema& schema, const DecodedValue& value) const;

  /// The same line with `row`'s value decoded by `decoder` as it is written
  /// (JsonValueDecoder::append_decoded_json): no DecodedValue is built.
  void append(std::string& out, const Row& row, JsonValueDecoder& decoder) const;

  /// Only the decoded value's members, without braces or a leading comma;
  /// returns how many were written.
  std::size_t append_members(std::string& out, const Schema& schema, const DecodedValue& value) const;

  /// Appends one line (object + '\n') per row of an Arrow record batch: a
  /// struct array ("+s") whose children are the columns, `schema` its
  /// schema. Column types: null, bool, int8-64, uint8-64, float16 is not
  /// supported, float32/64, utf8 / large utf8, binary / large binary (per
  /// BinaryFormat), timestamp[s|ms|us|ns] with a zone (TIMESTAMP) or without
  /// (TIMESTAMP_NTZ), date32, decimal128 (a JSON number with the scale's
  /// digits), list / large list, map (an object of its entries, as Spark's
  /// JSON writer writes maps), struct. Throws
  /// JsonWriterError naming the column for any other type, or for a batch
  /// that is not a struct array. Returns the number of rows written.
  std::int64_t append_arrow_lines(std::string& out, const ArrowSchema& schema, const ArrowArray& batch) const;

  /// Building blocks, written the same way by every method above. Those
  /// taking `member` write it (a member's `,"name":` text) just before the
  /// value; a short member and its value take one append.
  /// An integer in decimal.
  static void append_integer(std::string& out, std::int64_t v, std::string_view member = {});
  /// A decoded column (value_format.hpp): `member`, then the value as its
  /// column's type is written: a STRING as a JSON string, an integer type as
  /// an integer and a TIMESTAMP (ms) as a timestamp, a FLOAT / DOUBLE as
  /// append_double writes it, a BOOLEAN as true / false.
  void append_column(std::string& out, std::string_view member, ColumnType type, std::string_view v) const;
  void append_column(std::string& out, std::string_view member, ColumnType type, std::int64_t v) const;
  void append_column(std::string& out, std::string_view member, ColumnType type, double v) const;
  void append_column(std::string& out, std::string_view member, ColumnType type, bool v) const;
  /// Bytes per BinaryFormat (a JSON string either way).
  void append_binary(std::string& out, protocol::ByteSpan bytes) const;
  /// A timestamp in ms since the epoch, as a quoted string in the zone.
  void append_timestamp_ms(std::string& out, std::int64_t ms, std::string_view member = {}) const;
  /// A timestamp in microseconds since the epoch (Spark's precision).
  void append_timestamp_us(std::string& out, std::int64_t us) const;
  /// A double as Spark writes it ("NaN" etc. quoted); `as_float` writes the
  /// shortest form of the float32 value.
  static void append_double(std::string& out, double v, bool as_float = false, std::string_view member = {});

 private:
  void append_kafka_members(std::string& out, const Row& row, bool any) const;
  bool write_kafka_members(std::string& out, const Row& row, bool any) const;

  JsonWriterOptions options_;
  bool utc_ = true;                          // fast path: the zone is UTC
  std::array<std::string, 8> member_names_;  // ,"key": ... per KafkaColumn
  // The same, each at the start of a zero-filled block that can be copied
  // whole (when every name fits).
  static constexpr std::size_t kMemberBlock = 32;
  std::array<std::array<char, kMemberBlock + 8>, 8> member_blocks_{};
  bool member_blocks_fit_ = true;
};

/// Base64 (RFC 4648, standard alphabet, with padding) of `bytes`, appended.
void append_base64(std::string& out, protocol::ByteSpan bytes);

}  // namespace kwire::source
