// ProtobufValueWriter (protobuf.hpp): Arrow rows -> Protobuf messages, as
// Spark's to_protobuf writes them. The batch's columns and the message are
// matched once per batch schema into a tree of steps; each row fills a
// DynamicMessage through reflection and is serialized.
#include <set>

#include <fmt/format.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>

#include "arrow_cells.hpp"
#include "arrow_detail.hpp"
#include "kwire/client/sasl.hpp"
#include "kwire/source/arrow_records.hpp"
#include "protobuf_detail.hpp"

namespace kwire::source {

using namespace protobuf_detail;
using arrow_cells::In;
namespace pb = google::protobuf;
using FD = pb::FieldDescriptor;

namespace {

enum class Special : std::uint8_t { none, timestamp, duration };

// One column (or list element, map key or value) and the field it sets.
struct Step {
  In in = In::null;
  const ArrowArray* array = nullptr;
  const FD* field = nullptr;
  std::string path;
  std::int64_t per_second = 0;  // timestamps and durations
  Special special = Special::none;
  std::vector<Step> children;  // message: per column; repeated: [element]; map: [key, value]
  bool element = false;        // a list's element step (the field is repeated)
};

[[noreturn]] void mismatch(const std::string& path, std::string_view arrow, const FD& f, std::string_view why = "") {
  throw ProtobufSchemaError(
      fmt::format("to_protobuf: column \"{}\" of Arrow type '{}' cannot be written into field "
                  "{} ({}{}){}{}",
                  path, arrow, f.full_name(), f.is_repeated() ? "repeated " : "",
                  f.cpp_type() == FD::CPPTYPE_MESSAGE ? f.message_type()->full_name() : std::string(f.type_name()),
                  why.empty() ? "" : ": ", why));
}

std::vector<Step> compile_message(const ArrowSchema& s, const ArrowArray& a, const pb::Descriptor& d,
                                  const std::string& path);

// A single value of `f` (its element when repeated).
Step compile_value(const ArrowSchema& s, const ArrowArray& a, const FD& f, const std::string& path) {
  Step st;
  st.array = &a;
  st.field = &f;
  st.path = path;
  const std::string_view fmt_s = s.format ? s.format : "";
  st.in = arrow_cells::in_kind(fmt_s, &st.per_second);
  if (s.dictionary || a.dictionary) mismatch(path, fmt_s, f, "dictionary arrays are not supported");
  auto need = [&](bool ok) {
    if (!ok) mismatch(path, fmt_s, f);
  };
  switch (f.cpp_type()) {
    case FD::CPPTYPE_INT32:
    case FD::CPPTYPE_INT64:
    case FD::CPPTYPE_UINT32:
    case FD::CPPTYPE_UINT64: need(arrow_cells::is_long(st.in)); break;
    case FD::CPPTYPE_FLOAT:
    case FD::CPPTYPE_DOUBLE: need(st.in == In::f32 || st.in == In::f64 || arrow_cells::is_long(st.in)); break;
    case FD::CPPTYPE_BOOL: need(st.in == In::boolean); break;
    case FD::CPPTYPE_ENUM: need(arrow_cells::is_text(st.in) || arrow_cells::is_long(st.in)); break;
    case FD::CPPTYPE_STRING:
      need(arrow_cells::is_text(st.in) || (f.type() == FD::TYPE_BYTES && arrow_cells::is_bin(st.in)));
      break;
    case FD::CPPTYPE_MESSAGE: {
      const pb::Descriptor& m = *f.message_type();
      if (st.in == In::ts && m.full_name() == "google.protobuf.Timestamp") {
        st.special = Special::timestamp;
      } else if (st.in == In::duration && m.full_name() == "google.protobuf.Duration") {
        st.special = Special::duration;
      } else {
        need(st.in == In::strct);
        st.children = compile_message(s, a, m, path);
      }
      break;
    }
  }
  return st;
}

// Field `f` (singular, repeated or map) from one column.
Step compile_field(const ArrowSchema& s, const ArrowArray& a, const FD& f, const std::string& path) {
  const std::string_view fmt_s = s.format ? s.format : "";
  std::int64_t unit = 0;
  const In in = arrow_cells::in_kind(fmt_s, &unit);
  if (f.is_map()) {
    if (in != In::map || s.n_children != 1 || s.children[0]->n_children != 2) mismatch(path, fmt_s, f, "a map field");
    Step st;
    st.in = in;
    st.array = &a;
    st.field = &f;
    st.path = path;
    const ArrowSchema& entries = *s.children[0];
    const ArrowArray& entry_array = *a.children[0];
    const pb::Descriptor& entry = *f.message_type();
    st.children.push_back(compile_value(*entries.children[0], *entry_array.children[0], *entry.map_key(), path + "{}"));
    st.children.push_back(
        compile_value(*entries.children[1], *entry_array.children[1], *entry.map_value(), path + "{}"));
    return st;
  }
  if (f.is_repeated()) {
    if (in != In::list && in != In::large_list) mismatch(path, fmt_s, f, "a repeated field takes a list");
    Step st;
    st.in = in;
    st.array = &a;
    st.field = &f;
    st.path = path;
    st.children.push_back(compile_value(*s.children[0], *a.children[0], f, path + "[]"));
    st.children.back().element = true;
    return st;
  }
  return compile_value(s, a, f, path);
}

std::vector<Step> compile_message(const ArrowSchema& s, const ArrowArray& a, const pb::Descriptor& d,
                                  const std::string& path) {
  std::vector<Step> steps;
  std::set<const FD*> taken;
  for (std::int64_t i = 0; i < s.n_children; ++i) {
    const std::string name = s.children[i]->name ? s.children[i]->name : "";
    const std::string child_path = path.empty() ? name : path + "." + name;
    const FD* f = d.FindFieldByName(name);
    if (!f)
      throw ProtobufSchemaError(
          fmt::format("to_protobuf: column \"{}\" has no field of its name in message {}", child_path, d.full_name()));
    if (!taken.insert(f).second)
      throw ProtobufSchemaError(fmt::format("to_protobuf: two columns named \"{}\"", child_path));
    steps.push_back(compile_field(*s.children[i], *a.children[i], *f, child_path));
  }
  // proto2 required fields must come from a column.
  for (int k = 0; k < d.field_count(); ++k) {
    const FD* f = d.field(k);
    if (f->is_required() && !taken.count(f))
      throw ProtobufSchemaError(fmt::format("to_protobuf: the required field {} has no column \"{}\"{}", f->full_name(),
                                            path.empty() ? f->name() : path + "." + f->name(), ""));
  }
  return steps;
}

// ---- writing ----

[[noreturn]] void bad_value(const Step& s, const std::string& why) {
  throw ArrowRecordError(fmt::format("to_protobuf: column \"{}\": {}", s.path, why));
}

// Integers as 128-bit so that every Arrow integer and field range compare.
__int128 int_at(const Step& s, std::int64_t i) {
  const ArrowArray& a = *s.array;
  switch (s.in) {
    case In::i8: return arrow_cells::at<std::int8_t>(a, i);
    case In::i16: return arrow_cells::at<std::int16_t>(a, i);
    case In::i32: return arrow_cells::at<std::int32_t>(a, i);
    case In::u8: return arrow_cells::at<std::uint8_t>(a, i);
    case In::u16: return arrow_cells::at<std::uint16_t>(a, i);
    case In::u32: return arrow_cells::at<std::uint32_t>(a, i);
    case In::u64: return arrow_cells::at<std::uint64_t>(a, i);
    default: return arrow_cells::at<std::int64_t>(a, i);
  }
}

template <class T>
T fit(const Step& s, __int128 v, __int128 lo, __int128 hi) {
  if (v < lo || v > hi)
    bad_value(s, fmt::format("{} does not fit field {} ({})", static_cast<long long>(v), s.field->full_name(),
                             s.field->type_name()));
  return static_cast<T>(v);
}

double real_at(const Step& s, std::int64_t i) {
  if (s.in == In::f64) return arrow_cells::at<double>(*s.array, i);
  if (s.in == In::f32) return arrow_cells::at<float>(*s.array, i);
  return static_cast<double>(int_at(s, i));
}

void fill(pb::Message& m, const std::vector<Step>& columns, std::int64_t row);

// Sets (or, for a repeated field, adds) the value of step `s` at index i.
void put(pb::Message& m, const Step& s, std::int64_t i) {
  const pb::Reflection& r = *m.GetReflection();
  const FD* f = s.field;
  const bool add = f->is_repeated();
  const ArrowArray& a = *s.array;
  switch (f->cpp_type()) {
    case FD::CPPTYPE_INT32: {
      // An int32 column into uint32 holds its bits (from_protobuf reads uint32 that way).
      const auto v = fit<std::int32_t>(s, int_at(s, i), INT32_MIN, INT32_MAX);
      add ? r.AddInt32(&m, f, v) : r.SetInt32(&m, f, v);
      return;
    }
    case FD::CPPTYPE_UINT32: {
      const __int128 raw = int_at(s, i);
      const auto v = s.in == In::i32 ? static_cast<std::uint32_t>(static_cast<std::int32_t>(raw))
                                     : fit<std::uint32_t>(s, raw, 0, UINT32_MAX);
      add ? r.AddUInt32(&m, f, v) : r.SetUInt32(&m, f, v);
      return;
    }
    case FD::CPPTYPE_INT64: {
      const auto v = fit<std::int64_t>(s, int_at(s, i), INT64_MIN, INT64_MAX);
      add ? r.AddInt64(&m, f, v) : r.SetInt64(&m, f, v);
      return;
    }
    case FD::CPPTYPE_UINT64: {
      const __int128 raw = int_at(s, i);
      const auto v = s.in == In::i64 ? static_cast<std::uint64_t>(static_cast<std::int64_t>(raw))
                                     : fit<std::uint64_t>(s, raw, 0, UINT64_MAX);
      add ? r.AddUInt64(&m, f, v) : r.SetUInt64(&m, f, v);
      return;
    }
    case FD::CPPTYPE_FLOAT: {
      const auto v = static_cast<float>(real_at(s, i));
      add ? r.AddFloat(&m, f, v) : r.SetFloat(&m, f, v);
      return;
    }
    case FD::CPPTYPE_DOUBLE: {
      const double v = real_at(s, i);
      add ? r.AddDouble(&m, f, v) : r.SetDouble(&m, f, v);
      return;
    }
    case FD::CPPTYPE_BOOL: {
      const bool v = arrow_cells::bit(a, i);
      add ? r.AddBool(&m, f, v) : r.SetBool(&m, f, v);
      return;
    }
    case FD::CPPTYPE_STRING: {
      std::string v(arrow_cells::bytes(a, i, s.in == In::large_utf8 || s.in == In::large_binary));
      add ? r.AddString(&m, f, std::move(v)) : r.SetString(&m, f, std::move(v));
      return;
    }
    case FD::CPPTYPE_ENUM: {
      const pb::EnumDescriptor& e = *f->enum_type();
      if (arrow_cells::is_text(s.in)) {
        const std::string name(arrow_cells::bytes(a, i, s.in == In::large_utf8));
        const pb::EnumValueDescriptor* v = e.FindValueByName(name);
        if (!v) bad_value(s, fmt::format("\"{}\" is not a value of enum {}", name, e.full_name()));
        add ? r.AddEnum(&m, f, v) : r.SetEnum(&m, f, v);
      } else {
        const auto n = fit<int>(s, int_at(s, i), INT32_MIN, INT32_MAX);
        add ? r.AddEnumValue(&m, f, n) : r.SetEnumValue(&m, f, n);
      }
      return;
    }
    case FD::CPPTYPE_MESSAGE: {
      pb::Message& sub = add ? *r.AddMessage(&m, f) : *r.MutableMessage(&m, f);
      if (s.special == Special::none) {
        fill(sub, s.children, i + a.offset);
        return;
      }
      // Timestamp / Duration: seconds and nanos (nanos of a negative value are
      // negative for Duration, in [0, 1e9) for Timestamp).
      const std::int64_t v = arrow_cells::at<std::int64_t>(a, i);
      std::int64_t seconds = v / s.per_second;
      std::int64_t rest = v % s.per_second;
      if (s.special == Special::timestamp && rest < 0) {
        --seconds;
        rest += s.per_second;
      }
      const auto nanos = static_cast<std::int32_t>(rest * (1000000000 / s.per_second));
      const pb::Descriptor& d = *sub.GetDescriptor();
      const pb::Reflection& sr = *sub.GetReflection();
      sr.SetInt64(&sub, d.FindFieldByName("seconds"), seconds);
      sr.SetInt32(&sub, d.FindFieldByName("nanos"), nanos);
      return;
    }
  }
}

// A column's cell at `row` into its field: unset when null.
void put_field(pb::Message& m, const Step& s, std::int64_t row) {
  if (!arrow_cells::valid(*s.array, row)) return;
  if (s.field->is_map()) {
    const auto [b, e] = arrow_cells::range(*s.array, row, false);
    const ArrowArray& entries = *s.array->children[0];
    const pb::Reflection& r = *m.GetReflection();
    for (std::int64_t k = b; k < e; ++k) {
      const std::int64_t at = k + entries.offset;
      pb::Message& entry = *r.AddMessage(&m, s.field);
      if (!arrow_cells::valid(*s.children[0].array, at)) bad_value(s, "a map key is null");
      put(entry, s.children[0], at);
      if (arrow_cells::valid(*s.children[1].array, at)) put(entry, s.children[1], at);
    }
    return;
  }
  if (s.field->is_repeated()) {
    const auto [b, e] = arrow_cells::range(*s.array, row, s.in == In::large_list);
    for (std::int64_t k = b; k < e; ++k) {
      if (!arrow_cells::valid(*s.children[0].array, k))
        bad_value(s, fmt::format("element {} is null; a repeated field cannot hold null", k - b));
      put(m, s.children[0], k);
    }
    return;
  }
  put(m, s, row);
}

void fill(pb::Message& m, const std::vector<Step>& columns, std::int64_t row) {
  for (const Step& s : columns) put_field(m, s, row);
}

// Confluent's message indexes of `d`: its index in the file, then in each
// enclosing message; [0] is written as one 0 byte.
std::string message_indexes(const pb::Descriptor& d) {
  std::vector<int> path;
  for (const pb::Descriptor* p = &d; p; p = p->containing_type()) path.insert(path.begin(), p->index());
  auto zigzag = [](std::string& out, std::int64_t v) {
    std::uint64_t z = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
    while (z >= 0x80) {
      out.push_back(static_cast<char>((z & 0x7f) | 0x80));
      z >>= 7;
    }
    out.push_back(static_cast<char>(z));
  };
  std::string out;
  if (path.size() == 1 && path[0] == 0) return std::string(1, '\0');
  zigzag(out, static_cast<std::int64_t>(path.size()));
  for (int i : path) zigzag(out, i);
  return out;
}

bool built_in(const std::string& file) {
  return file.starts_with("google/protobuf/") || file.starts_with("confluent/");
}

// Registers `file` (base64 FileDescriptorProto) under `subject`, its imports
// first under their own names; returns the id, or looks it up.
std::int32_t register_file(client::SchemaRegistry& registry, const pb::FileDescriptor& file, const std::string& subject,
                           bool auto_register) {
  std::vector<client::SchemaReference> refs;
  for (int i = 0; i < file.dependency_count(); ++i) {
    const pb::FileDescriptor& dep = *file.dependency(i);
    if (built_in(dep.name())) continue;
    register_file(registry, dep, dep.name(), auto_register);
    refs.push_back({dep.name(), dep.name(), registry.latest(dep.name()).version});
  }
  pb::FileDescriptorProto proto;
  file.CopyTo(&proto);
  const std::string text = client::base64_encode(proto.SerializeAsString());
  return auto_register ? registry.register_schema(subject, text, "PROTOBUF", refs)
                       : registry.lookup_schema(subject, text, "PROTOBUF", refs);
}

}  // namespace

struct ProtobufValueWriter::Impl {
  ProtobufFormatOptions options;
  std::shared_ptr<client::SchemaRegistry> registry;
  std::unique_ptr<Pool> pool;
  const pb::Descriptor* message = nullptr;
  std::string message_name;
  std::string subject;
  std::int32_t id = -1;
  std::string header;  // magic, id, message indexes
  pb::DynamicMessageFactory factory;
  std::unique_ptr<pb::Message> scratch;
};

ProtobufValueWriter::ProtobufValueWriter(const ProtobufFormatOptions& options, const std::string& topic,
                                         std::shared_ptr<client::SchemaRegistry> registry)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.options = options;
  if (registry || options.registry.count("schema.registry.url")) {
    if (!options.subject && topic.empty())
      throw client::ConfigError("to_protobuf with a schema registry needs the topic or the subject option");
    m.subject = options.subject.value_or(topic + "-" + options.column);
    m.registry = registry
                     ? std::move(registry)
                     : client::make_schema_registry(client::SchemaRegistryConfig::from_properties(options.registry));
  } else if (options.use_latest_version) {
    throw client::ConfigError("use.latest.version needs schema.registry.url");
  }
  if (m.registry && (options.use_latest_version || !options.descriptor_set)) {
    const client::RegisteredSchema latest = m.registry->latest(m.subject);
    if (latest.schema_type != "PROTOBUF")
      throw ProtobufSchemaError(fmt::format("Protobuf schema: subject \"{}\" holds a {} schema, not Protobuf",
                                            m.subject, latest.schema_type));
    m.pool = registry_pool(*m.registry, latest);
    m.message = &m.pool->message(options.message_name.value_or(""));
    m.id = latest.id;
  } else if (options.descriptor_set) {
    if (!options.message_name) throw client::ConfigError("to_protobuf needs messageName with a descriptor set");
    m.pool = Pool::from_descriptor_set(*options.descriptor_set);
    m.message = &m.pool->message(*options.message_name);
    if (m.registry) m.id = register_file(*m.registry, *m.message->file(), m.subject, options.auto_register);
  } else {
    throw client::ConfigError(
        "to_protobuf needs a schema: descFilePath (or a descriptor set) and messageName, or schema.registry.url");
  }
  m.message_name = m.message->full_name();
  m.scratch.reset(m.factory.GetPrototype(m.message)->New());
  if (m.id >= 0) {
    m.header = client::confluent_header(m.id) + message_indexes(*m.message);
  }
}

