// AvroValueReader: Confluent's wire format with a fake Schema Registry (writer
// ids resolved against the subject's latest schema, unknown ids, bad magic
// bytes, FAILFAST and PERMISSIVE), plain Avro; AvroFormatOptions; the
// registry's configuration and confluent_schema_id.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "avro_test_support.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/schema_registry.hpp"

namespace {

using namespace kwire_avro_test;
using kwire::client::ConfigError;
using kwire::client::RegisteredSchema;
using kwire::client::SchemaRegistryConfig;
using kwire::client::SchemaRegistryError;
using kwire::source::AvroDecodeError;
using kwire::source::AvroFormatOptions;
using kwire::source::AvroValueReader;

// ---- AvroValueReader with a fake registry ----

class FakeRegistry : public kwire::client::SchemaRegistry {
 public:
  std::map<std::int32_t, std::string> schemas;
  std::map<std::string, std::int32_t> latest_ids;
  std::map<std::int32_t, int> id_calls;
  std::vector<std::string> subjects_asked;
  int failure_status = 404;

  RegisteredSchema schema_by_id(std::int32_t id) override {
    ++id_calls[id];
    auto it = schemas.find(id);
    if (it == schemas.end())
      throw SchemaRegistryError("Schema " + std::to_string(id) + " not found", failure_status,
                                failure_status == 404 ? 40403 : 50001);
    RegisteredSchema found;
    found.id = id;
    found.schema = it->second;
    return found;
  }
  RegisteredSchema latest(const std::string& subject) override {
    subjects_asked.push_back(subject);
    auto it = latest_ids.find(subject);
    if (it == latest_ids.end()) throw SchemaRegistryError("Subject not found", 404, 40401);
    RegisteredSchema found;
    found.id = it->second;
    found.version = 3;
    found.subject = subject;
    found.schema = schemas.at(it->second);
    return found;
  }
  std::int32_t register_schema(const std::string&, const std::string&, const std::string&,
                               const std::vector<kwire::client::SchemaReference>&) override {
    throw SchemaRegistryError("read-only", 405, 0);
  }
};

const std::string kOrderV1 = R"({"type": "record", "name": "Order", "fields": [
  {"name": "id", "type": "int"}, {"name": "item", "type": "string"}]})";
const std::string kOrderV2 = R"({"type": "record", "name": "Order", "fields": [
  {"name": "id", "type": "long"}, {"name": "item", "type": "string"}, {"name": "qty", "type": "long", "default": 1}]})";

Bytes framed(std::int32_t id, const Bytes& avro) {
  const auto u = static_cast<std::uint32_t>(id);
  Bytes out(5 + avro.size(), 0);  // magic byte 0, the id big-endian, the value
  for (int k = 0; k < 4; ++k) out[static_cast<std::size_t>(1 + k)] = static_cast<std::uint8_t>(u >> (24 - 8 * k));
  std::copy(avro.begin(), avro.end(), out.begin() + 5);
  return out;
}

std::shared_ptr<FakeRegistry> orders_registry() {
  auto r = std::make_shared<FakeRegistry>();
  r->schemas = {{11, kOrderV1}, {12, kOrderV2}};
  r->latest_ids = {{"orders-value", 12}};
  return r;
}

AvroFormatOptions registry_options(const std::string& mode = "FAILFAST") {
  return AvroFormatOptions::parse({{"schema.registry.url", "http://registry.invalid:8081"}, {"mode", mode}});
}

