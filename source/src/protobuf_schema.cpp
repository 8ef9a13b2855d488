// Protobuf descriptors to Spark's shapes and Arrow columns; descriptor pools
// from descriptor sets and .proto texts (protobuf_detail.hpp).
#include <fmt/format.h>
#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/type_resolver_util.h>

#include "kwire/client/sasl.hpp"
#include "protobuf_detail.hpp"

namespace kwire::source::protobuf_detail {

using avro_detail::Kind;

namespace {

[[noreturn]] void fail(const std::string& what) { throw ProtobufSchemaError("Protobuf schema: " + what); }

Col leaf(Kind k, const std::string& name) {
  Col c;
  c.kind = k;
  c.name = name;
  if (k == Kind::binary || k == Kind::utf8 || k == Kind::list || k == Kind::map) c.end_offset(0);
  return c;
}

// Spark matches Timestamp and Duration by name; kwire also wants the shape
// of google/protobuf's messages (int64 seconds, int32 nanos, both singular),
// so a user's message of that name with other fields stays a struct.
bool seconds_nanos(const pb::Descriptor& m) {
  if (m.field_count() != 2) return false;
  const pb::FieldDescriptor* s = m.field(0);
  const pb::FieldDescriptor* n = m.field(1);
  return s->name() == "seconds" && n->name() == "nanos" && !s->is_repeated() && !n->is_repeated() &&
         s->cpp_type() == pb::FieldDescriptor::CPPTYPE_INT64 && n->cpp_type() == pb::FieldDescriptor::CPPTYPE_INT32;
}

bool is_wrapper(const pb::Descriptor& m) {
  static const char* const kWrappers[] = {
      "google.protobuf.BoolValue",  "google.protobuf.Int32Value",  "google.protobuf.UInt32Value",
      "google.protobuf.Int64Value", "google.protobuf.UInt64Value", "google.protobuf.StringValue",
      "google.protobuf.BytesValue", "google.protobuf.FloatValue",  "google.protobuf.DoubleValue"};
  for (const char* w : kWrappers)
    if (m.full_name() == w) return true;
  return false;
}

constexpr char kTypeUrlPrefix[] = "type.googleapis.com";

// The types of Any values in the descriptor pool of the schema, whatever
// the prefix of their URL (as Java's JsonFormat, which reads the name after
// the last '/').
class AnyTypes : public pb::util::TypeResolver {
 public:
  explicit AnyTypes(const pb::DescriptorPool* pool)
      : pool_(pb::util::NewTypeResolverForDescriptorPool(kTypeUrlPrefix, pool)) {}
  pb::util::Status ResolveMessageType(const std::string& url, pb::Type* type) override {
    return pool_->ResolveMessageType(canonical(url), type);
  }
  pb::util::Status ResolveEnumType(const std::string& url, pb::Enum* type) override {
    return pool_->ResolveEnumType(canonical(url), type);
  }

