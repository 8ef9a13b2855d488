// ProtobufValueReader and ProtobufFormatOptions (protobuf.hpp).
#include <charconv>
#include <fstream>
#include <iterator>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <google/protobuf/dynamic_message.h>

#include "protobuf_detail.hpp"
#include "value_rows.hpp"

namespace kwire::source {

using namespace protobuf_detail;

namespace {

bool flag(const std::string& key, const std::string& value) {
  std::string lower;
  for (const char c : value) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "true") return true;
  if (lower == "false") return false;
  throw client::ConfigError(fmt::format("Protobuf option {}: \"{}\" is not true or false", key, value));
}

bool registry_key(std::string_view k) { return k.starts_with("schema.registry.") || k.starts_with("basic.auth."); }

// A varint of Confluent's message-index list (zigzag-encoded int).
std::optional<std::int64_t> read_zigzag(std::span<const std::uint8_t> b, std::size_t& at) {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= b.size()) return std::nullopt;
    const std::uint8_t byte = b[at++];
    v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }
  return std::nullopt;
}

}  // namespace

namespace protobuf_detail {

std::unique_ptr<Pool> registry_pool(client::SchemaRegistry& registry, const client::RegisteredSchema& s) {
  // The main file first, then its references (and theirs), fetched by subject and version.
  std::vector<std::pair<std::string, std::string>> files{{"main.proto", s.schema}};
  std::vector<client::SchemaReference> pending = s.references;
  std::set<std::string> seen;
  while (!pending.empty()) {
    const client::SchemaReference ref = pending.back();
    pending.pop_back();
    if (!seen.insert(ref.name).second || ref.name.starts_with("google/protobuf/")) continue;
    const client::RegisteredSchema r = registry.schema_version(ref.subject, ref.version);
    files.emplace_back(ref.name, r.schema);
    pending.insert(pending.end(), r.references.begin(), r.references.end());
  }
  return Pool::from_proto_texts(files);
}

}  // namespace protobuf_detail

std::optional<std::pair<std::vector<std::int32_t>, std::size_t>> confluent_message_indexes(
    std::span<const std::uint8_t> bytes) {
  std::size_t at = 0;
  const auto count = read_zigzag(bytes, at);
  if (!count || *count < 0 || *count > 100) return std::nullopt;
  std::vector<std::int32_t> indexes;
  if (*count == 0) return std::make_pair(std::vector<std::int32_t>{0}, at);
  for (std::int64_t i = 0; i < *count; ++i) {
    const auto v = read_zigzag(bytes, at);
    if (!v || *v < 0 || *v > INT32_MAX) return std::nullopt;
    indexes.push_back(static_cast<std::int32_t>(*v));
  }
  return std::make_pair(std::move(indexes), at);
}

ProtobufFormatOptions ProtobufFormatOptions::parse(const std::map<std::string, std::string>& options) {
  ProtobufFormatOptions o;
  for (const auto& [key, value] : options) {
    if (key == "mode") {
      std::string upper;
      for (const char c : value) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (upper != "PERMISSIVE" && upper != "FAILFAST")
        throw client::ConfigError(fmt::format(
            "Protobuf option mode: \"{}\" is not supported; from_protobuf takes PERMISSIVE or FAILFAST", value));
      o.permissive = upper == "PERMISSIVE";
    } else if (key == "messageName") {
      o.message_name = value;
    } else if (key == "descFilePath") {
      std::ifstream in(value, std::ios::binary);
      if (!in) throw client::ConfigError(fmt::format("Protobuf option descFilePath: cannot read {}", value));
      o.descriptor_set = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } else if (key == "emit.default.values") {
      o.emit_default_values = flag(key, value);
    } else if (key == "enums.as.ints") {
      o.enums_as_ints = flag(key, value);
    } else if (key == "upcast.unsigned.ints") {
      o.upcast_unsigned_ints = flag(key, value);
    } else if (key == "unwrap.primitive.wrapper.types") {
      o.unwrap_wrappers = flag(key, value);
    } else if (key == "retain.empty.message.types") {
      o.retain_empty_messages = flag(key, value);
    } else if (key == "recursive.fields.max.depth") {
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), o.recursive_max_depth);
      if (ec != std::errc() || end != value.data() + value.size() || value.empty())
        throw client::ConfigError(
            fmt::format("Protobuf option recursive.fields.max.depth: \"{}\" is not a number", value));
    } else if (key == "convert.any.fields.to.json") {
      o.convert_any_to_json = flag(key, value);
    } else if (key == "subject") {
      o.subject = value;
    } else if (key == "auto.register.schemas") {
      o.auto_register = flag(key, value);
    } else if (key == "use.latest.version") {
      o.use_latest_version = flag(key, value);
    } else if (key == "column") {
      o.column = value_rows::parse_column("Protobuf", value);
    } else if (registry_key(key)) {
      o.registry[key] = value;
    } else {
      throw client::ConfigError(fmt::format(
          "Protobuf option \"{}\" is not known (mode, messageName, descFilePath, emit.default.values, enums.as.ints, "
          "upcast.unsigned.ints, unwrap.primitive.wrapper.types, retain.empty.message.types, "
          "recursive.fields.max.depth, convert.any.fields.to.json, subject, auto.register.schemas, use.latest.version, "
          "column, "
          "schema.registry.*, basic.auth.*)",
          key));
    }
  }
  return o;
}

