// A client of a Schema Registry speaking Confluent's REST API (the subset
// serializers and deserializers use), and the Confluent wire format of a
// registered value.
//
// Confluent's wire format: byte 0 is the magic byte 0, bytes 1-4 the schema
// id (big-endian int32), then the encoded value (for Protobuf, a list of
// message indexes comes first).
//
// Configuration, under the names Confluent's serializers use:
//   schema.registry.url                    comma-separated http:// or https://
//                                          base URLs, tried in order
//   basic.auth.credentials.source          USER_INFO (default when
//                                          basic.auth.user.info is set) or URL
//                                          (user:password@ in the URL)
//   basic.auth.user.info                   "user:password"
//   schema.registry.ssl.ca.location        CA file for https (default: the
//                                          system's)
//   schema.registry.ssl.endpoint.identification.algorithm
//                                          "https" (default: host name checked)
//                                          or "" (not checked)
//   schema.registry.request.timeout.ms     per request, default 30000 ms
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/client/errors.hpp"

namespace kwire::client {

/// A registry request that failed: the registry answered with an error
/// (http_status and Confluent's error_code, e.g. 404 / 40403 "Schema not
/// found"), or could not be reached (http_status 0; names the URL).
class SchemaRegistryError : public ClientError {
 public:
  SchemaRegistryError(const std::string& what, int http_status, int error_code)
      : ClientError(what), http_status_(http_status), error_code_(error_code) {}
  int http_status() const noexcept { return http_status_; }
  int error_code() const noexcept { return error_code_; }

 private:
  int http_status_;
  int error_code_;
};

/// A schema's reference to another (Protobuf imports, Avro named types):
/// the import name and the subject version that holds it.
struct SchemaReference {
  std::string name;
  std::string subject;
  std::int32_t version = 0;
};

struct RegisteredSchema {
  std::int32_t id = 0;
  std::int32_t version = 0;  // 0 when looked up by id
  std::string subject;       // empty when looked up by id
  std::string schema;        // the schema text (Avro JSON, .proto text)
  std::string schema_type = "AVRO";
  std::vector<SchemaReference> references;
};

/// What a decoder needs of a registry; cached by the implementation.
class SchemaRegistry {
 public:
  virtual ~SchemaRegistry() = default;
  /// GET /schemas/ids/{id}. Throws SchemaRegistryError.
  virtual RegisteredSchema schema_by_id(std::int32_t id) = 0;
  /// GET /subjects/{subject}/versions/latest. Throws SchemaRegistryError.
  virtual RegisteredSchema latest(const std::string& subject) = 0;
  /// POST /subjects/{subject}/versions: registers (or finds) a schema, with
  /// the references its imports name, and returns its id. Throws
  /// SchemaRegistryError.
  virtual std::int32_t register_schema(const std::string& subject, const std::string& schema,
                                       const std::string& schema_type = "AVRO",
                                       const std::vector<SchemaReference>& references = {}) = 0;
  /// GET /subjects/{subject}/versions/{version}. The default throws
  /// SchemaRegistryError (for registries that cannot).
  virtual RegisteredSchema schema_version(const std::string& subject, std::int32_t version);
  /// POST /subjects/{subject}: the id of a schema registered under the
  /// subject (SchemaRegistryError 404 when it is not). The default throws
  /// SchemaRegistryError (for registries that cannot look up).
  virtual std::int32_t lookup_schema(const std::string& subject, const std::string& schema,
                                     const std::string& schema_type = "AVRO",
                                     const std::vector<SchemaReference>& references = {});
};

struct SchemaRegistryConfig {
  std::string url;
  std::optional<std::string> user_info;    // "user:password"
  std::optional<std::string> ca_location;  // PEM file
  bool verify_host = true;
  std::int32_t request_timeout_ms = 30000;

  /// From the properties above (keys not named here are ignored). Throws
  /// ConfigError for a missing URL or a bad value.
  static SchemaRegistryConfig from_properties(const std::map<std::string, std::string>& props);
};

/// An HTTP(S) client of the registry. Schemas by id are cached for the
/// object's life (an id never changes); latest() asks every time. Calls are
/// serialised (safe from several threads).
std::shared_ptr<SchemaRegistry> make_schema_registry(const SchemaRegistryConfig& config);

/// The schema id of a value in Confluent's wire format; nullopt when the
/// value is shorter than 5 bytes or its magic byte is not 0.
std::optional<std::int32_t> confluent_schema_id(std::span<const std::uint8_t> value);
/// The 5 bytes Confluent's wire format puts before a value: magic byte 0
/// and `id`, big-endian.
std::string confluent_header(std::int32_t id);

}  // namespace kwire::client
