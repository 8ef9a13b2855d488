// AvroSchema::parse and AvroDecoder on arbitrary schemas and values.
//
// Input: the schema's JSON, a 0x00 byte, then the value's Avro binary bytes
// (JSON text never holds a raw 0x00; without one the whole input is the
// schema and the value is empty). Only AvroSchemaError may come out of
// parsing or of AvroDecoder's constructor (a type Spark has none for, never a
// schema that does not resolve against itself); a parsed schema always
// resolves against itself as a writer. The value is appended as written with
// the reader schema (writer 0), with the same schema added as a writer (both
// must agree), cut short by one byte, and as a tombstone; the batch's arrays
// must be as long as the rows appended, their offsets within their children,
// and only the tombstone's row null.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "fuzz_common.hpp"
#include "kwire/source/avro.hpp"

namespace {

using namespace kwire::source;

std::int32_t offset_at(const ArrowArray& a, std::int64_t i) {
  std::int32_t v;
  std::memcpy(&v, static_cast<const std::uint8_t*>(a.buffers[1]) + i * 4, 4);
  return v;
}

// The structure of an exported array against its schema.
void check_array(const ArrowSchema& s, const ArrowArray& a) {
  KWIRE_FUZZ_CHECK(a.length >= 0 && a.offset == 0);
  KWIRE_FUZZ_CHECK(a.null_count >= 0 && a.null_count <= a.length);
  KWIRE_FUZZ_CHECK(s.n_children == a.n_children);
  const std::string_view f = s.format;
  if (f == "n") {
    KWIRE_FUZZ_CHECK(a.n_buffers == 0 && a.null_count == a.length);
    return;
  }
  KWIRE_FUZZ_CHECK(a.null_count == 0 || a.buffers[0] != nullptr);
  if (f == "+s") {
    for (std::int64_t c = 0; c < a.n_children; ++c) {
      KWIRE_FUZZ_CHECK(a.children[c]->length == a.length);
      check_array(*s.children[c], *a.children[c]);
    }
    return;
  }
  const bool list = f == "+l" || f == "+m";
  if (list || f == "z" || f == "u") {
    KWIRE_FUZZ_CHECK(a.n_buffers == (list ? 2 : 3));
    KWIRE_FUZZ_CHECK(offset_at(a, 0) == 0);
    for (std::int64_t i = 0; i < a.length; ++i) KWIRE_FUZZ_CHECK(offset_at(a, i) <= offset_at(a, i + 1));
    if (list) {
      KWIRE_FUZZ_CHECK(a.n_children == 1 && offset_at(a, a.length) == a.children[0]->length);
      check_array(*s.children[0], *a.children[0]);
    }
    return;
  }
  KWIRE_FUZZ_CHECK(a.n_buffers == 2 && a.n_children == 0);
}

// `tombstones`: the null rows appended (a null value is a null row; a
// malformed one a valid row of nulls).
void finish_and_check(AvroDecoder& decoder, std::int64_t rows, std::int64_t tombstones) {
  KWIRE_FUZZ_CHECK(decoder.rows() == rows);
  ArrowSchema schema;
  decoder.export_schema(&schema);
  ArrowBatch batch = decoder.finish();
  KWIRE_FUZZ_CHECK(batch.array().length == rows);
  KWIRE_FUZZ_CHECK(batch.array().null_count == tombstones);
  check_array(schema, batch.array());
  schema.release(&schema);
  KWIRE_FUZZ_CHECK(decoder.rows() == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto* nul = static_cast<const std::uint8_t*>(std::memchr(data, 0, size));
  const std::size_t json_size = nul ? static_cast<std::size_t>(nul - data) : size;
  const std::string_view json(reinterpret_cast<const char*>(data), json_size);
  const std::span<const std::uint8_t> value =
      nul ? std::span<const std::uint8_t>(nul + 1, size - json_size - 1) : std::span<const std::uint8_t>();

  std::optional<AvroSchema> schema;
  try {
    schema = AvroSchema::parse(json);
  } catch (const AvroSchemaError&) {
    return 0;
  }
  (void)schema->spark_type();
  std::optional<AvroDecoder> decoder;
  try {
    decoder.emplace(*schema);
  } catch (const AvroSchemaError& e) {
    // Only a type Spark has none for; the constructor resolves the schema
    // against itself, which must never fail.
    KWIRE_FUZZ_CHECK(std::string_view(e.what()).find("resolution") == std::string_view::npos);
    return 0;
  }
  int self = 0;
  try {
    self = decoder->add_writer(*schema);
  } catch (const AvroSchemaError&) {
    kwire::fuzz::finding("a schema does not resolve against itself");
  }

  std::string error, again;
  const bool ok = decoder->append(value, 0, &error);
  KWIRE_FUZZ_CHECK(ok == error.empty());
  KWIRE_FUZZ_CHECK(decoder->append(value, self, &again) == ok);
  KWIRE_FUZZ_CHECK(again == error);
  if (!value.empty()) (void)decoder->append(value.first(value.size() - 1), self, &error);
  else decoder->append_null();
  KWIRE_FUZZ_CHECK(decoder->append(std::nullopt, self, &error));
  finish_and_check(*decoder, 4, 1);

  // A new batch after finish().
  KWIRE_FUZZ_CHECK(decoder->append(value, 0, &again) == ok);
  finish_and_check(*decoder, 1, 0);
  return 0;
}
