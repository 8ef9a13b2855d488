// Avro schemas as a tree (avro.hpp): the parsed form of the specification's
// JSON (Avro 1.11, "Schema Declaration"), logical types and field defaults
// included, which the decoder resolves and converts to Spark's types.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kwire::source::avro_detail {

enum class Type {
  null,
  boolean,
  int_,
  long_,
  float_,
  double_,
  bytes,
  string,
  record,
  enumeration,
  array,
  map,
  union_,
  fixed
};

/// Logical types Spark maps (SchemaConverters): the rest read as their
/// underlying type. An invalid logical type (e.g. decimal with no precision)
/// is ignored, as the specification says.
enum class Logical {
  none,
  decimal,
  uuid,
  date,
  time_millis,
  time_micros,
  timestamp_millis,
  timestamp_micros,
  local_timestamp_millis,
  local_timestamp_micros
};

struct Node;

struct Field {
  std::string name;
  std::vector<std::string> aliases;
  const Node* type = nullptr;
  /// The default as minified JSON, when the field declares one.
  std::optional<std::string> default_json;
};

struct Node {
  Type type = Type::null;
  Logical logical = Logical::none;
  int precision = 0;  // decimal
  int scale = 0;      // decimal
  std::string name;   // named types: the full name
  std::vector<std::string> aliases;
  std::vector<Field> fields;         // record
  std::vector<std::string> symbols;  // enum
  std::optional<std::string> enum_default;
  const Node* items = nullptr;        // array items, map values
  std::vector<const Node*> branches;  // union
  std::int64_t size = 0;              // fixed
  /// The fewest bytes a value takes (0 for null and records of such), set
  /// by the parser: bounds the item counts of arrays and maps.
  std::int64_t min_bytes = 0;
  /// The types it stands for once every named type in it is expanded (1
  /// for a primitive), set by the parser: at most kMaxExpandedTypes.
  std::int64_t types = 1;
};

/// A parsed schema: the nodes it owns and its root.
struct Tree {
  std::vector<std::unique_ptr<Node>> nodes;
  const Node* root = nullptr;
  std::string json;  // the text it was parsed from
};

/// The most types a schema may stand for once every use of a named type is
/// expanded (as Spark's type of it and the decoder's columns expand it): a
/// few KB of JSON naming records of records could otherwise stand for
/// billions of columns.
inline constexpr std::int64_t kMaxExpandedTypes = 100000;

/// Parses Avro schema JSON. Throws AvroSchemaError (avro.hpp) naming what is
/// wrong: invalid JSON, an unknown type name, a missing attribute, a
/// recursive reference (not supported, as in Spark), a duplicate name, more
/// than kMaxExpandedTypes types once expanded.
std::shared_ptr<const Tree> parse_schema(std::string_view json);

/// The unqualified part of a full name ("a.b.C" -> "C").
std::string_view short_name(std::string_view full_name);

/// Spark's SQL type of a node (SchemaConverters.toSqlType), e.g.
/// "STRUCT<id: BIGINT, tags: ARRAY<STRING>>"; unions as Spark maps them.
std::string spark_type(const Node& node);

/// The Avro binary encoding of a JSON default for `node` (the specification's
/// table of default values; a union's default is for its first branch, or
/// any branch it fits). Throws AvroSchemaError when the JSON does not fit.
std::string encode_default(const Node& node, std::string_view json);

}  // namespace kwire::source::avro_detail