TEST(AvroValueReader, ConfluentFramingTwoWritersAgainstTheLatestSchema) {
  auto registry = orders_registry();
  AvroValueReader reader(registry_options(), "orders", registry);
  EXPECT_EQ(registry->subjects_asked, std::vector<std::string>{"orders-value"});
  EXPECT_EQ(reader.reader_schema(), kOrderV2);
  reader.append(view(framed(11, enc().l(1).s("pen").b)), "orders", 0, 10);
  reader.append(view(framed(12, enc().l(2).s("ink").l(5).b)), "orders", 0, 11);
  reader.append(view(framed(11, enc().l(3).s("cap").b)), "orders", 0, 12);
  reader.append(std::nullopt, "orders", 0, 13);  // a tombstone: a null row, not malformed
  reader.append(view(framed(12, enc().l(4).s("nib").l(-1).b)), "orders", 0, 14);
  EXPECT_EQ(registry->id_calls, (std::map<std::int32_t, int>{{11, 1}, {12, 1}}));  // cached by id
  EXPECT_EQ(reader.malformed(), 0);
  EXPECT_EQ(reader.rows(), 5);
  Decoded out;
  finish_into(reader, out);
  EXPECT_EQ(out.row(0), "{id:1,item:\"pen\",qty:1}");
  EXPECT_EQ(out.row(1), "{id:2,item:\"ink\",qty:5}");
  EXPECT_EQ(out.row(2), "{id:3,item:\"cap\",qty:1}");
  EXPECT_EQ(out.row(3), "null");  // the struct is null, and so is every column
  EXPECT_EQ(out.array().null_count, 1);
  for (std::int64_t c = 0; c < out.columns(); ++c) EXPECT_EQ(out.cell(c, 3), "null") << c;
  EXPECT_EQ(out.row(4), "{id:4,item:\"nib\",qty:-1}");

  // "subject" names another subject; "avroSchema" replaces the latest schema.
  registry->latest_ids["custom"] = 11;
  auto options = registry_options();
  options.subject = "custom";
  AvroValueReader custom(options, "orders", registry);
  EXPECT_EQ(registry->subjects_asked.back(), "custom");
  EXPECT_EQ(custom.reader_schema(), kOrderV1);
  options.avro_schema = kOrderV2;
  const auto asked = registry->subjects_asked.size();
  AvroValueReader given(options, "orders", registry);
  EXPECT_EQ(registry->subjects_asked.size(), asked);
  EXPECT_EQ(given.reader_schema(), kOrderV2);
}

TEST(AvroValueReader, UnknownIdFailFast) {
  auto registry = orders_registry();
  AvroValueReader reader(registry_options(), "orders", registry);
  try {
    reader.append(view(framed(99, enc().l(1).s("x").b)), "orders", 3, 42);
    ADD_FAILURE() << "no error";
  } catch (const AvroDecodeError& e) {
    EXPECT_EQ(e.topic(), "orders");
    EXPECT_EQ(e.partition(), 3);
    EXPECT_EQ(e.offset(), 42);
    const std::string what = e.what();
    EXPECT_TRUE(what.starts_with("Malformed records are detected in record parsing. Current parse Mode: FAILFAST."))
        << what;
    EXPECT_NE(what.find("orders-3 offset 42: schema id 99 is not in the registry"), std::string::npos) << what;
  }
  // A corrupt value of a known id fails too.
  EXPECT_THROW(reader.append(view(framed(11, enc().l(1).b)), "orders", 3, 43), AvroDecodeError);
  // A registry that cannot answer is not a malformed value.
  registry->failure_status = 500;
  try {
    reader.append(view(framed(98, enc().l(1).s("x").b)), "orders", 3, 44);
    ADD_FAILURE() << "no error";
  } catch (const SchemaRegistryError& e) {
    EXPECT_EQ(e.http_status(), 500);
  }
}

