// Protobuf descriptors -> Spark's shape of a message, and the walk of a
// parsed message into Arrow columns (protobuf.hpp).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor_database.h>
#include <google/protobuf/message.h>
#include <google/protobuf/util/type_resolver.h>

#include "avro_columns.hpp"
#include "kwire/source/protobuf.hpp"

namespace kwire::source::protobuf_detail {

namespace pb = google::protobuf;
using avro_detail::Col;

/// How one field (or a list element, a map key or value) is written.
enum class As {
  int32,        // int32, sint32, sfixed32; uint32, fixed32 without upcast
  uint32_long,  // uint32, fixed32 with upcast.unsigned.ints
  int64,        // int64, sint64, sfixed64; uint64, fixed64 without upcast
  uint64_dec,   // uint64, fixed64 with upcast: decimal(20, 0)
  float32,
  float64,
  boolean,
  string,
  bytes,
  enum_name,
  enum_number,
  timestamp,
  duration,
  any_json,   // google.protobuf.Any with convert.any.fields.to.json: its JSON text
  unwrapped,  // a wrapper message written as its `value` (children[0])
  message,    // a struct of children
  dummy,      // an empty message kept as a struct of one null string
  list,       // repeated: children[0] is the element
  map,        // children[0] key, children[1] value
};

struct Node {
  As as = As::message;
  const pb::FieldDescriptor* field = nullptr;  // null for the root and list elements (their parent's)
  std::vector<Node> children;
  /// any_json: the packed messages' types, from the schema's descriptor pool.
  std::shared_ptr<pb::util::TypeResolver> types;
};

/// Spark's shape of `message` (its fields that are kept) and the column tree
/// for it. Throws ProtobufSchemaError for a recursive message without
/// recursive.fields.max.depth.
Node plan_message(const pb::Descriptor& message, const ProtobufFormatOptions& options, Col* root);

/// Appends the row of a parsed message: each of the root's children in order.
// A value that parses but has no Arrow value (a Timestamp or Duration past
// int64 microseconds): the row is malformed, as Spark's exact arithmetic
// makes it.
struct ValueOutOfRange {
  std::string why;
};

// Throws ValueOutOfRange (the columns are then part-way through the row).
void put_row(const Node& root, Col& col, const pb::Message& message, bool emit_defaults);

/// A pool of descriptors: a FileDescriptorSet, or .proto texts, over the
/// well-known types compiled into libprotobuf and Confluent's own imports
/// (confluent/meta.proto, confluent/type/decimal.proto), which its
/// serializers leave out of a schema's references.
class Pool {
 public:
  /// From a serialized FileDescriptorSet. Throws ProtobufSchemaError.
  static std::unique_ptr<Pool> from_descriptor_set(const std::string& bytes);
  /// From .proto texts by file name (the first is the main file). Throws
  /// ProtobufSchemaError naming the file, line and column of a syntax error.
  static std::unique_ptr<Pool> from_proto_texts(const std::vector<std::pair<std::string, std::string>>& files);

  /// A top-level message by full or short name (Spark's lookup), or the main
  /// file's first message when `name` is empty. Throws ProtobufSchemaError.
  const pb::Descriptor& message(const std::string& name) const;
  /// The main file's message at Confluent's message indexes; null when there is none.
  const pb::Descriptor* message_at(const std::vector<std::int32_t>& indexes) const;

 private:
  void build();

  pb::SimpleDescriptorDatabase own_;
  pb::SimpleDescriptorDatabase confluent_;
  std::unique_ptr<pb::DescriptorPoolDatabase> generated_;
  std::unique_ptr<pb::MergedDescriptorDatabase> merged_;
  std::unique_ptr<pb::DescriptorPool> pool_;
  std::vector<std::string> files_;  // in the order given (descriptor sets: theirs)
};

/// A registry's Protobuf schema and, fetched by subject and version, the
/// files its references name (google/protobuf/ ones are built in). Throws
/// ProtobufSchemaError, client::SchemaRegistryError.
std::unique_ptr<Pool> registry_pool(client::SchemaRegistry& registry, const client::RegisteredSchema& s);

}  // namespace kwire::source::protobuf_detail
