// Avro values as Arrow columns, as Spark's from_avro reads them.
//
// Shapes (Spark's SchemaConverters.toSqlType, then Arrow's types):
//   null -> null ("n"); boolean -> bool; int -> int32; long -> int64;
//   float -> float32; double -> float64; string, enum -> utf8 (enum symbols
//   as their names); bytes, fixed -> binary; record -> struct; array -> list;
//   map -> map<utf8, T>; logical types: decimal(p, s) on bytes or fixed ->
//   decimal128(p, s) (p <= 38, as Spark's DecimalType); date -> date32;
//   timestamp-millis / timestamp-micros -> timestamp[us, tz=UTC] (Spark's
//   TimestampType); local-timestamp-millis / -micros -> timestamp[us] (no
//   zone: TIMESTAMP_NTZ); uuid -> utf8; time-millis -> int32 and time-micros
//   -> int64 (Spark keeps them as numbers).
//   Unions: [null, T] -> nullable T; [int, long] -> int64 and [float,
//   double] -> float64 (with or without null); any other union -> a struct
//   with one nullable field per non-null branch, member0..memberN in branch
//   order, exactly one set (null struct for the null branch).
//   A record schema gives one column per field; any other schema one column
//   named "value". Every Arrow field is nullable except map keys.
//
// Schema resolution (writer schema -> reader schema) follows the Avro
// specification ("Schema Resolution"): fields matched by name or reader
// alias, writer fields absent from the reader skipped, reader fields absent
// from the writer filled from their default (a reader field with neither is an
// AvroSchemaError), int -> long/float/double, long -> float/double, float ->
// double, string <-> bytes, enum symbols by name (unknown ones take the
// reader enum's default), unions branch by branch.
//
// Malformed values (truncated bytes, a bad union index or enum symbol,
// negative lengths, a decimal over 16 bytes, strings that are not UTF-8) fail
// the row; bytes left after a complete value are ignored, as Avro's Java
// decoder does. Recursive schemas are refused, as Spark refuses them, and so
// are schemas whose named types, used over and over, expand to more than
// 100,000 types (a few KB of JSON can otherwise describe 11^10 columns).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/client/schema_registry.hpp"
#include "kwire/source/arrow.hpp"
#include "kwire/source/value_format.hpp"

namespace kwire::source {

namespace avro_detail {
struct Tree;
}

/// An Avro schema that cannot be parsed, converted to Spark's types or
/// resolved against another (the message names the field and the reason).
class AvroSchemaError : public SchemaError {
 public:
  using SchemaError::SchemaError;
};

/// A parsed Avro schema (Avro 1.11 JSON), immutable and cheap to copy.
class AvroSchema {
 public:
  /// Throws AvroSchemaError.
  static AvroSchema parse(std::string_view json);
  /// Spark's type of the schema, e.g. "STRUCT<id: BIGINT, name: STRING>".
  std::string spark_type() const;
  /// The JSON text it was parsed from.
  const std::string& json() const;
  /// True for a record schema, whose Spark type has one column per field;
  /// any other schema is read and written as one column named "value".
  bool is_record() const;
  const avro_detail::Tree& tree() const { return *tree_; }

 private:
  friend class AvroDecoder;
  friend class AvroEncoder;
  std::shared_ptr<const avro_detail::Tree> tree_;
};

/// Decodes Avro binary values into Arrow record batches of the reader
/// schema's Spark type (the shapes at the top of this file). Not thread-safe.
class AvroDecoder {
 public:
  /// `reader` is the shape of the output (Spark's jsonFormatSchema, or its
  /// avroSchema option when the data was written with another schema).
  /// Writer 0 is the reader schema itself. `union_prefix` names union
  /// members <prefix><type name> (Spark's enableStableIdentifiersForUnionType
  /// and stableIdentifierPrefixForUnionType) instead of member0..N. Throws
  /// AvroSchemaError when the schema has no Spark type (e.g. a decimal over
  /// 38 digits) or two stable member names differ only in case.
  explicit AvroDecoder(const AvroSchema& reader, std::optional<std::string> union_prefix = std::nullopt);
  ~AvroDecoder();
  AvroDecoder(AvroDecoder&&) noexcept;
  AvroDecoder& operator=(AvroDecoder&&) noexcept;

  /// Registers the schema some values were written with and returns its
  /// handle for append(). Throws AvroSchemaError when it cannot be resolved
  /// against the reader schema.
  int add_writer(const AvroSchema& writer);

  /// Appends one row decoded from `value` (written with writer `writer`). A
  /// null value (a Kafka tombstone) gives a null row, as from_avro gives null
  /// for a null input: the batch's struct is null at that row (validity bit
  /// 0, counted in its null_count) and so is every column. A malformed value
  /// gives a row of nulls (the struct valid, every column null) and returns
  /// false with the reason in `error`.
  bool append(std::optional<std::span<const std::uint8_t>> value, int writer = 0, std::string* error = nullptr);
  /// Appends a row of nulls: the struct valid, every column null (a
  /// malformed value's row under PERMISSIVE).
  void append_null();