TEST(AvroValueReader, PermissiveGivesNullRowsAndCounts) {
  auto registry = orders_registry();
  AvroValueReader reader(registry_options("permissive"), "orders", registry);
  reader.append(view(framed(99, enc().l(1).s("x").b)), "orders", 3, 42);
  EXPECT_EQ(reader.malformed(), 1);
  EXPECT_EQ(reader.first_malformed(), "orders-3 offset 42: schema id 99 is not in the registry (Schema 99 not found)");
  reader.append(view(framed(99, enc().l(1).s("y").b)), "orders", 3, 43);
  EXPECT_EQ(registry->id_calls[99], 1);  // a missing id is asked once
  reader.append(view(framed(11, enc().l(7).s("ok").b)), "orders", 3, 44);
  Bytes bad_magic = framed(11, enc().l(1).s("x").b);
  bad_magic[0] = 1;
  reader.append(view(bad_magic), "orders", 3, 45);
  reader.append(view(Bytes{0, 0, 0}), "orders", 3, 46);
  reader.append(view(Bytes{}), "orders", 3, 47);
  reader.append(view(framed(12, enc().l(8).s("x").b)), "orders", 3, 48);  // truncated: no qty
  EXPECT_EQ(reader.malformed(), 6);
  EXPECT_NE(reader.first_malformed().find("offset 42"), std::string::npos);
  // A new span: the first malformed value after the mark.
  reader.mark_malformed();
  EXPECT_EQ(reader.first_malformed(), "");
  reader.append(view(Bytes{7}), "orders", 3, 49);
  reader.append(view(Bytes{8}), "orders", 3, 50);
  EXPECT_NE(reader.first_malformed().find("offset 49"), std::string::npos);
  EXPECT_EQ(reader.malformed(), 8);
  Decoded out;
  finish_into(reader, out);
  ASSERT_EQ(out.rows(), 9);
  EXPECT_EQ(out.array().null_count, 0);  // malformed rows are structs of nulls, not null rows
  for (int r = 0; r < 9; ++r) EXPECT_EQ(out.row(r), r == 2 ? "{id:7,item:\"ok\",qty:1}" : null_row(out)) << r;
}

TEST(AvroValueReader, PlainAvroWithAReaderSchema) {
  auto options = AvroFormatOptions::parse({{"jsonFormatSchema", kOrderV1}, {"avroSchema", kOrderV2}});
  AvroValueReader reader(options, "t");
  EXPECT_EQ(reader.reader_schema(), kOrderV2);
  reader.append(view(enc().l(-5).s("a").b), "t", 0, 0);
  EXPECT_THROW(reader.append(view(Bytes{0x02, 0x10, 'a'}), "t", 0, 1), AvroDecodeError);  // 8 bytes, 1 there
  Decoded out;
  finish_into(reader, out);
  EXPECT_EQ(out.row(0), "{id:-5,item:\"a\",qty:1}");
}