 private:
  static std::string canonical(const std::string& url) {
    return std::string(kTypeUrlPrefix) + "/" + url.substr(url.rfind('/') + 1);
  }
  std::unique_ptr<pb::util::TypeResolver> pool_;
};

// An Any's JSON, as Spark's from_protobuf gives it with
// convert.any.fields.to.json (Java's JsonFormat printer: "@type" and the
// packed message's fields by their JSON names, no insignificant
// whitespace). A type the pool does not hold makes the row malformed.
std::string any_json(const Node& n, const pb::Message& any) {
  std::string json;
  const pb::util::Status status =
      pb::util::BinaryToJsonString(n.types.get(), std::string(kTypeUrlPrefix) + "/" + any.GetDescriptor()->full_name(),
                                   any.SerializeAsString(), &json, pb::util::JsonPrintOptions());
  if (!status.ok())
    throw ValueOutOfRange{fmt::format("the google.protobuf.Any of field {} cannot be written as JSON: {}",
                                      n.field->full_name(), std::string(status.message()))};
  return json;
}

using Depths = std::map<std::string, int>;

std::optional<Node> plan_field(const pb::FieldDescriptor& fd, const Depths& depths, const ProtobufFormatOptions& o,
                               Col& out, bool element);

// A singular value of the field's type (the element of a repeated one).
std::optional<Node> plan_value(const pb::FieldDescriptor& fd, const Depths& depths, const ProtobufFormatOptions& o,
                               Col& out, const std::string& name) {
  Node n;
  n.field = &fd;
  switch (fd.cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32: n.as = As::int32, out = leaf(Kind::int32, name); return n;
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      if (o.upcast_unsigned_ints) n.as = As::uint32_long, out = leaf(Kind::int64, name);
      else n.as = As::int32, out = leaf(Kind::int32, name);
      return n;
    case pb::FieldDescriptor::CPPTYPE_INT64: n.as = As::int64, out = leaf(Kind::int64, name); return n;
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      if (o.upcast_unsigned_ints) {
        n.as = As::uint64_dec;
        out = leaf(Kind::decimal, name);
        out.precision = 20;
      } else {
        n.as = As::int64, out = leaf(Kind::int64, name);
      }
      return n;
    case pb::FieldDescriptor::CPPTYPE_FLOAT: n.as = As::float32, out = leaf(Kind::float32, name); return n;
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: n.as = As::float64, out = leaf(Kind::float64, name); return n;
    case pb::FieldDescriptor::CPPTYPE_BOOL: n.as = As::boolean, out = leaf(Kind::boolean, name); return n;
    case pb::FieldDescriptor::CPPTYPE_STRING:
      if (fd.type() == pb::FieldDescriptor::TYPE_BYTES) n.as = As::bytes, out = leaf(Kind::binary, name);
      else n.as = As::string, out = leaf(Kind::utf8, name);
      return n;
    case pb::FieldDescriptor::CPPTYPE_ENUM:
      if (o.enums_as_ints) n.as = As::enum_number, out = leaf(Kind::int32, name);
      else n.as = As::enum_name, out = leaf(Kind::utf8, name);
      return n;
    case pb::FieldDescriptor::CPPTYPE_MESSAGE: break;
  }
  const pb::Descriptor& m = *fd.message_type();
  if (o.convert_any_to_json && m.full_name() == "google.protobuf.Any") {
    n.as = As::any_json;
    n.types = std::make_shared<AnyTypes>(m.file()->pool());
    out = leaf(Kind::utf8, name);
    return n;
  }
  if (m.name() == "Duration" && seconds_nanos(m)) {
    n.as = As::duration;
    out = leaf(Kind::duration_us, name);
    return n;
  }
  if (m.name() == "Timestamp" && seconds_nanos(m)) {
    n.as = As::timestamp;
    out = leaf(Kind::ts_utc, name);
    return n;
  }
  if (o.unwrap_wrappers && is_wrapper(m)) {
    n.as = As::unwrapped;
    Col inner;
    auto v = plan_value(*m.field(0), depths, o, inner, name);
    n.children.push_back(std::move(*v));
    out = std::move(inner);
    return n;
  }
  // An ordinary message: a struct, with Spark's recursion rule.
  const std::string& record = m.full_name();
  auto it = depths.find(record);
  const int depth = it == depths.end() ? 0 : it->second;
  if (it != depths.end()) {
    if (o.recursive_max_depth <= 0 || o.recursive_max_depth > 10)
      fail(
          fmt::format("found a recursive reference in {} (field {}): set recursive.fields.max.depth to 1-10 to cut "
                      "it, as Spark's from_protobuf requires",
                      record, fd.full_name()));
    if (depth >= o.recursive_max_depth) return std::nullopt;
  }
  Depths deeper = depths;
  deeper[record] = depth + 1;
  n.as = As::message;
  out = leaf(Kind::strct, name);
  for (int i = 0; i < m.field_count(); ++i) {
    Col child;
    if (auto c = plan_field(*m.field(i), deeper, o, child, false)) {
      n.children.push_back(std::move(*c));
      out.children.push_back(std::move(child));
    }
  }
  if (n.children.empty()) {
    if (!o.retain_empty_messages) return std::nullopt;
    n.as = As::dummy;
    out.children.push_back(leaf(Kind::utf8, "__dummy_field_in_empty_struct"));
  }
  return n;
}

std::optional<Node> plan_field(const pb::FieldDescriptor& fd, const Depths& depths, const ProtobufFormatOptions& o,
                               Col& out, bool) {
  if (fd.is_map()) {
    const pb::Descriptor& entry = *fd.message_type();
    Col key, value;
    auto k = plan_value(*entry.field(0), depths, o, key, "key");
    auto v = plan_value(*entry.field(1), depths, o, value, "value");
    if (!k || !v) return std::nullopt;
    Node n;
    n.as = As::map;
    n.field = &fd;
    n.children.push_back(std::move(*k));
    n.children.push_back(std::move(*v));
    out = leaf(Kind::map, fd.name());
    Col entries = leaf(Kind::strct, "entries");
    entries.nullable = false;
    key.nullable = false;
    entries.children.push_back(std::move(key));
    entries.children.push_back(std::move(value));
    out.children.push_back(std::move(entries));
    return n;
  }
  if (fd.is_repeated()) {
    Col element;
    auto e = plan_value(fd, depths, o, element, "element");
    if (!e) return std::nullopt;
    Node n;
    n.as = As::list;
    n.field = &fd;
    n.children.push_back(std::move(*e));
    out = leaf(Kind::list, fd.name());
    out.children.push_back(std::move(element));
    return n;
  }
  return plan_value(fd, depths, o, out, fd.name());
}

// ---- values ----

void put_value(const Node& n, Col& c, const pb::Message& m, int index, bool emit);

void put_message(const Node& n, Col& c, const pb::Message& m, bool emit) {
  if (n.as == As::dummy) {
    c.children[0].append_null();
    c.valid(true);
    return;
  }
  const pb::Reflection& r = *m.GetReflection();
  for (std::size_t i = 0; i < n.children.size(); ++i) {
    const Node& child = n.children[i];
    Col& col = c.children[i];
    const pb::FieldDescriptor& fd = *child.field;
    if (child.as == As::list || child.as == As::map) {
      put_value(child, col, m, -1, emit);
    } else if (r.HasField(m, &fd) || fd.has_default_value() || emit) {
      put_value(child, col, m, -1, emit);
    } else {
      col.append_null();
    }
  }
  c.valid(true);
}

void put_seconds_nanos(Col& c, const pb::Message& sub) {
  const pb::Reflection& r = *sub.GetReflection();
  const pb::Descriptor& d = *sub.GetDescriptor();
  const std::int64_t seconds = r.GetInt64(sub, d.field(0));
  const std::int32_t nanos = r.GetInt32(sub, d.field(1));
  std::int64_t micros = 0;
  if (__builtin_mul_overflow(seconds, std::int64_t{1000000}, &micros) ||
      __builtin_add_overflow(micros, std::int64_t{nanos / 1000}, &micros))
    throw ValueOutOfRange{fmt::format("{} of {} seconds does not fit in int64 microseconds", d.full_name(), seconds)};
  c.push<std::int64_t>(micros);
}

// One value of `n.field` in `m` (element `index` of a repeated field, or
// the singular value when index < 0).
void put_value(const Node& n, Col& c, const pb::Message& m, int index, bool emit) {
  const pb::Reflection& r = *m.GetReflection();
  const pb::FieldDescriptor* f = n.field;
  const bool rep = index >= 0;
  switch (n.as) {
    case As::int32:
      if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT32)
        c.push<std::int32_t>(static_cast<std::int32_t>(rep ? r.GetRepeatedUInt32(m, f, index) : r.GetUInt32(m, f)));
      else c.push<std::int32_t>(rep ? r.GetRepeatedInt32(m, f, index) : r.GetInt32(m, f));
      return;
    case As::uint32_long: c.push<std::int64_t>(rep ? r.GetRepeatedUInt32(m, f, index) : r.GetUInt32(m, f)); return;
    case As::int64:
      if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT64)
        c.push<std::int64_t>(static_cast<std::int64_t>(rep ? r.GetRepeatedUInt64(m, f, index) : r.GetUInt64(m, f)));
      else c.push<std::int64_t>(rep ? r.GetRepeatedInt64(m, f, index) : r.GetInt64(m, f));
      return;
    case As::uint64_dec: {
      const std::uint64_t v = rep ? r.GetRepeatedUInt64(m, f, index) : r.GetUInt64(m, f);
      std::uint8_t le[16] = {};
      std::memcpy(le, &v, 8);
      c.values.insert(c.values.end(), le, le + 16);
      c.valid(true);
      return;
    }
    case As::float32: c.push<float>(rep ? r.GetRepeatedFloat(m, f, index) : r.GetFloat(m, f)); return;
    case As::float64: c.push<double>(rep ? r.GetRepeatedDouble(m, f, index) : r.GetDouble(m, f)); return;
    case As::boolean: c.push_bool(rep ? r.GetRepeatedBool(m, f, index) : r.GetBool(m, f)); return;
    case As::string:
    case As::bytes: {
      std::string scratch;
      const std::string& s =
          rep ? r.GetRepeatedStringReference(m, f, index, &scratch) : r.GetStringReference(m, f, &scratch);
      c.values.insert(c.values.end(), s.begin(), s.end());
      if (c.values.size() > static_cast<std::size_t>(INT32_MAX))
        throw ArrowError("Arrow export: a column of one record batch passed 2 GiB");
      c.end_offset(static_cast<std::int64_t>(c.values.size()));
      c.valid(true);
      return;
    }
    case As::enum_name:
    case As::enum_number: {
      const int number = rep ? r.GetRepeatedEnumValue(m, f, index) : r.GetEnumValue(m, f);
      if (n.as == As::enum_number) {
        c.push<std::int32_t>(number);
        return;
      }
      const pb::EnumValueDescriptor* v = f->enum_type()->FindValueByNumber(number);
      const std::string name = v ? v->name() : fmt::format("UNKNOWN_ENUM_VALUE_{}_{}", f->enum_type()->name(), number);
      c.values.insert(c.values.end(), name.begin(), name.end());
      c.end_offset(static_cast<std::int64_t>(c.values.size()));
      c.valid(true);
      return;
    }
    case As::timestamp:
    case As::duration: put_seconds_nanos(c, rep ? r.GetRepeatedMessage(m, f, index) : r.GetMessage(m, f)); return;
    case As::any_json: {
      const std::string json = any_json(n, rep ? r.GetRepeatedMessage(m, f, index) : r.GetMessage(m, f));
      c.values.insert(c.values.end(), json.begin(), json.end());
      c.end_offset(static_cast<std::int64_t>(c.values.size()));
      c.valid(true);
      return;
    }
    case As::unwrapped: {
      const pb::Message& sub = rep ? r.GetRepeatedMessage(m, f, index) : r.GetMessage(m, f);
      put_value(n.children[0], c, sub, -1, emit);
      return;
    }
    case As::message:
    case As::dummy: put_message(n, c, rep ? r.GetRepeatedMessage(m, f, index) : r.GetMessage(m, f), emit); return;
    case As::list: {
      const int count = r.FieldSize(m, f);
      Col& items = c.children[0];
      for (int i = 0; i < count; ++i) put_value(n.children[0], items, m, i, emit);
      c.end_offset(items.length);
      c.valid(true);
      return;
    }
    case As::map: {
      const int count = r.FieldSize(m, f);
      Col& entries = c.children[0];
      for (int i = 0; i < count; ++i) {
        const pb::Message& entry = r.GetRepeatedMessage(m, f, i);
        put_value(n.children[0], entries.children[0], entry, -1, emit);
        const pb::FieldDescriptor* vf = n.children[1].field;
        if (entry.GetReflection()->HasField(entry, vf) || vf->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE ||
            emit)
          put_value(n.children[1], entries.children[1], entry, -1, emit);
        else entries.children[1].append_null();
        entries.valid(true);
      }
      c.end_offset(entries.length);
      c.valid(true);
      return;
    }
  }
}

