// ApiVersions (key 18), versions 0-5, flexible from v3.
// Source: the protocol guide and Kafka's ApiVersionsRequest/Response.json.
// v5 (Kafka 4.4, KIP-1242) lets the client name the cluster id and node id it
// means to reach; a broker that is not that node answers REBOOTSTRAP_REQUIRED
// (129). Both are optional (null / -1: not checked). v4 only changed what the
// broker reports (features whose minimum version is 0 are listed).
// The response header is always v0 (see header.hpp). A broker that does not
// support the requested version answers UNSUPPORTED_VERSION (35) in a v0-shaped
// body listing its ApiVersions range, so a client can retry with v0.
#pragma once

#include <optional>
#include <string>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct ApiVersionsRequest {
  static constexpr ApiKey api_key = ApiKey::api_versions;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 3;

  std::string client_software_name;       // v3+ (KIP-511)
  std::string client_software_version;    // v3+
  std::optional<std::string> cluster_id;  // v5+ (KIP-1242); null = not checked
  std::int32_t node_id = -1;              // v5+; -1 = not checked
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(3, client_software_name);
    v.since(3, client_software_version);
    v.since(5, cluster_id);
    v.since(5, node_id);
  }
  friend bool operator==(const ApiVersionsRequest&, const ApiVersionsRequest&) = default;
};

struct ApiVersionsResponse {
  static constexpr ApiKey api_key = ApiKey::api_versions;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 3;

  struct ApiVersion {
    std::int16_t api_key = 0;
    std::int16_t min_version = 0;
    std::int16_t max_version = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(api_key);
      v(min_version);
      v(max_version);
    }
    friend bool operator==(const ApiVersion&, const ApiVersion&) = default;
  };
  struct SupportedFeatureKey {
    std::string name;
    std::int16_t min_version = 0;
    std::int16_t max_version = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(min_version);
      v(max_version);
    }
    friend bool operator==(const SupportedFeatureKey&, const SupportedFeatureKey&) = default;
  };
  struct FinalizedFeatureKey {
    std::string name;
    std::int16_t max_version_level = 0;
    std::int16_t min_version_level = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(max_version_level);
      v(min_version_level);
    }
    friend bool operator==(const FinalizedFeatureKey&, const FinalizedFeatureKey&) = default;
  };

  std::int16_t error_code = 0;
  std::vector<ApiVersion> api_keys;
  std::int32_t throttle_time_ms = 0;                    // v1+
  std::vector<SupportedFeatureKey> supported_features;  // tag 0, v3+
  std::int64_t finalized_features_epoch = -1;           // tag 1, v3+
  std::vector<FinalizedFeatureKey> finalized_features;  // tag 2, v3+
  bool zk_migration_ready = false;                      // tag 3, v3+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(error_code);
    v(api_keys);
    v.since(1, throttle_time_ms);
    v.tagged(0, 3, supported_features);
    v.tagged(1, 3, finalized_features_epoch, std::int64_t{-1});
    v.tagged(2, 3, finalized_features);
    v.tagged(3, 3, zk_migration_ready);
  }
  friend bool operator==(const ApiVersionsResponse&, const ApiVersionsResponse&) = default;
};

}  // namespace kwire::protocol
