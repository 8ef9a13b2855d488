// LineEncoder (line_encoder.hpp): a line's JSON -> one Arrow row of the
// writer schema's Spark shape (JsonRowBuilder) -> AvroValueWriter or
// ProtobufValueWriter.
#include "line_encoder.hpp"

#include <stdexcept>
#include <variant>

#include <fmt/format.h>

#include "commands.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/schema_registry.hpp"
#include "kwire/source/arrow_records.hpp"
#include "kwire/source/avro.hpp"
#include "kwire/source/json_rows.hpp"
#include "kwire/source/protobuf.hpp"

namespace kwire::tools {

using namespace kwire::source;

namespace {

// An exported schema, released with its owner.
struct OwnedSchema {
  ArrowSchema schema{};
  OwnedSchema() = default;
  OwnedSchema(const OwnedSchema&) = delete;
  OwnedSchema& operator=(const OwnedSchema&) = delete;
  ~OwnedSchema() {
    if (schema.release) schema.release(&schema);
  }
};

// The encoders' messages name the column as `to_avro: column "x"...`; a
// line's error says `field "x"...`.
std::string field_message(const std::string& what) {
  for (const char* prefix : {"to_avro: column ", "to_protobuf: column "})
    if (what.starts_with(prefix)) return "field " + what.substr(std::string_view(prefix).size());
  for (const char* prefix : {"to_avro: ", "to_protobuf: "})
    if (what.starts_with(prefix)) return what.substr(std::string_view(prefix).size());
  return what;
}

}  // namespace

struct LineEncoder::Impl {
  std::string column;
  OwnedSchema shape;
  std::unique_ptr<JsonRowBuilder> rows;
  std::variant<std::monostate, AvroValueWriter, ProtobufValueWriter> writer;

  ArrowBatch encode(const ArrowArray& batch) {
    if (auto* a = std::get_if<AvroValueWriter>(&writer)) return a->encode(shape.schema, batch);
    return std::get<ProtobufValueWriter>(writer).encode(shape.schema, batch);
  }
};

LineEncoder::LineEncoder(const LineFormatArgs& args, const std::string& topic) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.column = args.column;
  auto opts = format_options(args.options, args.registry, args.option_flag);
  if (opts.count("column"))
    throw std::invalid_argument(
        fmt::format("{} column=...: the column is the {} (--{}-format)", args.option_flag, args.column, args.column));
  opts["column"] = args.column;
  std::shared_ptr<client::SchemaRegistry> registry;
  if (args.format == "avro") {
    if (args.schema) opts["jsonFormatSchema"] = read_schema_arg(*args.schema, args.schema_flag);
    const AvroFormatOptions o = AvroFormatOptions::parse(opts);
    if (o.registry.count("schema.registry.url"))
      registry = client::make_schema_registry(client::SchemaRegistryConfig::from_properties(o.registry));
    std::optional<AvroSchema> schema;
    if (o.use_latest_version) {
      if (!registry) throw client::ConfigError("use.latest.version needs the schema registry (-r URL)");
      const std::string subject = o.subject.value_or(topic + "-" + args.column);
      const client::RegisteredSchema latest = registry->latest(subject);
      if (latest.schema_type != "AVRO")
        throw AvroSchemaError(fmt::format("subject \"{}\" holds a {} schema, not Avro", subject, latest.schema_type));
      schema = AvroSchema::parse(latest.schema);
    } else if (o.json_format_schema) {
      schema = AvroSchema::parse(*o.json_format_schema);
    } else {
      throw std::invalid_argument(
          fmt::format("--{}-format avro needs {} (the writer's Avro schema, JSON or @FILE), or -r URL with {} "
                      "use.latest.version=true",
                      args.column, args.schema_flag, args.option_flag));
    }
    AvroDecoder(*schema).export_schema(&m.shape.schema);
    m.rows = std::make_unique<JsonRowBuilder>(m.shape.schema, !schema->is_record());
    m.writer.emplace<AvroValueWriter>(o, topic, registry);
  } else if (args.format == "protobuf") {
    if (args.schema)
      throw std::invalid_argument(
          fmt::format("--{}-format protobuf takes {} messageName=NAME and {} descFilePath=FILE (or -r URL), not {}",
                      args.column, args.option_flag, args.option_flag, args.schema_flag));
    const ProtobufFormatOptions o = ProtobufFormatOptions::parse(opts);
    if (o.registry.count("schema.registry.url"))
      registry = client::make_schema_registry(client::SchemaRegistryConfig::from_properties(o.registry));
    if (!o.use_latest_version && !o.descriptor_set)
      throw std::invalid_argument(
          fmt::format("--{}-format protobuf needs {} descFilePath=FILE and messageName=NAME, or -r URL with {} "
                      "use.latest.version=true",
                      args.column, args.option_flag, args.option_flag));
    // The shape of the message written: the descriptor set's, or the subject's latest.
    ProtobufFormatOptions shape_options = o;
    if (o.use_latest_version) shape_options.descriptor_set.reset();
    ProtobufValueReader(shape_options, topic, o.use_latest_version ? registry : nullptr).export_schema(&m.shape.schema);
    m.rows = std::make_unique<JsonRowBuilder>(m.shape.schema);
    m.writer.emplace<ProtobufValueWriter>(o, topic, registry);
  } else {
    throw std::invalid_argument(
        fmt::format("--{}-format {}: expected raw, avro or protobuf", args.column, args.format));
  }
}

LineEncoder::~LineEncoder() = default;
LineEncoder::LineEncoder(LineEncoder&&) noexcept = default;
LineEncoder& LineEncoder::operator=(LineEncoder&&) noexcept = default;

protocol::Bytes LineEncoder::encode(std::string_view line, std::uint64_t line_no) {
  Impl& m = *impl_;
  ArrowBatch encoded;
  try {
    m.rows->append(line);
    ArrowBatch row = m.rows->finish();
    encoded = m.encode(row.array());
  } catch (const JsonRowError& e) {
    throw std::invalid_argument(fmt::format("line {}: {} {}", line_no, m.column, e.what()));
  } catch (const ArrowRecordError& e) {
    throw std::invalid_argument(fmt::format("line {}: {} {}", line_no, m.column, field_message(e.what())));
  } catch (const SchemaError& e) {
    throw std::invalid_argument(fmt::format("line {}: {} {}", line_no, m.column, field_message(e.what())));
  }
  const ArrowArray& values = *encoded.array().children[0];
  const auto* offsets = static_cast<const std::int32_t*>(values.buffers[1]);
  const auto* data = static_cast<const std::uint8_t*>(values.buffers[2]);
  return protocol::Bytes(data + offsets[values.offset], data + offsets[values.offset + 1]);
}

}  // namespace kwire::tools
