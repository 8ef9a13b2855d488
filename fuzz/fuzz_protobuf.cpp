// ProtobufValueReader on arbitrary schemas and values.
//
// Input: a .proto file's text, a 0x00 byte, then the value's bytes (without
// a 0x00 the value is empty). The text is parsed with libprotoc into a
// descriptor set; a text that does not parse or build is skipped (only
// ProtobufSchemaError may come out of the reader's constructor: a recursive
// message, ...). The value is read as the file's first message, plainly and
// in Confluent's wire format through a registry that knows the text as
// schema id 1, under PERMISSIVE (a malformed value is a row of nulls) and
// FAILFAST (only AvroDecodeError may come out); the batches must hold as many
// rows as were appended.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "fuzz_common.hpp"
#include "kwire/source/protobuf.hpp"

namespace {

using namespace kwire;

class Quiet : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, int, const std::string&) override {}
};

// A registry holding one Protobuf schema, id 1, subject "t-value".
class OneSchema : public client::SchemaRegistry {
 public:
  explicit OneSchema(std::string text) : text_(std::move(text)) {}
  client::RegisteredSchema schema_by_id(std::int32_t id) override {
    if (id != 1) throw client::SchemaRegistryError("not found", 404, 40403);
    return schema();
  }
  client::RegisteredSchema latest(const std::string&) override { return schema(); }
  std::int32_t register_schema(const std::string&, const std::string&, const std::string&,
                               const std::vector<client::SchemaReference>&) override {
    return 1;
  }

 private:
  client::RegisteredSchema schema() const {
    client::RegisteredSchema s;
    s.id = 1;
    s.version = 1;
    s.subject = "t-value";
    s.schema = text_;
    s.schema_type = "PROTOBUF";
    return s;
  }
  std::string text_;
};

void read_rows(source::ProtobufValueReader& reader, std::span<const std::uint8_t> value) {
  reader.append(value, "t", 0, 0);
  reader.append(std::nullopt, "t", 0, 1);
  reader.append(value.subspan(0, value.size() / 2), "t", 0, 2);
  KWIRE_FUZZ_CHECK(reader.rows() == 3);
  ArrowSchema schema;
  reader.export_schema(&schema);
  source::ArrowBatch batch = reader.finish();
  KWIRE_FUZZ_CHECK(batch.array().length == 3);
  KWIRE_FUZZ_CHECK(batch.array().n_children == schema.n_children);
  for (std::int64_t i = 0; i < batch.array().n_children; ++i) KWIRE_FUZZ_CHECK(batch.array().children[i]->length == 3);
  schema.release(&schema);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto* nul = static_cast<const std::uint8_t*>(std::memchr(data, 0, size));
  const std::size_t text_size = nul ? static_cast<std::size_t>(nul - data) : size;
  const std::string text(reinterpret_cast<const char*>(data), text_size);
  const std::span<const std::uint8_t> value(nul ? nul + 1 : data + size, nul ? size - text_size - 1 : 0);

  google::protobuf::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  Quiet quiet;
  google::protobuf::io::Tokenizer tokenizer(&input, &quiet);
  google::protobuf::compiler::Parser parser;
  parser.RecordErrorsTo(&quiet);
  google::protobuf::FileDescriptorProto file;
  if (!parser.Parse(&tokenizer, &file) || file.message_type_size() == 0) return 0;
  file.set_name("fuzz.proto");
  google::protobuf::FileDescriptorSet set;
  *set.add_file() = file;

  source::ProtobufFormatOptions options;
  options.permissive = true;
  options.message_name = file.message_type(0).name();
  options.descriptor_set = set.SerializeAsString();
  try {
    source::ProtobufValueReader plain(options, "t");
    read_rows(plain, value);
  } catch (const source::ProtobufSchemaError&) {
    return 0;  // e.g. a recursive message, an import that is not there
  }

  // Confluent's wire format: magic byte, id 1, then the bytes (whose first
  // ones are read as the message indexes).
  std::vector<std::uint8_t> framed{0, 0, 0, 0, 1};
  framed.insert(framed.end(), value.begin(), value.end());
  source::ProtobufFormatOptions registry_options = options;
  registry_options.descriptor_set.reset();
  try {
    source::ProtobufValueReader framed_reader(registry_options, "t", std::make_shared<OneSchema>(text));
    read_rows(framed_reader, framed);
  } catch (const source::ProtobufSchemaError&) {
  }

  options.permissive = false;
  try {
    source::ProtobufValueReader strict(options, "t");
    strict.append(value, "t", 0, 0);
    KWIRE_FUZZ_CHECK(strict.rows() == 1);
  } catch (const source::AvroDecodeError& e) {
    KWIRE_FUZZ_CHECK(e.offset() == 0);
  } catch (const source::ProtobufSchemaError&) {
  }
  return 0;
}
