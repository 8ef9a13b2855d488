#include "kwire/protocol/admin_types.hpp"

#include <array>
#include <cctype>

namespace kwire::protocol {

namespace {

constexpr std::array<std::string_view, 8> kResourceTypes = {
    "UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"};
constexpr std::array<std::string_view, 5> kPatternTypes = {"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"};
constexpr std::array<std::string_view, 16> kOperations = {"UNKNOWN",
                                                          "ANY",
                                                          "ALL",
                                                          "READ",
                                                          "WRITE",
                                                          "CREATE",
                                                          "DELETE",
                                                          "ALTER",
                                                          "DESCRIBE",
                                                          "CLUSTER_ACTION",
                                                          "DESCRIBE_CONFIGS",
                                                          "ALTER_CONFIGS",
                                                          "IDEMPOTENT_WRITE",
                                                          "CREATE_TOKENS",
                                                          "DESCRIBE_TOKENS",
                                                          "TWO_PHASE_COMMIT"};
constexpr std::array<std::string_view, 4> kPermissionTypes = {"UNKNOWN", "ANY", "DENY", "ALLOW"};
constexpr std::array<std::string_view, 2> kElectionTypes = {"PREFERRED", "UNCLEAN"};

template <std::size_t N>
std::string_view name_in(const std::array<std::string_view, N>& names, std::int8_t code, std::string_view fallback) {
  if (code < 0 || static_cast<std::size_t>(code) >= N) return fallback;
  return names[static_cast<std::size_t>(code)];
}

// Upper case without separators: "describe-configs", "DescribeConfigs" and
// "DESCRIBE_CONFIGS" all become "DESCRIBECONFIGS".
std::string folded(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_' && c != '-') out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// The index of `name` in `names` (from `first`, skipping UNKNOWN), or -1.
template <std::size_t N>
int index_of(const std::array<std::string_view, N>& names, std::string_view name, std::size_t first) {
  const std::string want = folded(name);
  if (want.empty()) return -1;
  for (std::size_t i = first; i < N; ++i)
    if (folded(names[i]) == want) return static_cast<int>(i);
  return -1;
}

template <class E, std::size_t N>
std::optional<E> parse_in(const std::array<std::string_view, N>& names, std::string_view name, std::size_t first) {
  const int i = index_of(names, name, first);
  if (i < 0) return std::nullopt;
  return static_cast<E>(i);
}

}  // namespace

std::string_view acl_resource_type_name(std::int8_t code) noexcept { return name_in(kResourceTypes, code, "UNKNOWN"); }
std::string_view acl_pattern_type_name(std::int8_t code) noexcept { return name_in(kPatternTypes, code, "UNKNOWN"); }
std::string_view acl_operation_name(std::int8_t code) noexcept { return name_in(kOperations, code, "UNKNOWN"); }
std::string_view acl_permission_type_name(std::int8_t code) noexcept {
  return name_in(kPermissionTypes, code, "UNKNOWN");
}
std::string_view election_type_name(std::int8_t code) noexcept { return name_in(kElectionTypes, code, "UNKNOWN"); }

std::optional<AclResourceType> parse_acl_resource_type(std::string_view name) {
  return parse_in<AclResourceType>(kResourceTypes, name, 1);
}
std::optional<AclPatternType> parse_acl_pattern_type(std::string_view name) {
  return parse_in<AclPatternType>(kPatternTypes, name, 1);
}
std::optional<AclOperation> parse_acl_operation(std::string_view name) {
  return parse_in<AclOperation>(kOperations, name, 1);
}
std::optional<AclPermissionType> parse_acl_permission_type(std::string_view name) {
  return parse_in<AclPermissionType>(kPermissionTypes, name, 1);
}
std::optional<ElectionType> parse_election_type(std::string_view name) {
  return parse_in<ElectionType>(kElectionTypes, name, 0);
}

}  // namespace kwire::protocol