  std::int64_t rows() const noexcept;
  /// Bytes held by the batch being built.
  std::size_t bytes() const noexcept;
  /// The batch's schema: a nullable struct ("+s") whose children are the
  /// columns. The batch has top-level nulls when a tombstone was appended:
  /// import it as a struct array (or a stream of them as a chunked array),
  /// not as a record batch, which Arrow refuses with top-level nulls.
  void export_schema(ArrowSchema* out) const;
  /// The rows appended so far; the decoder starts a new batch. Throws
  /// ArrowError when a column passed 2 GiB.
  ArrowBatch finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Encodes Arrow rows as Avro binary, as Spark's to_avro writes them: record
/// fields are taken from the columns of the same name (a nullable union field
/// with no column is written as null); a union takes null, the one branch
/// the column's type fits, or a struct of member0..memberN (the shape the
/// decoder gives); int/long take any integer type that fits, float/double
/// integers too; timestamps of any unit are converted to the field's logical
/// unit (flooring); decimals must have the field's scale; enums take their
/// symbols' names. Not thread-safe.
class AvroEncoder {
 public:
  explicit AvroEncoder(const AvroSchema& writer);
  ~AvroEncoder();
  AvroEncoder(AvroEncoder&&) noexcept;
  AvroEncoder& operator=(AvroEncoder&&) noexcept;