// Syntax errors of a .proto text, collected for the exception.
class Errors : public pb::io::ErrorCollector {
 public:
  explicit Errors(std::string file) : file_(std::move(file)) {}
  void AddError(int line, int column, const std::string& message) override {
    if (text.empty()) text = fmt::format("{}:{}:{}: {}", file_, line + 1, column + 1, message);
  }
  std::string text;

 private:
  std::string file_;
};

// A registry may hand out a Protobuf schema as the base64 of its
// FileDescriptorProto (Confluent's serialized format, what confluent-kafka's
// serializer registers) instead of .proto text.
// The serialized FileDescriptorProto some registries hold, base64-encoded
// (confluent-kafka's Python serializer registers that); nullopt for text.
std::optional<std::string> from_base64(const std::string& text) {
  if (text.empty() || text.size() % 4 != 0) return std::nullopt;
  try {
    return client::base64_decode(text);
  } catch (const client::ClientError&) {
    return std::nullopt;
  }
}

}  // namespace

Node plan_message(const pb::Descriptor& message, const ProtobufFormatOptions& options, Col* root) {
  Node n;
  n.as = As::message;
  root->kind = Kind::strct;
  Depths depths{{message.full_name(), 1}};
  for (int i = 0; i < message.field_count(); ++i) {
    Col child;
    if (auto c = plan_field(*message.field(i), depths, options, child, false)) {
      n.children.push_back(std::move(*c));
      root->children.push_back(std::move(child));
    }
  }
  if (n.children.empty() && options.retain_empty_messages) {
    n.as = As::dummy;
    root->children.push_back(leaf(Kind::utf8, "__dummy_field_in_empty_struct"));
  }
  return n;
}

