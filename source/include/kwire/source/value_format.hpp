// Decoding of record values into typed columns, as Spark's
// `from_json(col("value").cast("string"), schema)` does in PERMISSIVE mode.
//
// A schema is written in Spark's DDL ("user_id STRING, amount DOUBLE"); only
// flat (non-nested) columns are supported. Decoding rules, taken from Spark's
// JSON parser:
//  - a field absent from the object, or JSON null, gives null;
//  - a field whose JSON type does not fit the column gives null and the record
//    counts as malformed (the raw text goes to `_corrupt_record`), the other
//    columns keep their values;
//  - text that is not a JSON object gives null in every column and the raw text
//    in `_corrupt_record`;
//  - STRING takes a JSON string as is, and any other JSON value as its JSON text;
//  - INT / BIGINT (and TINYINT / SMALLINT) take JSON integers in range;
//  - DOUBLE / FLOAT take any JSON number and the strings "NaN", "Infinity",
//    "+Infinity", "-Infinity" (and "+INF", "-INF", "INF");
//  - BOOLEAN takes true / false;
//  - TIMESTAMP takes an ISO-8601 string ("2024-05-01T10:00:00Z",
//    "2024-05-01 10:00:00.123+02:00", no zone = UTC) or a JSON integer counted
//    in SECONDS since the epoch (Spark's rule for numbers in a timestamp column).
//    Stored as milliseconds since the epoch.
// Keys are matched case-sensitively; when a key repeats, the last one wins.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kwire::source {

class RecordJsonWriter;  // json_writer.hpp

/// Thrown for a schema that cannot be parsed or uses an unsupported type.
class SchemaError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

enum class ColumnType { string, int8, int16, int32, int64, float32, float64, boolean, timestamp };

/// Spark's SQL name of a type: STRING, TINYINT, SMALLINT, INT, BIGINT, FLOAT,
/// DOUBLE, BOOLEAN, TIMESTAMP.
std::string_view column_type_name(ColumnType type);

struct Column {
  std::string name;
  ColumnType type = ColumnType::string;
  bool operator==(const Column&) const = default;
};

struct Schema {
  std::vector<Column> columns;

  /// Parses Spark DDL: comma-separated `name TYPE` pairs; names may be quoted
  /// with backticks; types are case-insensitive; aliases INTEGER (INT), LONG
  /// (BIGINT), SHORT (SMALLINT), BYTE (TINYINT), REAL (FLOAT), BOOL (BOOLEAN)
  /// and `name: TYPE` are accepted, as are trailing `NOT NULL` and
  /// `COMMENT '...'`. Throws SchemaError on anything else (nested types,
  /// duplicate or empty names).
  static Schema parse_ddl(std::string_view ddl);
  /// The schema back in DDL: "`user_id` STRING, `amount` DOUBLE".
  std::string to_ddl() const;
};

/// One decoded cell: null, string, integer (also timestamps, in ms), double, boolean.
using Cell = std::variant<std::monostate, std::string, std::int64_t, double, bool>;

struct DecodedValue {
  /// One cell per schema column, in schema order.
  std::vector<Cell> cells;
  /// Set (to the raw text) when the text was not a JSON object or a field had
  /// the wrong type.
  std::optional<std::string> corrupt_record;
};

/// Decodes JSON values against a schema. Reuses its parser buffers; not
/// thread-safe (use one decoder per thread).
class JsonValueDecoder {
 public:
  explicit JsonValueDecoder(Schema schema);
  ~JsonValueDecoder();
  JsonValueDecoder(JsonValueDecoder&&) noexcept;
  JsonValueDecoder& operator=(JsonValueDecoder&&) noexcept;

  const Schema& schema() const noexcept { return schema_; }

  /// Decodes one value. A null record value (Kafka tombstone) decodes to all
  /// nulls and no corrupt record, as from_json gives null for null input.
  DecodedValue decode(std::optional<std::string_view> text);
  /// The same into `out`, whose memory is reused (for a loop over records).
  void decode(std::optional<std::string_view> text, DecodedValue& out);

  /// Appends the non-null cells as JSON members separated by commas (no
  /// braces, no leading comma): "user_id":"u1","amount":1.5,... with
  /// "_corrupt_record" last, only when the text was malformed. Null cells are
  /// left out, as Spark's JSON writer does by default (ignoreNullFields=true).
  /// Timestamps are written as ISO-8601 UTC strings with milliseconds; NaN and
  /// infinities as the strings "NaN", "Infinity", "-Infinity" (as Spark's
  /// JSON writer does). Returns the number of members written (0 for an
  /// all-null row).
  std::size_t append_json_members(std::string& out, const DecodedValue& value) const;

  /// Decodes one value and appends exactly what
  /// `writer.append_members(out, schema(), decode(text))` appends, written
  /// straight from the parsed text: no cells are built. (A value whose
  /// fields are out of schema order, or that repeats a key, is decoded into
  /// cells first; the result is the same.) Returns the number of members.
  std::size_t append_decoded_json(std::string& out, std::optional<std::string_view> text,
                                  const RecordJsonWriter& writer);

  /// Name of the column that receives malformed text.
  static constexpr std::string_view kCorruptRecordColumn = "_corrupt_record";

 private:
  struct Impl;
  Schema schema_;
  std::unique_ptr<Impl> impl_;
};

/// Parses an ISO-8601 / Spark timestamp string to ms since the epoch (UTC
/// when no zone is given). nullopt when the text is not a timestamp.
std::optional<std::int64_t> parse_timestamp_ms(std::string_view text);

/// Formats ms since the epoch as "2024-05-01T10:00:00.000Z".
std::string format_timestamp_ms(std::int64_t ms);

}  // namespace kwire::source
