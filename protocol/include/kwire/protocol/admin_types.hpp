// Code values the ACL and leader-election APIs carry, with Kafka's names for
// them: ResourceType, PatternType, AclOperation and AclPermissionType (the
// org.apache.kafka.common.resource / .acl enums, KIP-140 and KIP-290) and
// ElectionType (KIP-460). The wire carries each as an int8.
//
// The enumerators are Kafka's names in lower case (AclOperation::cluster_action
// is CLUSTER_ACTION); DELETE is `delete_` as `delete` is a C++ keyword.
// UNKNOWN is what a newer broker's code that this list does not know reads as;
// ANY (and MATCH for patterns) exist in filters only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kwire::protocol {

/// Kafka's ResourceType.
enum class AclResourceType : std::int8_t {
  unknown = 0,
  any = 1,
  topic = 2,
  group = 3,
  cluster = 4,
  transactional_id = 5,
  delegation_token = 6,
  user = 7,
};

/// Kafka's PatternType (KIP-290; ACL API v1+). v0 knows literal names only.
enum class AclPatternType : std::int8_t {
  unknown = 0,
  any = 1,    // filters: literal or prefixed, the name compared as given
  match = 2,  // filters: every pattern that would match the name
  literal = 3,
  prefixed = 4,
};

/// Kafka's AclOperation.
enum class AclOperation : std::int8_t {
  unknown = 0,
  any = 1,
  all = 2,
  read = 3,
  write = 4,
  create = 5,
  delete_ = 6,
  alter = 7,
  describe = 8,
  cluster_action = 9,
  describe_configs = 10,
  alter_configs = 11,
  idempotent_write = 12,
  create_tokens = 13,
  describe_tokens = 14,
  two_phase_commit = 15,  // KIP-939
};

/// Kafka's AclPermissionType.
enum class AclPermissionType : std::int8_t { unknown = 0, any = 1, deny = 2, allow = 3 };

/// Kafka's ElectionType (ElectLeaders v1+; v0 is always preferred).
enum class ElectionType : std::int8_t { preferred = 0, unclean = 1 };

/// Kafka's upper-case name of a code ("TOPIC", "PREFIXED", "READ", "ALLOW",
/// "PREFERRED"); a code outside the list reads "UNKNOWN".
std::string_view acl_resource_type_name(std::int8_t code) noexcept;
std::string_view acl_pattern_type_name(std::int8_t code) noexcept;
std::string_view acl_operation_name(std::int8_t code) noexcept;
std::string_view acl_permission_type_name(std::int8_t code) noexcept;
std::string_view election_type_name(std::int8_t code) noexcept;

/// The code of a name, in any case, with '-' or '_' between words as Kafka's
/// tools accept them ("read", "Describe-Configs", "IdempotentWrite",
/// "transactional_id"); nullopt for a name not in the list (UNKNOWN included).
std::optional<AclResourceType> parse_acl_resource_type(std::string_view name);
std::optional<AclPatternType> parse_acl_pattern_type(std::string_view name);
std::optional<AclOperation> parse_acl_operation(std::string_view name);
std::optional<AclPermissionType> parse_acl_permission_type(std::string_view name);
std::optional<ElectionType> parse_election_type(std::string_view name);

}  // namespace kwire::protocol
