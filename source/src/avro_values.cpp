// AvroValueReader and AvroFormatOptions (avro.hpp): plain Avro or Confluent's
// wire format with a registry, Spark's modes, errors naming the record.
#include <unordered_map>

#include <fmt/format.h>

#include "avro_schema.hpp"
#include "kwire/source/arrow_records.hpp"
#include "kwire/source/avro.hpp"
#include "value_rows.hpp"

namespace kwire::source {

namespace {

bool registry_key(std::string_view k) { return k.starts_with("schema.registry.") || k.starts_with("basic.auth."); }

std::optional<std::string> union_prefix(const AvroFormatOptions& o) {
  return o.stable_union_ids ? std::optional<std::string>(o.union_prefix) : std::nullopt;
}

}  // namespace

AvroFormatOptions AvroFormatOptions::parse(const std::map<std::string, std::string>& options) {
  AvroFormatOptions o;
  for (const auto& [key, value] : options) {
    if (key == "mode") {
      std::string upper;
      for (const char c : value) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (upper == "PERMISSIVE") {
        o.permissive = true;
      } else if (upper == "FAILFAST") {
        o.permissive = false;
      } else {
        throw client::ConfigError(
            fmt::format("Avro option mode: \"{}\" is not supported; from_avro takes PERMISSIVE or FAILFAST", value));
      }
    } else if (key == "jsonFormatSchema") {
      o.json_format_schema = value;
    } else if (key == "avroSchema") {
      o.avro_schema = value;
    } else if (key == "subject") {
      o.subject = value;
    } else if (key == "auto.register.schemas" || key == "use.latest.version") {
      std::string lower;
      for (const char c : value) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower != "true" && lower != "false")
        throw client::ConfigError(fmt::format("Avro option {}: \"{}\" is not true or false", key, value));
      (key == "auto.register.schemas" ? o.auto_register : o.use_latest_version) = lower == "true";
    } else if (key == "column") {
      o.column = value_rows::parse_column("Avro", value);
    } else if (key == "enableStableIdentifiersForUnionType") {
      std::string lower;
      for (const char c : value) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower != "true" && lower != "false")
        throw client::ConfigError(fmt::format("Avro option {}: \"{}\" is not true or false", key, value));
      o.stable_union_ids = lower == "true";
    } else if (key == "stableIdentifierPrefixForUnionType") {
      o.union_prefix = value;
    } else if (registry_key(key)) {
      o.registry[key] = value;
    } else {
      throw client::ConfigError(fmt::format(
          "Avro option \"{}\" is not known (mode, jsonFormatSchema, avroSchema, subject, auto.register.schemas, "
          "use.latest.version, column, enableStableIdentifiersForUnionType, stableIdentifierPrefixForUnionType, "
          "schema.registry.*, basic.auth.*)",
          key));
    }
  }
  return o;
}

struct AvroValueReader::Impl {
  std::shared_ptr<client::SchemaRegistry> registry;  // null for plain Avro
  std::optional<AvroDecoder> decoder;
  std::string reader_json;
  bool permissive = false;
  int plain_writer = 0;                                   // plain Avro: the writer's handle
  std::unordered_map<std::int32_t, int> writer_of;        // registry: schema id -> writer handle
  std::unordered_map<std::int32_t, std::string> missing;  // ids the registry does not have
  value_rows::MalformedValues bad{false, "Avro"};
  std::string why;
  std::string column = "value";  // the Kafka column append_batch reads
};