struct ProtobufValueReader::Impl {
  ProtobufFormatOptions options;
  std::shared_ptr<client::SchemaRegistry> registry;
  std::unique_ptr<Pool> pool;
  const google::protobuf::Descriptor* message = nullptr;
  std::string message_name;
  google::protobuf::DynamicMessageFactory factory;
  std::unique_ptr<google::protobuf::Message> scratch;
  Node plan;
  Col root;
  std::vector<Col*> cols;
  std::vector<avro_detail::Mark> marks;
  value_rows::MalformedValues bad{false, "Protobuf"};
  // Registry: per schema id and index list, "" when the message is the reader's, else why not.
  std::map<std::pair<std::int32_t, std::vector<std::int32_t>>, std::string> checked;
  std::unordered_map<std::int32_t, std::unique_ptr<Pool>> writers;

  std::unique_ptr<Pool> pool_of(const client::RegisteredSchema& s) { return registry_pool(*registry, s); }

  // "" when schema `id` at `indexes` is the reader's message, else the reason.
  const std::string& check(std::int32_t id, const std::vector<std::int32_t>& indexes) {
    auto key = std::make_pair(id, indexes);
    if (auto it = checked.find(key); it != checked.end()) return it->second;
    std::string why;
    try {
      auto w = writers.find(id);
      if (w == writers.end()) {
        const client::RegisteredSchema s = registry->schema_by_id(id);
        if (s.schema_type != "PROTOBUF") {
          why = fmt::format("schema id {} is a {} schema, not Protobuf", id, s.schema_type);
        } else {
          w = writers.emplace(id, pool_of(s)).first;
        }
      }
      if (why.empty()) {
        const google::protobuf::Descriptor* d = w->second->message_at(indexes);
        if (!d) why = fmt::format("schema id {} has no message at the indexes of the value", id);
        else if (d->full_name() != message->full_name())
          why = fmt::format("the value is a {} (schema id {}), not the reader's {}", d->full_name(), id,
                            message->full_name());
      }
    } catch (const client::SchemaRegistryError& e) {
      if (e.error_code() != 40403) throw;  // Confluent's "schema not found"
      why = fmt::format("schema id {} is not in the registry ({})", id, e.what());
    }
    return checked.emplace(std::move(key), std::move(why)).first->second;
  }
};

ProtobufValueReader::ProtobufValueReader(const ProtobufFormatOptions& options, const std::string& topic,
                                         std::shared_ptr<client::SchemaRegistry> registry)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.options = options;
  m.bad = value_rows::MalformedValues(options.permissive, "Protobuf");
  const bool with_registry = registry || options.registry.count("schema.registry.url");
  if (with_registry) {
    m.registry = registry
                     ? std::move(registry)
                     : client::make_schema_registry(client::SchemaRegistryConfig::from_properties(options.registry));
  }
  if (options.descriptor_set) {
    if (!options.message_name) throw client::ConfigError("from_protobuf needs messageName with a descriptor set");
    m.pool = Pool::from_descriptor_set(*options.descriptor_set);
    m.message = &m.pool->message(*options.message_name);
  } else if (m.registry) {
    const std::string subject = options.subject.value_or(topic + "-" + options.column);
    if (!options.subject && topic.empty())
      throw client::ConfigError("from_protobuf with a schema registry needs the topic or the subject option");
    const client::RegisteredSchema latest = m.registry->latest(subject);
    if (latest.schema_type != "PROTOBUF")
      throw ProtobufSchemaError(
          fmt::format("Protobuf schema: subject \"{}\" holds a {} schema, not Protobuf", subject, latest.schema_type));
    m.pool = m.pool_of(latest);
    m.message = &m.pool->message(options.message_name.value_or(""));
  } else {
    throw client::ConfigError(
        "Protobuf values need a schema: descFilePath (or a descriptor set) and messageName, or schema.registry.url");
  }
  m.message_name = m.message->full_name();
  m.scratch.reset(m.factory.GetPrototype(m.message)->New());
  m.plan = plan_message(*m.message, options, &m.root);
  avro_detail::collect(m.root, m.cols);
}

