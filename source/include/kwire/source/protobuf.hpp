// Protobuf values as Arrow columns, as Spark's from_protobuf reads them
// (libprotobuf's DynamicMessage and descriptor pool underneath). A library of
// its own, kwire::protobuf, so that only programs that read Protobuf link
// libprotobuf.
//
// The message: `messageName` in a FileDescriptorSet (Spark's descFilePath /
// binaryDescriptorSet, as `protoc --include_imports --descriptor_set_out`
// writes it), or, for Confluent's wire format, the subject's latest schema
// (.proto text and its references, parsed with libprotoc) and its
// messageName (default: the first message of the file).
//
// Shapes (Spark's SchemaConverters for Protobuf, then Arrow's types):
//   int32, sint32, sfixed32 -> int32; uint32, fixed32 -> int32 (the bits), or
//   int64 with upcast.unsigned.ints; int64, sint64, sfixed64 -> int64;
//   uint64, fixed64 -> int64 (the bits), or decimal128(20, 0) with
//   upcast.unsigned.ints; float, double, bool; string -> utf8; bytes ->
//   binary; enum -> utf8 (the value's name; a number the enum does not
//   declare gives UNKNOWN_ENUM_VALUE_<Enum>_<number>, as Java does), or int32
//   with enums.as.ints; google.protobuf.Timestamp -> timestamp[us, tz=UTC];
//   google.protobuf.Duration -> duration[us] (Spark's DayTimeIntervalType);
//   wrapper types (Int32Value...) -> a struct of `value`, or the value with
//   unwrap.primitive.wrapper.types; google.protobuf.Any -> a struct of
//   type_url and value, or with convert.any.fields.to.json utf8: the JSON of
//   the packed message as Spark prints it ({"@type":"type.googleapis.com/
//   pkg.Msg", then its fields by JSON name, compact), its type looked up in
//   the descriptor pool the schema came from (the descriptor set, or the
//   registry schema and its references); an Any whose type is not there is
//   a malformed value (FAILFAST: AvroDecodeError; PERMISSIVE: a null row); map<K, V> -> map; other messages ->
//   struct; repeated -> list. oneof members are ordinary nullable fields.
//   A message with no fields is dropped, or kept as a struct of one string
//   `__dummy_field_in_empty_struct` with retain.empty.message.types.
//   Recursive messages: refused (recursive.fields.max.depth -1, the default)
//   or cut at that depth (1 to 10), as Spark does.
// Values (Spark's ProtobufDeserializer): a repeated field is always a list
// (maybe empty); another field is null unless it is set (has presence and
// was sent, or a proto3 scalar with a value other than its default), has an
// explicit default (proto2), or emit.default.values is true.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "kwire/client/schema_registry.hpp"
#include "kwire/source/arrow.hpp"
#include "kwire/source/avro.hpp"

namespace kwire::source {

/// A descriptor set or .proto text that cannot be used: the message is not
/// in it, an import is missing, a recursive message without
/// recursive.fields.max.depth, a parse error (names the file and line).
class ProtobufSchemaError : public SchemaError {
 public:
  using SchemaError::SchemaError;
};

/// from_protobuf's options (Spark's names) and the registry's.
struct ProtobufFormatOptions {
  bool permissive = false;                      // mode: FAILFAST (default) or PERMISSIVE
  std::optional<std::string> message_name;      // messageName (full or short name)
  std::optional<std::string> descriptor_set;    // the FileDescriptorSet's bytes (descFilePath is read into it)
  bool emit_default_values = false;             // emit.default.values
  bool enums_as_ints = false;                   // enums.as.ints
  bool upcast_unsigned_ints = false;            // upcast.unsigned.ints
  bool unwrap_wrappers = false;                 // unwrap.primitive.wrapper.types
  bool retain_empty_messages = false;           // retain.empty.message.types
  int recursive_max_depth = -1;                 // recursive.fields.max.depth
  bool convert_any_to_json = false;             // convert.any.fields.to.json
  std::optional<std::string> subject;           // default "<topic>-value"
  bool auto_register = true;                    // auto.register.schemas (writing)
  bool use_latest_version = false;              // use.latest.version (writing)
  std::string column = "value";                 // column: value or key (as AvroFormatOptions)
  std::map<std::string, std::string> registry;  // schema.registry.*, basic.auth.*