AvroValueReader::AvroValueReader(const AvroFormatOptions& options, const std::string& topic,
                                 std::shared_ptr<client::SchemaRegistry> registry)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.permissive = options.permissive;
  m.column = options.column;
  m.bad = value_rows::MalformedValues(options.permissive, "Avro");
  if (!options.json_format_schema && !options.registry.count("schema.registry.url") && !registry)
    throw client::ConfigError(
        "Avro values need a schema: jsonFormatSchema (plain Avro) or schema.registry.url (Confluent's wire format)");
  if (options.json_format_schema && options.registry.count("schema.registry.url"))
    throw client::ConfigError(
        "Avro values: give jsonFormatSchema (plain Avro) or schema.registry.url (Confluent's wire format), not both");
  if (options.json_format_schema && !registry) {
    const AvroSchema writer = AvroSchema::parse(*options.json_format_schema);
    const AvroSchema reader = options.avro_schema ? AvroSchema::parse(*options.avro_schema) : writer;
    m.reader_json = reader.json();
    m.decoder.emplace(reader, union_prefix(options));
    if (options.avro_schema) m.plain_writer = m.decoder->add_writer(writer);
    return;
  }
  m.registry = registry ? std::move(registry)
                        : client::make_schema_registry(client::SchemaRegistryConfig::from_properties(options.registry));
  if (options.avro_schema) {
    m.reader_json = *options.avro_schema;
  } else {
    const std::string subject = options.subject.value_or(topic + "-" + options.column);
    const client::RegisteredSchema latest = m.registry->latest(subject);
    if (latest.schema_type != "AVRO")
      throw AvroSchemaError(fmt::format("subject \"{}\" holds a {} schema, not Avro", subject, latest.schema_type));
    m.reader_json = latest.schema;
  }
  m.decoder.emplace(AvroSchema::parse(m.reader_json), union_prefix(options));
}

AvroValueReader::~AvroValueReader() = default;
AvroValueReader::AvroValueReader(AvroValueReader&&) noexcept = default;
AvroValueReader& AvroValueReader::operator=(AvroValueReader&&) noexcept = default;

void AvroValueReader::append(std::optional<std::span<const std::uint8_t>> value, std::string_view topic,
                             std::int32_t partition, std::int64_t offset) {
  Impl& m = *impl_;
  bool ok = true;
  m.why.clear();
  if (!value) {
    m.decoder->append(std::nullopt);  // a tombstone: a null row, not malformed
    return;
  }
  if (!m.registry) {
    ok = m.decoder->append(value, m.plain_writer, &m.why);
  } else if (auto id = client::confluent_schema_id(*value)) {
    auto it = m.writer_of.find(*id);
    if (it == m.writer_of.end() && !m.missing.count(*id)) {
      try {
        const client::RegisteredSchema s = m.registry->schema_by_id(*id);
        if (s.schema_type != "AVRO") {
          m.missing[*id] = fmt::format("schema id {} is a {} schema, not Avro", *id, s.schema_type);
        } else {
          it = m.writer_of.emplace(*id, m.decoder->add_writer(AvroSchema::parse(s.schema))).first;
        }
      } catch (const client::SchemaRegistryError& e) {
        if (e.error_code() != 40403) throw;  // Confluent's "schema not found"; any other failure is the registry's
        m.missing[*id] = fmt::format("schema id {} is not in the registry ({})", *id, e.what());
      }
    }
    if (it != m.writer_of.end()) {
      ok = m.decoder->append(value->subspan(5), it->second, &m.why);
    } else {
      ok = false;
      m.why = m.missing[*id];
      m.decoder->append_null();
    }
  } else {
    ok = false;
    m.why = value->empty() ? "an empty value has no Confluent header (magic byte 0 and a schema id)"
                           : fmt::format("magic byte {} is not Confluent's 0 (or the value is shorter than 5 bytes)",
                                         static_cast<int>((*value)[0]));
    m.decoder->append_null();
  }
  if (ok) return;
  m.bad.report(m.why, topic, partition, offset);
}

void AvroValueReader::append_batch(const ArrowSchema& schema, const ArrowArray& batch) {
  value_rows::for_each_value(schema, batch, "from_avro", impl_->column,
                             [&](auto value, std::string_view topic, std::int32_t partition, std::int64_t offset) {
                               append(value, topic, partition, offset);
                             });
}

std::vector<std::string> avro_uuid_columns(const AvroSchema& schema) {
  using avro_detail::Logical;
  using avro_detail::Type;
  std::vector<std::string> out;
  const avro_detail::Node& root = *schema.tree().root;
  if (root.type != Type::record) return out;
  for (const avro_detail::Field& f : root.fields) {
    const avro_detail::Node* t = f.type;
    if (t->type == Type::union_) {
      const avro_detail::Node* only = nullptr;
      int non_null = 0;
      for (const avro_detail::Node* b : t->branches)
        if (b->type != Type::null) only = b, ++non_null;
      if (non_null == 1) t = only;
    }
    if (t->type == Type::string && t->logical == Logical::uuid) out.push_back(f.name);
  }
  return out;
}