ProtobufValueWriter::~ProtobufValueWriter() = default;
ProtobufValueWriter::ProtobufValueWriter(ProtobufValueWriter&&) noexcept = default;
ProtobufValueWriter& ProtobufValueWriter::operator=(ProtobufValueWriter&&) noexcept = default;

void ProtobufValueWriter::export_schema(ArrowSchema* out) { arrow_detail::export_value_schema(out); }

ArrowBatch ProtobufValueWriter::encode(const ArrowSchema& schema, const ArrowArray& batch) {
  Impl& m = *impl_;
  if (!schema.format || std::string_view(schema.format) != "+s" || schema.n_children != batch.n_children)
    throw ArrowRecordSchemaError("to_protobuf: the batch is not a struct of columns");
  const std::vector<Step> columns = compile_message(schema, batch, *m.message, "");
  arrow_detail::BinaryColumn values;
  std::string buf;
  for (std::int64_t row = 0; row < batch.length; ++row) {
    m.scratch->Clear();
    fill(*m.scratch, columns, row + batch.offset);
    if (!m.scratch->IsInitialized())
      throw ArrowRecordError(fmt::format("to_protobuf: row {}: a required field is missing: {}", row,
                                         m.scratch->InitializationErrorString()));
    buf = m.header;
    if (!m.scratch->AppendToString(&buf))
      throw ArrowRecordError(fmt::format("to_protobuf: row {} cannot be serialized", row));
    values.append(buf);
  }
  return arrow_detail::value_batch(std::move(values), batch.length);
}

const std::string& ProtobufValueWriter::message_name() const noexcept { return impl_->message_name; }
std::int32_t ProtobufValueWriter::schema_id() const noexcept { return impl_->id; }

}  // namespace kwire::source