void put_row(const Node& root, Col& col, const pb::Message& message, bool emit_defaults) {
  put_message(root, col, message, emit_defaults);
}

// ---- Pool ----

namespace {

// .proto text → FileDescriptorProto named `name`; throws ProtobufSchemaError
// with the file, line and column of a syntax error.
pb::FileDescriptorProto parse_proto(const std::string& name, const std::string& text) {
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  Errors errors(name);
  pb::io::Tokenizer tokenizer(&input, &errors);
  pb::compiler::Parser parser;
  parser.RecordErrorsTo(&errors);
  pb::FileDescriptorProto proto;
  if (!parser.Parse(&tokenizer, &proto) || !errors.text.empty())
    fail(fmt::format("{}", errors.text.empty() ? name + ": does not parse" : errors.text));
  proto.set_name(name);
  return proto;
}

// Confluent's imports, as its registry and serializers know them without a
// reference: field and message metadata options, and its Decimal message.
const std::vector<pb::FileDescriptorProto>& confluent_files() {
  static const std::vector<pb::FileDescriptorProto> files = [] {
    std::vector<pb::FileDescriptorProto> out;
    out.push_back(parse_proto("confluent/meta.proto", R"(
syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
  repeated Rule rules = 4;
}
message Rule {
  string name = 1;
  string doc = 2;
  string expr = 3;
  string sql = 4;
}
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
)"));
    out.push_back(parse_proto("confluent/type/decimal.proto", R"(
syntax = "proto3";
package confluent.type;
message Decimal {
  bytes value = 1;       // the unscaled value, big-endian two's complement
  uint32 precision = 2;
  int32 scale = 3;
}
)"));
    return out;
  }();
  return files;
}

}  // namespace

void Pool::build() {
  for (const pb::FileDescriptorProto& f : confluent_files()) confluent_.Add(f);
  generated_ = std::make_unique<pb::DescriptorPoolDatabase>(*pb::DescriptorPool::generated_pool());
  merged_ = std::make_unique<pb::MergedDescriptorDatabase>(
      std::vector<pb::DescriptorDatabase*>{&own_, generated_.get(), &confluent_});
  pool_ = std::make_unique<pb::DescriptorPool>(merged_.get());
}

std::unique_ptr<Pool> Pool::from_descriptor_set(const std::string& bytes) {
  pb::FileDescriptorSet set;
  if (!set.ParseFromString(bytes)) fail("the descriptor set does not parse (expected protoc's --descriptor_set_out)");
  auto p = std::make_unique<Pool>();
  for (const pb::FileDescriptorProto& f : set.file()) {
    if (!p->own_.Add(f)) fail(fmt::format("file {} is in the descriptor set twice", f.name()));
    p->files_.push_back(f.name());
  }
  p->build();
  return p;
}

std::unique_ptr<Pool> Pool::from_proto_texts(const std::vector<std::pair<std::string, std::string>>& files) {
  auto p = std::make_unique<Pool>();
  for (const auto& [name, text] : files) {
    pb::FileDescriptorProto serialized;
    if (auto bytes = from_base64(text); bytes && serialized.ParseFromString(*bytes) && serialized.has_name()) {
      serialized.set_name(name);
      if (!p->own_.Add(serialized)) fail(fmt::format("file {} is given twice", name));
      p->files_.push_back(name);
      continue;
    }
    const pb::FileDescriptorProto proto = parse_proto(name, text);
    if (!p->own_.Add(proto)) fail(fmt::format("file {} is given twice", name));
    p->files_.push_back(name);
  }
  p->build();
  return p;
}

const pb::Descriptor& Pool::message(const std::string& name) const {
  for (const std::string& file : files_) {
    const pb::FileDescriptor* f = pool_->FindFileByName(file);
    if (!f) fail(fmt::format("file {} cannot be built (a missing import?)", file));
    for (int i = 0; i < f->message_type_count(); ++i) {
      const pb::Descriptor* d = f->message_type(i);
      if (name.empty() || d->name() == name || d->full_name() == name) return *d;
    }
    if (name.empty()) fail(fmt::format("file {} has no message", file));
  }
  fail(fmt::format("no message named {} in the descriptors", name));
}

const pb::Descriptor* Pool::message_at(const std::vector<std::int32_t>& indexes) const {
  if (files_.empty() || indexes.empty()) return nullptr;
  const pb::FileDescriptor* f = pool_->FindFileByName(files_[0]);
  if (!f || indexes[0] < 0 || indexes[0] >= f->message_type_count()) return nullptr;
  const pb::Descriptor* d = f->message_type(indexes[0]);
  for (std::size_t i = 1; i < indexes.size(); ++i) {
    if (indexes[i] < 0 || indexes[i] >= d->nested_type_count()) return nullptr;
    d = d->nested_type(indexes[i]);
  }
  return d;
}

}  // namespace kwire::source::protobuf_detail