  /// Keys: mode, messageName, descFilePath (read here), the options above,
  /// subject, auto.register.schemas, use.latest.version, column and the
  /// registry's. Throws client::ConfigError for an unknown
  /// key or value, or a descFilePath that cannot be read.
  static ProtobufFormatOptions parse(const std::map<std::string, std::string>& options);
};

/// Reads a column of Kafka values as Protobuf into Arrow record batches:
/// plain messages (as Spark's from_protobuf), or Confluent's wire format (magic
/// byte 0, schema id, the message-index list) when the options name a
/// registry. With a registry each schema id is looked up once and must hold a
/// Protobuf schema whose indexed message has the reader's full name; the
/// payload is parsed with the reader's message (fields match by number, as
/// Protobuf's compatibility rules say). Not thread-safe.
class ProtobufValueReader {
 public:
  /// Throws ProtobufSchemaError, client::ConfigError,
  /// client::SchemaRegistryError.
  ProtobufValueReader(const ProtobufFormatOptions& options, const std::string& topic,
                      std::shared_ptr<client::SchemaRegistry> registry = nullptr);
  ~ProtobufValueReader();
  ProtobufValueReader(ProtobufValueReader&&) noexcept;
  ProtobufValueReader& operator=(ProtobufValueReader&&) noexcept;

  /// One record's row. A malformed value (bytes that do not parse, a missing
  /// required field, a bad header, an unknown schema id) throws
  /// AvroDecodeError (avro.hpp: Spark's FAILFAST text, topic, partition,
  /// offset) or, PERMISSIVE, gives a row of nulls (the row's struct valid,
  /// every column null). A null value (a Kafka tombstone) gives a null row:
  /// the batch's struct is null at that row (validity bit 0, counted in its
  /// null_count) and so is every column, as from_protobuf gives null for a
  /// null input.
  void append(std::optional<std::span<const std::uint8_t>> value, std::string_view topic, std::int32_t partition,
              std::int64_t offset);
  /// Every row of a batch with Spark's Kafka columns (as AvroValueReader).
  void append_batch(const ArrowSchema& schema, const ArrowArray& batch);
  std::int64_t malformed() const noexcept;
  const std::string& first_malformed() const noexcept;  // as AvroValueReader's
  void mark_malformed() noexcept;
  /// The reader message's full name.
  const std::string& message_name() const noexcept;

  std::int64_t rows() const noexcept;
  std::size_t bytes() const noexcept;
  void export_schema(ArrowSchema* out) const;
  ArrowBatch finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Writes Arrow rows as Protobuf messages, as Spark's to_protobuf: each
/// column of the batch (a struct's fields, recursively) sets the message
/// field of its name; message fields without a column stay unset, and so do
/// null cells. Types (Spark's ProtobufSerializer): integers into any integer
/// field that holds the value (int32 into uint32 and int64 into uint64 as
/// the bits, as from_protobuf reads them), float, double, bool, utf8 into
/// string, binary (or utf8) into bytes, utf8 into an enum by name or an
/// integer by number, struct into a message, list into a repeated field,
/// map into a map field, timestamp into google.protobuf.Timestamp, duration
/// into google.protobuf.Duration. With a registry the values are in
/// Confluent's wire format (magic byte 0, the schema id, the message
/// indexes): the message's file is registered under the subject
/// (`<topic>-value` unless `subject`) with its imports registered under
/// their file names as references, as Confluent's serializers do; with
/// auto.register.schemas=false it is looked up; with use.latest.version the
/// subject's latest schema and its message `messageName` (or the first) is
/// the writer's. Not thread-safe.
class ProtobufValueWriter {
 public:
  /// Throws ProtobufSchemaError, client::ConfigError (no schema, a registry
  /// without a subject or topic), client::SchemaRegistryError.
  ProtobufValueWriter(const ProtobufFormatOptions& options, const std::string& topic,
                      std::shared_ptr<client::SchemaRegistry> registry = nullptr);
  ~ProtobufValueWriter();
  ProtobufValueWriter(ProtobufValueWriter&&) noexcept;
  ProtobufValueWriter& operator=(ProtobufValueWriter&&) noexcept;

  /// One binary column `value`, a message per row (export_schema's shape).
  /// Throws ProtobufSchemaError (a column with no field of its name, types
  /// that do not match: names the column), ArrowRecordError (a value the
  /// field cannot hold, a null list element, an unknown enum name),
  /// client::SchemaRegistryError.
  ArrowBatch encode(const ArrowSchema& schema, const ArrowArray& batch);
  static void export_schema(ArrowSchema* out);
  /// The writer message's full name.
  const std::string& message_name() const noexcept;
  /// The registry's id of the writer schema (-1 for plain messages).
  std::int32_t schema_id() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Confluent's Protobuf header after magic byte and id: the message indexes
/// (a zigzag-varint count, then that many zigzag varints; a single 0 byte
/// means [0]) and how many bytes they took. nullopt when malformed.
std::optional<std::pair<std::vector<std::int32_t>, std::size_t>> confluent_message_indexes(
    std::span<const std::uint8_t> bytes);

}  // namespace kwire::source
