// JsonRowBuilder (the JSON lines `kwire produce --value-format avro|protobuf`
// encodes) on arbitrary Avro schemas and texts.
//
// Input: an Avro schema's JSON, a 0x00 byte, then the JSON text of one row
// (without a 0x00 the text is empty). The row shape is the one the Avro
// decoder gives the schema (Spark's types); a schema that does not parse, or
// a shape the builder does not take, ends the run. Only JsonRowError may come
// out of append(); a failed row leaves the builder as it was, a good one adds
// exactly one row, and the finished batch is as long as the rows kept.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "fuzz_common.hpp"
#include "kwire/source/avro.hpp"
#include "kwire/source/json_rows.hpp"

namespace {

using namespace kwire::source;

void append_checked(JsonRowBuilder& builder, std::string_view text, std::int64_t& rows) {
  try {
    builder.append(text);
    ++rows;
  } catch (const JsonRowError&) {
  }
  KWIRE_FUZZ_CHECK(builder.rows() == rows);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto* nul = static_cast<const std::uint8_t*>(std::memchr(data, 0, size));
  const std::size_t json_size = nul ? static_cast<std::size_t>(nul - data) : size;
  const std::string_view schema_json(reinterpret_cast<const char*>(data), json_size);
  const std::string_view text =
      nul ? std::string_view(reinterpret_cast<const char*>(nul + 1), size - json_size - 1) : std::string_view();

  std::optional<AvroSchema> schema;
  std::optional<AvroDecoder> decoder;
  try {
    schema = AvroSchema::parse(schema_json);
    decoder.emplace(*schema);
  } catch (const AvroSchemaError&) {
    return 0;
  }
  ArrowSchema shape;
  decoder->export_schema(&shape);
  std::optional<JsonRowBuilder> builder;
  try {
    builder.emplace(shape, !schema->is_record());
  } catch (const SchemaError&) {
    shape.release(&shape);
    return 0;
  }
  shape.release(&shape);

  std::int64_t rows = 0;
  append_checked(*builder, text, rows);
  // Cut short (a truncated line), then whole again: the builder keeps going.
  if (!text.empty()) append_checked(*builder, text.substr(0, text.size() - 1), rows);
  append_checked(*builder, text, rows);
  ArrowBatch batch = builder->finish();
  KWIRE_FUZZ_CHECK(batch.array().length == rows);
  KWIRE_FUZZ_CHECK(builder->rows() == 0);
  return 0;
}