  /// One binary value per row of `batch` (a struct "+s" of `schema`), each
  /// starting with `prefix` (e.g. Confluent's 5-byte header): a batch with
  /// one column "value". A record schema takes the batch's columns, any
  /// other schema its single column. Throws AvroSchemaError when a column's
  /// type cannot be written as its field's (naming both), ArrowRecordError
  /// (arrow_records.hpp) for a value that cannot (a null into a non-null
  /// field, an unknown enum symbol, a decimal too wide for its fixed).
  ArrowBatch encode(const ArrowSchema& schema, const ArrowArray& batch, std::span<const std::uint8_t> prefix = {});
  /// The schema of encode()'s batches: a struct of one binary column "value".
  static void export_schema(ArrowSchema* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The Avro schema Spark's to_avro writes for a batch of this schema (a
/// struct; SchemaConverters.toAvroType): a record "topLevelRecord", nested
/// records named after their field in the parent's namespace, nullable
/// columns as [T, "null"], decimals as fixed with the decimal logical type,
/// timestamps as timestamp-micros (local-timestamp-micros without a zone),
/// dates as date.
std::string avro_schema_of(const ArrowSchema& schema);

/// The top-level columns of a record schema whose type is an Avro uuid (a
/// string with logicalType uuid, nullable or not), in field order; empty for
/// any other schema. (They decode to utf8; a PostgreSQL sink makes them uuid.)
std::vector<std::string> avro_uuid_columns(const AvroSchema& schema);

/// A malformed value under mode FAILFAST: Spark's message, then the record
/// (topic, partition, offset) and what was wrong with it.
class AvroDecodeError : public std::runtime_error {
 public:
  AvroDecodeError(const std::string& what, std::string topic, std::int32_t partition, std::int64_t offset)
      : std::runtime_error(what), topic_(std::move(topic)), partition_(partition), offset_(offset) {}
  const std::string& topic() const noexcept { return topic_; }
  std::int32_t partition() const noexcept { return partition_; }
  std::int64_t offset() const noexcept { return offset_; }

 private:
  std::string topic_;
  std::int32_t partition_;
  std::int64_t offset_;
};

/// How a value column is read as Avro: Spark's from_avro options, and for
/// Confluent's wire format the registry's (schema_registry.hpp).
struct AvroFormatOptions {
  /// "mode": FAILFAST (from_avro's default: a malformed value fails the read
  /// with AvroDecodeError) or PERMISSIVE (a row of nulls, counted; the
  /// row's struct stays valid, as Spark's).
  bool permissive = false;
  /// The schema the values were written with, for plain Avro (from_avro's
  /// jsonFormatSchema). Without it the values must be in Confluent's wire
  /// format and `registry` must name a registry.
  std::optional<std::string> json_format_schema;
  /// "avroSchema": the reader schema (an evolution of the writer's). With a
  /// registry and no avroSchema, the latest schema of `subject` is the reader.
  std::optional<std::string> avro_schema;
  /// "subject": default "<topic>-value" (Confluent's TopicNameStrategy).
  std::optional<std::string> subject;
  /// schema.registry.url and the other keys of SchemaRegistryConfig.
  std::map<std::string, std::string> registry;
  /// Writing (Confluent's serializer names): "auto.register.schemas" (default
  /// true) registers the writer schema under the subject; "use.latest.version"
  /// (default false) writes with the subject's latest schema instead.
  bool auto_register = true;
  bool use_latest_version = false;
  /// Spark's "enableStableIdentifiersForUnionType" (default false) and
  /// "stableIdentifierPrefixForUnionType" (default "member_"): union members
  /// named <prefix><type name> instead of member0..N.
  bool stable_union_ids = false;
  std::string union_prefix = "member_";
  /// "column" (kwire's): the Kafka column the values are in, "value" (the
  /// default) or "key"; the subject's default is "<topic>-<column>".
  std::string column = "value";

  /// From string options: mode, jsonFormatSchema, avroSchema, subject,
  /// auto.register.schemas, use.latest.version, column,
  /// enableStableIdentifiersForUnionType, stableIdentifierPrefixForUnionType,
  /// and the registry's keys
  /// (schema.registry.*, basic.auth.*). Throws client::ConfigError for an
  /// unknown mode or key or a bad boolean. (AvroValueReader's constructor
  /// refuses neither or both of jsonFormatSchema and schema.registry.url.)
  static AvroFormatOptions parse(const std::map<std::string, std::string>& options);
};

/// Reads a column of Kafka values as Avro into Arrow record batches: the
/// framing, the registry, the mode, and AvroDecoder.
class AvroValueReader {
 public:
  /// `topic` names the subject when options.subject is not set. `registry`
  /// replaces the one the options name (tests give a fake). Throws
  /// AvroSchemaError, client::SchemaRegistryError, client::ConfigError.
  AvroValueReader(const AvroFormatOptions& options, const std::string& topic,
                  std::shared_ptr<client::SchemaRegistry> registry = nullptr);
  ~AvroValueReader();
  AvroValueReader(AvroValueReader&&) noexcept;
  AvroValueReader& operator=(AvroValueReader&&) noexcept;

  /// Appends the row of one record's value (a null value, a tombstone, a
  /// null row; see AvroDecoder::append). Confluent's framing: a magic
  /// byte other than 0 or a schema id the registry does not have is a
  /// malformed value. Throws AvroDecodeError (FAILFAST),
  /// client::SchemaRegistryError (the registry could not be asked),
  /// AvroSchemaError (a writer schema that does not resolve against the
  /// reader's).
  void append(std::optional<std::span<const std::uint8_t>> value, std::string_view topic, std::int32_t partition,
              std::int64_t offset);
  /// Appends every row of a record batch with Spark's Kafka columns (a
  /// struct "+s" whose children include `value`, binary or utf8, 32- or
  /// 64-bit offsets; `topic`, `partition` and `offset`, when present, name a
  /// malformed record). Throws ArrowRecordSchemaError (arrow_records.hpp)
  /// when there is no usable value column, and what append() throws.
  void append_batch(const ArrowSchema& schema, const ArrowArray& batch);
  /// Values that gave null rows under PERMISSIVE since construction.
  std::int64_t malformed() const noexcept;
  /// The first malformed value's reason since construction or the last
  /// mark_malformed() (empty when none).
  const std::string& first_malformed() const noexcept;
  /// Starts a new span for first_malformed() (a caller's one call).
  void mark_malformed() noexcept;
  /// The reader schema's JSON.
  const std::string& reader_schema() const noexcept;

  std::int64_t rows() const noexcept;
  std::size_t bytes() const noexcept;
  void export_schema(ArrowSchema* out) const;
  ArrowBatch finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Writes Arrow rows as Kafka values in Avro: plain (Spark's to_avro), or in
/// Confluent's wire format when the options name a registry. The writer
/// schema is jsonFormatSchema, the subject's latest (use.latest.version), or
/// the one Spark derives from the first batch's columns (avro_schema_of);
/// with auto.register.schemas it is registered under the subject
/// ("<topic>-value" by default), otherwise it must be registered already.
class AvroValueWriter {
 public:
  /// Throws client::ConfigError (a registry without a subject or topic).
  AvroValueWriter(const AvroFormatOptions& options, const std::string& topic,
                  std::shared_ptr<client::SchemaRegistry> registry = nullptr);
  ~AvroValueWriter();
  AvroValueWriter(AvroValueWriter&&) noexcept;
  AvroValueWriter& operator=(AvroValueWriter&&) noexcept;

  /// AvroEncoder::encode of `batch` with the header; the registry is asked on
  /// the first call only. Throws what encode throws,
  /// client::SchemaRegistryError.
  ArrowBatch encode(const ArrowSchema& schema, const ArrowArray& batch);
  /// The writer schema (empty before the first batch when it is derived).
  const std::string& writer_schema() const noexcept;
  /// The registry's id of the writer schema (-1 for plain Avro).
  std::int32_t schema_id() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kwire::source
