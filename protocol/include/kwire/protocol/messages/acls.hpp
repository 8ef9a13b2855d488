// Access control lists: DescribeAcls (key 29), CreateAcls (key 30) and
// DeleteAcls (key 31), each v0-3, flexible from v2. Source: Kafka's
// DescribeAcls*, CreateAcls*, DeleteAcls* .json specs (4.4.0, and 3.9.1 for
// v0, which Kafka 4.0 removed, KIP-896).
//
// An ACL binding is a resource pattern (resource type, name, pattern type)
// and an entry (principal "User:alice", host "*" or an address, operation,
// ALLOW or DENY); the codes are those of admin_types.hpp. A filter has the
// same fields, where ANY (and a null name, principal or host) matches every
// value and pattern type MATCH matches every literal, prefixed or wildcard
// pattern that applies to the name.
//
// Versions: v1 adds the pattern type (KIP-290: LITERAL or PREFIXED; v0
// bindings are literal, which is what a v0 decode leaves in the field), v2 is
// the first flexible version (KIP-482), v3 admits the USER resource type.
// DescribeAcls answers one top-level error; CreateAcls one result per
// creation, in order; DeleteAcls one result per filter, with every binding it
// removed. A broker without an authorizer answers SECURITY_DISABLED.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/admin_types.hpp"
#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

inline constexpr std::int8_t kLiteralPattern = static_cast<std::int8_t>(AclPatternType::literal);

struct DescribeAclsRequest {
  static constexpr ApiKey api_key = ApiKey::describe_acls;
  static constexpr std::int16_t min_version = 0, max_version = 3, flexible_since = 2;

  std::int8_t resource_type_filter = 1;               // AclResourceType; 1 ANY
  std::optional<std::string> resource_name_filter;    // null: any name
  std::int8_t pattern_type_filter = kLiteralPattern;  // v1+: AclPatternType
  std::optional<std::string> principal_filter;        // null: any principal
  std::optional<std::string> host_filter;             // null: any host
  std::int8_t operation = 1;                          // AclOperation; 1 ANY
  std::int8_t permission_type = 1;                    // AclPermissionType; 1 ANY
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(resource_type_filter);
    v(resource_name_filter);
    v.since(1, pattern_type_filter);
    v(principal_filter);
    v(host_filter);
    v(operation);
    v(permission_type);
  }
  friend bool operator==(const DescribeAclsRequest&, const DescribeAclsRequest&) = default;
};

struct DescribeAclsResponse {
  static constexpr ApiKey api_key = ApiKey::describe_acls;
  static constexpr std::int16_t min_version = 0, max_version = 3, flexible_since = 2;

  struct AclDescription {
    std::string principal;
    std::string host;
    std::int8_t operation = 0;
    std::int8_t permission_type = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(principal);
      v(host);
      v(operation);
      v(permission_type);
    }
    friend bool operator==(const AclDescription&, const AclDescription&) = default;
  };

  struct DescribeAclsResource {
    std::int8_t resource_type = 0;
    std::string resource_name;
    std::int8_t pattern_type = kLiteralPattern;  // v1+
    std::vector<AclDescription> acls;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(resource_type);
      v(resource_name);
      v.since(1, pattern_type);
      v(acls);
    }
    friend bool operator==(const DescribeAclsResource&, const DescribeAclsResource&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::int16_t error_code = 0;
  std::optional<std::string> error_message;
  std::vector<DescribeAclsResource> resources;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(error_code);
    v(error_message);
    v(resources);
  }
  friend bool operator==(const DescribeAclsResponse&, const DescribeAclsResponse&) = default;
};

struct CreateAclsRequest {
  static constexpr ApiKey api_key = ApiKey::create_acls;
  static constexpr std::int16_t min_version = 0, max_version = 3, flexible_since = 2;

  struct AclCreation {
    std::int8_t resource_type = 0;
    std::string resource_name;
    std::int8_t resource_pattern_type = kLiteralPattern;  // v1+
    std::string principal;
    std::string host;
    std::int8_t operation = 0;
    std::int8_t permission_type = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(resource_type);
      v(resource_name);
      v.since(1, resource_pattern_type);
      v(principal);
      v(host);
      v(operation);
      v(permission_type);
    }
    friend bool operator==(const AclCreation&, const AclCreation&) = default;
  };

  std::vector<AclCreation> creations;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(creations);
  }
  friend bool operator==(const CreateAclsRequest&, const CreateAclsRequest&) = default;
};

struct CreateAclsResponse {
  static constexpr ApiKey api_key = ApiKey::create_acls;
  static constexpr std::int16_t min_version = 0, max_version = 3, flexible_since = 2;

  struct AclCreationResult {
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(error_code);
      v(error_message);
    }
    friend bool operator==(const AclCreationResult&, const AclCreationResult&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::vector<AclCreationResult> results;  // one per creation, in order
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(results);
  }
  friend bool operator==(const CreateAclsResponse&, const CreateAclsResponse&) = default;
};

struct DeleteAclsRequest {
  static constexpr ApiKey api_key = ApiKey::delete_acls;
  static constexpr std::int16_t min_version = 0, max_version = 3, flexible_since = 2;

  struct DeleteAclsFilter {
    std::int8_t resource_type_filter = 1;
    std::optional<std::string> resource_name_filter;
    std::int8_t pattern_type_filter = kLiteralPattern;  // v1+
    std::optional<std::string> principal_filter;
    std::optional<std::string> host_filter;
    std::int8_t operation = 1;
    std::int8_t permission_type = 1;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(resource_type_filter);
      v(resource_name_filter);
      v.since(1, pattern_type_filter);
      v(principal_filter);
      v(host_filter);
      v(operation);
      v(permission_type);
    }
    friend bool operator==(const DeleteAclsFilter&, const DeleteAclsFilter&) = default;
  };

  std::vector<DeleteAclsFilter> filters;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(filters);
  }
  friend bool operator==(const DeleteAclsRequest&, const DeleteAclsRequest&) = default;
};

struct DeleteAclsResponse {
  static constexpr ApiKey api_key = ApiKey::delete_acls;
  static constexpr std::int16_t min_version = 0, max_version = 3, flexible_since = 2;

  struct DeleteAclsMatchingAcl {
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    std::int8_t resource_type = 0;
    std::string resource_name;
    std::int8_t pattern_type = kLiteralPattern;  // v1+
    std::string principal;
    std::string host;
    std::int8_t operation = 0;
    std::int8_t permission_type = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(error_code);
      v(error_message);
      v(resource_type);
      v(resource_name);
      v.since(1, pattern_type);
      v(principal);
      v(host);
      v(operation);
      v(permission_type);
    }
    friend bool operator==(const DeleteAclsMatchingAcl&, const DeleteAclsMatchingAcl&) = default;
  };

  struct DeleteAclsFilterResult {
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    std::vector<DeleteAclsMatchingAcl> matching_acls;  // the bindings this filter removed
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(error_code);
      v(error_message);
      v(matching_acls);
    }
    friend bool operator==(const DeleteAclsFilterResult&, const DeleteAclsFilterResult&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::vector<DeleteAclsFilterResult> filter_results;  // one per filter, in order
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(filter_results);
  }
  friend bool operator==(const DeleteAclsResponse&, const DeleteAclsResponse&) = default;
};

}  // namespace kwire::protocol
