// `kwire produce --value-format avro|protobuf` (and --key-format): each
// line's JSON text as an Avro or Protobuf value, plain or in Confluent's wire
// format, through the library's writers (AvroValueWriter,
// ProtobufValueWriter) and JsonRowBuilder (json_rows.hpp gives the JSON
// forms each type takes).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/protocol/bytes.hpp"

namespace kwire::tools {

/// How one Kafka column (value or key) of `kwire produce` is encoded.
struct LineFormatArgs {
  std::string format;                          // avro | protobuf
  std::string column;                          // value | key: the subject's default is <topic>-<column>
  std::optional<std::string> schema;           // avro: the writer's schema, JSON text or @FILE
  std::vector<std::string> options;            // to_avro / to_protobuf options KEY=VALUE
  std::optional<std::string> registry;         // schema.registry.url
  const char* option_flag = "--value-option";  // named in errors
  const char* schema_flag = "--schema";
};

/// Encodes JSON lines as one format's values. The writer schema is Avro's
/// --schema (registered under the subject with a registry unless
/// auto.register.schemas=false, which looks it up), or with
/// use.latest.version=true the subject's latest; Protobuf's is messageName
/// in descFilePath, or the subject's latest with use.latest.version. The
/// registry is asked once, at the first line.
class LineEncoder {
 public:
  /// Throws std::invalid_argument (a bad option combination),
  /// client::ConfigError, source::SchemaError (a schema that cannot be
  /// used), client::SchemaRegistryError (use.latest.version: the registry
  /// could not be asked).
  LineEncoder(const LineFormatArgs& args, const std::string& topic);
  ~LineEncoder();
  LineEncoder(LineEncoder&&) noexcept;
  LineEncoder& operator=(LineEncoder&&) noexcept;

  /// The encoded bytes of one line. Throws std::invalid_argument
  /// `line N: COLUMN field "PATH": REASON` when the text is not JSON or does
  /// not fit the schema (a wrong type, a missing non-null field, a field the
  /// schema does not have), client::SchemaRegistryError when the registry
  /// refuses the schema or cannot be reached.
  protocol::Bytes encode(std::string_view line, std::uint64_t line_no);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kwire::tools