std::int64_t AvroValueReader::malformed() const noexcept { return impl_->bad.count(); }
const std::string& AvroValueReader::first_malformed() const noexcept { return impl_->bad.first(); }
void AvroValueReader::mark_malformed() noexcept { impl_->bad.mark(); }
const std::string& AvroValueReader::reader_schema() const noexcept { return impl_->reader_json; }
std::int64_t AvroValueReader::rows() const noexcept { return impl_->decoder->rows(); }
std::size_t AvroValueReader::bytes() const noexcept { return impl_->decoder->bytes(); }
void AvroValueReader::export_schema(ArrowSchema* out) const { impl_->decoder->export_schema(out); }
ArrowBatch AvroValueReader::finish() { return impl_->decoder->finish(); }

}  // namespace kwire::source

namespace kwire::source {

struct AvroValueWriter::Impl {
  AvroFormatOptions options;
  std::string subject;
  std::shared_ptr<client::SchemaRegistry> registry;
  std::optional<AvroEncoder> encoder;
  std::string writer_json;
  std::int32_t id = -1;
  std::vector<std::uint8_t> header;
};

AvroValueWriter::AvroValueWriter(const AvroFormatOptions& options, const std::string& topic,
                                 std::shared_ptr<client::SchemaRegistry> registry)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.options = options;
  const bool with_registry = registry || options.registry.count("schema.registry.url");
  if (with_registry) {
    if (!options.subject && topic.empty())
      throw client::ConfigError("to_avro with a schema registry needs the topic or the subject option");
    m.subject = options.subject.value_or(topic + "-" + options.column);
    m.registry = registry
                     ? std::move(registry)
                     : client::make_schema_registry(client::SchemaRegistryConfig::from_properties(options.registry));
  } else if (options.use_latest_version) {
    throw client::ConfigError("use.latest.version needs schema.registry.url");
  }
  if (options.json_format_schema) {
    m.writer_json = *options.json_format_schema;
    m.encoder.emplace(AvroSchema::parse(m.writer_json));
  }
}

AvroValueWriter::~AvroValueWriter() = default;
AvroValueWriter::AvroValueWriter(AvroValueWriter&&) noexcept = default;
AvroValueWriter& AvroValueWriter::operator=(AvroValueWriter&&) noexcept = default;

ArrowBatch AvroValueWriter::encode(const ArrowSchema& schema, const ArrowArray& batch) {
  Impl& m = *impl_;
  if (m.registry && m.id < 0) {
    if (m.options.use_latest_version) {
      const client::RegisteredSchema latest = m.registry->latest(m.subject);
      if (latest.schema_type != "AVRO")
        throw AvroSchemaError(fmt::format("subject \"{}\" holds a {} schema, not Avro", m.subject, latest.schema_type));
      m.writer_json = latest.schema;
      m.id = latest.id;
      m.encoder.emplace(AvroSchema::parse(m.writer_json));
    } else {
      if (!m.encoder) {
        m.writer_json = avro_schema_of(schema);
        m.encoder.emplace(AvroSchema::parse(m.writer_json));
      }
      m.id = m.options.auto_register ? m.registry->register_schema(m.subject, m.writer_json)
                                     : m.registry->lookup_schema(m.subject, m.writer_json);
    }
    const std::string header = client::confluent_header(m.id);
    m.header.assign(header.begin(), header.end());
  }
  if (!m.encoder) {
    m.writer_json = avro_schema_of(schema);
    m.encoder.emplace(AvroSchema::parse(m.writer_json));
  }
  return m.encoder->encode(schema, batch, m.header);
}

const std::string& AvroValueWriter::writer_schema() const noexcept { return impl_->writer_json; }
std::int32_t AvroValueWriter::schema_id() const noexcept { return impl_->id; }

}  // namespace kwire::source
