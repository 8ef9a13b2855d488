// JSON text as Arrow rows of a given shape: the way back from the JSON that
// RecordJsonWriter writes for decoded columns (from_avro, from_protobuf) to
// the Arrow rows that AvroEncoder / ProtobufValueWriter take (`kwire produce
// --value-format avro|protobuf` encodes each line this way).
//
// The shape is an Arrow struct ("+s"), e.g. the schema an AvroDecoder or a
// ProtobufValueReader exports; each JSON text is one row. Cells, by the
// column's Arrow type (the forms kwire's and Spark's JSON writers write):
//   null ("n")             only JSON null
//   bool ("b")             true / false
//   int32, int64           a JSON integer in range
//   float32, float64       any JSON number, or "NaN", "Infinity", "-Infinity"
//   utf8 ("u")             a JSON string
//   binary ("z")           a JSON string of base64 (RFC 4648, padding optional)
//   date32 ("tdD")         "yyyy-MM-dd"
//   timestamp ("tsu:UTC")  an ISO-8601 string ("2024-05-01T10:00:00.123456Z",
//                          "2024-05-01 10:00:00+02:00", no zone = UTC; up to
//                          microseconds), or a JSON integer of seconds since the
//                          epoch (Spark's rule for numbers in a timestamp column)
//   timestamp ("tsu:")     the same, read as a wall-clock time (TIMESTAMP_NTZ)
//   duration ("tDu")       Spark's "INTERVAL '[-]D HH:MM:SS[.ffffff]' DAY TO
//                          SECOND", or Protobuf's JSON form "[-]S[.fffffffff]s"
//   decimal128(p, s)       a JSON number or a string of one, with at most s
//                          digits after the point and p digits in all
//   list ("+l")            a JSON array
//   map ("+m")             a JSON object; each key is read as the key column's
//                          type (a utf8 key as it is, an integer key from its
//                          digits, a boolean from "true" / "false")
//   struct ("+s")          a JSON object
// In an object, a member matches the column of the same name (case-sensitive);
// a column without a member, or with JSON null, is null (the encoder then
// writes Avro's null branch or leaves the Protobuf field unset, and refuses a
// null for a field that cannot be null). A member that names no column is an
// error. Other Arrow types are refused by the constructor.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "kwire/source/arrow.hpp"
#include "kwire/source/value_format.hpp"

namespace kwire::source {

/// A JSON text that does not fit the shape: `field()` is the path of the
/// column ("address.zip", "tags[2]", "counts{k}"; empty for the text
/// itself) and what() says `field "PATH": REASON` (for the text itself,
/// the reason alone: "is not JSON: ...", "is an array, not a JSON object of
/// the schema's fields").
class JsonRowError : public std::invalid_argument {
 public:
  JsonRowError(std::string field, const std::string& reason);
  const std::string& field() const noexcept { return field_; }
  /// The reason alone, without the field.
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string field_;
  std::string reason_;
};

/// Builds Arrow record batches of a fixed shape from JSON texts, one row per
/// text. Not thread-safe.
class JsonRowBuilder {
 public:
  /// `shape`: a struct ("+s") whose children are the columns. With
  /// `single_value`, the shape has one column and each text is that column's
  /// value (any JSON, e.g. `"user-1"` or `42`) rather than an object of the
  /// columns (Avro's non-record schemas, which decode to one column "value").
  /// Throws SchemaError for a type not listed at the top of this file.
  explicit JsonRowBuilder(const ArrowSchema& shape, bool single_value = false);
  ~JsonRowBuilder();
  JsonRowBuilder(JsonRowBuilder&&) noexcept;
  JsonRowBuilder& operator=(JsonRowBuilder&&) noexcept;

  /// Appends the row of one JSON text. Throws JsonRowError when the text is
  /// not JSON (not an object, without `single_value`) or a cell does not
  /// fit its column; the rows appended before are kept, the failed one is
  /// not.
  void append(std::string_view json);
  std::int64_t rows() const noexcept;
  /// The shape (a copy of the one given).
  void export_schema(ArrowSchema* out) const;
  /// The rows appended so far; the builder starts a new batch.
  ArrowBatch finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kwire::source