TEST(AvroFormatOptions, Parse) {
  const auto o = AvroFormatOptions::parse({{"mode", "Permissive"},
                                           {"schema.registry.url", "http://r:8081"},
                                           {"basic.auth.user.info", "u:p"},
                                           {"subject", "s"},
                                           {"avroSchema", "\"long\""}});
  EXPECT_TRUE(o.permissive);
  EXPECT_EQ(o.subject, "s");
  EXPECT_EQ(o.avro_schema, "\"long\"");
  EXPECT_FALSE(o.json_format_schema);
  EXPECT_EQ(o.registry, (std::map<std::string, std::string>{{"schema.registry.url", "http://r:8081"},
                                                            {"basic.auth.user.info", "u:p"}}));
  EXPECT_FALSE(AvroFormatOptions::parse({{"jsonFormatSchema", "\"int\""}}).permissive);

  // Errors of the options, from parse() or from the reader they make.
  using Options = std::map<std::string, std::string>;
  auto error_of = [](const Options& options) {
    try {
      AvroValueReader reader(AvroFormatOptions::parse(options), "t");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  const std::pair<Options, const char*> errors[] = {
      {{{"jsonFormatSchema", "\"int\""}, {"compression", "x"}}, "Avro option \"compression\" is not known"},
      {{{"jsonFormatSchema", "\"int\""}, {"mode", "DROPMALFORMED"}}, "mode: \"DROPMALFORMED\" is not supported"},
      {{{"mode", "FAILFAST"}}, "Avro values need a schema"},
      {{{"jsonFormatSchema", "\"int\""}, {"schema.registry.url", "http://r"}}, "not both"},
  };
  for (const auto& [options, message] : errors) {
    const std::string error = error_of(options);
    EXPECT_NE(error.find(message), std::string::npos) << error;
  }
  EXPECT_EQ(error_of({{"jsonFormatSchema", "\"int\""}, {"mode", "failfast"}}), "(accepted)");
}

// ---- the registry's configuration and wire format ----

TEST(ConfluentWireFormat, SchemaId) {
  using kwire::client::confluent_schema_id;
  EXPECT_EQ(confluent_schema_id(view(Bytes{0, 0, 0, 1, 2})), 258);
  EXPECT_EQ(confluent_schema_id(view(Bytes{0, 0x7f, 0xff, 0xff, 0xff, 9, 9})), INT32_MAX);
  EXPECT_EQ(confluent_schema_id(view(Bytes{0, 0x80, 0, 0, 0})), INT32_MIN);
  EXPECT_EQ(confluent_schema_id(view(Bytes{1, 0, 0, 0, 1})), std::nullopt);
  EXPECT_EQ(confluent_schema_id(view(Bytes{0, 0, 0, 1})), std::nullopt);
  EXPECT_EQ(confluent_schema_id(view(Bytes{})), std::nullopt);
}

TEST(SchemaRegistryConfig, FromProperties) {
  const auto c = SchemaRegistryConfig::from_properties({{"schema.registry.url", "https://a:1,https://b:2"},
                                                        {"basic.auth.user.info", "user:pw"},
                                                        {"schema.registry.ssl.ca.location", "/ca.pem"},
                                                        {"schema.registry.request.timeout.ms", "1500"},
                                                        {"unrelated.key", "x"}});
  EXPECT_EQ(c.url, "https://a:1,https://b:2");
  EXPECT_EQ(c.user_info, "user:pw");
  EXPECT_EQ(c.ca_location, "/ca.pem");
  EXPECT_TRUE(c.verify_host);
  EXPECT_EQ(c.request_timeout_ms, 1500);

  const auto defaults = SchemaRegistryConfig::from_properties({{"schema.registry.url", "http://r"}});
  EXPECT_EQ(defaults.user_info, std::nullopt);
  EXPECT_EQ(defaults.request_timeout_ms, 30000);
  // URL: the credentials are in the URL, basic.auth.user.info is not used.
  const auto in_url = SchemaRegistryConfig::from_properties({{"schema.registry.url", "http://u:p@r"},
                                                             {"basic.auth.credentials.source", "URL"},
                                                             {"basic.auth.user.info", "ignored:x"}});
  EXPECT_EQ(in_url.user_info, std::nullopt);
  EXPECT_FALSE(SchemaRegistryConfig::from_properties({{"schema.registry.url", "https://r"},
                                                      {"schema.registry.ssl.endpoint.identification.algorithm", ""}})
                   .verify_host);

  using Props = std::map<std::string, std::string>;
  for (const Props& bad : {Props{}, Props{{"schema.registry.url", ""}},
                           Props{{"schema.registry.url", "http://r"}, {"basic.auth.credentials.source", "SASL"}},
                           Props{{"schema.registry.url", "http://r"}, {"schema.registry.request.timeout.ms", "soon"}},
                           Props{{"schema.registry.url", "http://r"}, {"schema.registry.request.timeout.ms", "0"}},
                           Props{{"schema.registry.url", "http://r"},
                                 {"schema.registry.ssl.endpoint.identification.algorithm", "none"}}}) {
    EXPECT_THROW((void)SchemaRegistryConfig::from_properties(bad), ConfigError)
        << (bad.empty() ? "{}" : bad.rbegin()->second);
  }
}

}  // namespace