ProtobufValueReader::~ProtobufValueReader() = default;
ProtobufValueReader::ProtobufValueReader(ProtobufValueReader&&) noexcept = default;
ProtobufValueReader& ProtobufValueReader::operator=(ProtobufValueReader&&) noexcept = default;

void ProtobufValueReader::append(std::optional<std::span<const std::uint8_t>> value, std::string_view topic,
                                 std::int32_t partition, std::int64_t offset) {
  Impl& m = *impl_;
  // A malformed value: a row of nulls (PERMISSIVE); a tombstone: a null row,
  // as from_protobuf gives null for a null input.
  auto null_row = [&](bool tombstone = false) {
    for (Col& c : m.root.children) c.append_null();
    m.root.valid(!tombstone);
  };
  if (!value) return null_row(true);
  std::span<const std::uint8_t> payload = *value;
  std::string why;
  if (m.registry) {
    const auto id = client::confluent_schema_id(payload);
    if (!id) {
      why = payload.empty() ? "an empty value has no Confluent header (magic byte 0 and a schema id)"
                            : fmt::format("magic byte {} is not Confluent's 0 (or the value is shorter than 5 bytes)",
                                          static_cast<int>(payload[0]));
    } else {
      const auto indexes = confluent_message_indexes(payload.subspan(5));
      if (!indexes) {
        why = "the message indexes after the schema id are malformed";
      } else {
        why = m.check(*id, indexes->first);
        payload = payload.subspan(5 + indexes->second);
      }
    }
  }
  if (why.empty()) {
    m.scratch->Clear();
    if (!m.scratch->ParsePartialFromArray(payload.data(), static_cast<int>(payload.size()))) {
      why = "the bytes do not parse as " + m.message_name;
    } else if (!m.scratch->IsInitialized()) {
      why = "a required field is missing: " + m.scratch->InitializationErrorString();
    }
  }
  if (why.empty()) {
    avro_detail::save(m.cols, m.marks);
    try {
      put_row(m.plan, m.root, *m.scratch, m.options.emit_default_values);
      return;
    } catch (const ArrowError&) {
      avro_detail::restore(m.marks);
      throw;
    } catch (const ValueOutOfRange& e) {
      avro_detail::restore(m.marks);
      why = e.why;
    }
  }
  null_row();
  m.bad.report(why, topic, partition, offset);
}

void ProtobufValueReader::append_batch(const ArrowSchema& schema, const ArrowArray& batch) {
  value_rows::for_each_value(schema, batch, "from_protobuf", impl_->options.column,
                             [&](auto value, std::string_view topic, std::int32_t partition, std::int64_t offset) {
                               append(value, topic, partition, offset);
                             });
}

std::int64_t ProtobufValueReader::malformed() const noexcept { return impl_->bad.count(); }
const std::string& ProtobufValueReader::first_malformed() const noexcept { return impl_->bad.first(); }
void ProtobufValueReader::mark_malformed() noexcept { impl_->bad.mark(); }
const std::string& ProtobufValueReader::message_name() const noexcept { return impl_->message_name; }
std::int64_t ProtobufValueReader::rows() const noexcept { return impl_->root.length; }
std::size_t ProtobufValueReader::bytes() const noexcept { return impl_->root.bytes(); }
void ProtobufValueReader::export_schema(ArrowSchema* out) const {
  arrow_detail::export_field(impl_->root.field(), out);
}

ArrowBatch ProtobufValueReader::finish() {
  ArrowBatch batch;
  arrow_detail::export_array(impl_->root.take(), &batch.array());
  return batch;
}

}  // namespace kwire::source
